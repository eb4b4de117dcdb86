import Display
import Foundation
import Playback
import Synchronization
import Testing

/// `auto` and `kms` at start on a boot whose GPU driver loads late: the wait for a display card,
/// with a fake card that appears on a virtual-time script.
@Suite("Waiting for a display card at start (fake card, virtual time)")
struct CardWaitTests {
    /// A card that exists from `appears` (a uevent then, when `announced`) and may be opened from
    /// `usable` (udev's permissions come later, without a uevent of their own).
    struct Script {
        let time = VirtualTime()
        let hotplug: FakeHotplug
        let probe: CardProbe
        let t0: Int64

        init(appears: Double?, usable: Double? = nil, announced: Bool = true, hardware: DisplayHardware = .controllers(["0000:00:02.0"])) {
            let time = self.time
            let t0 = time.now()
            self.t0 = t0
            let appearsAt = appears.map { t0 + Int64($0 * 1e9) } ?? .max
            let usableAt = (usable ?? appears).map { t0 + Int64($0 * 1e9) } ?? .max
            hotplug = FakeHotplug(time: time)
            if announced, appears != nil { hotplug.notices = [appearsAt] }
            probe = CardProbe(connectors: { time.now() >= appearsAt ? [ConnectedConnector(card: "card0", connector: "HDMI-A-1")] : [] },
                              cards: { time.now() >= appearsAt ? ["card0"] : [] },
                              usable: { _ in time.now() >= usableAt }, hardware: { hardware })
        }

        var elapsed: Double { Double(time.now() - t0) / 1e9 }
    }

    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger(level: .debug) { [self] line in lines.withLock { $0.append(line) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("a card announced by a uevent is taken at that moment")
    func cardAnnouncedByUevent() {
        let script = Script(appears: 3.2)
        let (cards, waited) = waitForDisplayCard(limit: 10, probe: script.probe, events: script.hotplug, time: script.time)
        #expect(cards == ["card0"])
        #expect(script.elapsed == 3.2 && abs(waited - 3.2) < 1e-9)
    }

    @Test("a card that becomes usable without a uevent is found at the next recheck (0.25 s)")
    func cardUsableLater() {
        let script = Script(appears: 1, usable: 4.1)
        let (cards, _) = waitForDisplayCard(limit: 10, probe: script.probe, events: script.hotplug, time: script.time)
        #expect(cards == ["card0"])
        #expect(abs(script.elapsed - 4.25) < 1e-9, "\(script.elapsed)")
        let silent = Script(appears: 2.6, announced: false)
        #expect(waitForDisplayCard(limit: 10, probe: silent.probe, events: silent.hotplug, time: silent.time).cards == ["card0"])
        #expect(abs(silent.elapsed - 2.75) < 1e-9, "\(silent.elapsed)")
    }

    @Test("no card: the wait ends at its limit; a stop ends it within a recheck")
    func noCard() {
        let script = Script(appears: nil)
        let (cards, waited) = waitForDisplayCard(limit: 10, probe: script.probe, events: script.hotplug, time: script.time)
        #expect(cards.isEmpty && script.elapsed == 10 && waited == 10)
        let late = Script(appears: 10.5)
        #expect(waitForDisplayCard(limit: 10, probe: late.probe, events: late.hotplug, time: late.time).cards.isEmpty)
        #expect(late.elapsed == 10)
        let stopped = Script(appears: nil)
        let stopAt = stopped.t0 + 1_000_000_000
        _ = waitForDisplayCard(limit: 10, probe: stopped.probe, events: stopped.hotplug, time: stopped.time,
                               shouldContinue: { stopped.time.now() < stopAt })
        #expect(stopped.elapsed >= 1 && stopped.elapsed <= 1.25)
        // Limits from outside are clamped: never longer than longestCardWait, nothing for NaN.
        for (limit, expected) in [(1e308, longestCardWait), (-5, 0), (.nan, 0), (.infinity, 0)] {
            let none = Script(appears: nil)
            _ = waitForDisplayCard(limit: limit, probe: none.probe, events: none.hotplug, time: none.time)
            #expect(none.elapsed == expected, "limit \(limit)")
        }
    }

    @Test("auto waits for a late card and drives it; without one it plays headless, saying so")
    func autoSelection() throws {
        let late = Script(appears: 2)
        let log = Lines()
        let (kind, reason) = try selectOutput(.auto, waitForCard: 10, logger: log.logger, probe: late.probe,
                                              events: { late.hotplug }, time: late.time)
        #expect(kind == .kms && reason == "connected card0/HDMI-A-1")
        #expect(late.elapsed == 2)
        #expect(log.all.contains { $0.hasPrefix("level=info msg=\"waiting for a display card\"") && $0.contains("limit=\"10.0 s\"") }, "\(log.all)")
        #expect(log.all.contains { $0.hasPrefix("level=info msg=\"display card found\" cards=card0 waited=\"2.0 s\"") }, "\(log.all)")

        let none = Script(appears: nil)
        let quiet = Lines()
        let (headless, why) = try selectOutput(.auto, waitForCard: 10, logger: quiet.logger, probe: none.probe,
                                               events: { none.hotplug }, time: none.time)
        #expect(headless == .headless && none.elapsed == 10)
        #expect(why == "no DRM device that can drive a display; none appeared within 10.0 s (display.waitForCard): headless until restarted")
        #expect(quiet.all.contains { $0.hasPrefix("level=warning msg=\"no display card; playing headless\"") }, "\(quiet.all)")

        // Stopped (SIGTERM) while waiting: it ends within a recheck, and says nothing of playing headless.
        let stopping = Script(appears: nil)
        let stoppedLog = Lines()
        let stopAt = stopping.t0 + 2_000_000_000
        #expect(try selectOutput(.auto, waitForCard: 10, logger: stoppedLog.logger, probe: stopping.probe, events: { stopping.hotplug },
                                 time: stopping.time, shouldContinue: { stopping.time.now() < stopAt }).0 == .headless)
        #expect(stopping.elapsed <= 2.25 && !stoppedLog.all.contains { $0.contains("playing headless") }, "\(stoppedLog.all)")

        // A card there, but udev has not yet let this user open it: waited for as well.
        let locked = Script(appears: 0, usable: 1.5, announced: false)
        #expect(try selectOutput(.auto, waitForCard: 10, logger: Lines().logger, probe: locked.probe,
                                 events: { locked.hotplug }, time: locked.time).0 == .kms)
        #expect(locked.elapsed == 1.5)
    }

    @Test("kms waits too, then fails naming the wait; headless, a card already there, or waitForCard 0 do not wait")
    func otherSelections() throws {
        let none = Script(appears: nil)
        let error = #expect(throws: OutputUnavailable.self) {
            try selectOutput(.kms, waitForCard: 3, logger: Lines().logger, probe: none.probe, events: { none.hotplug }, time: none.time)
        }
        #expect(error?.description.hasSuffix("(waited 3.0 s for one)") == true, "\(String(describing: error))")
        #expect(none.elapsed == 3)

        let late = Script(appears: 0.5)
        #expect(try selectOutput(.kms, waitForCard: 3, logger: Lines().logger, probe: late.probe, events: { late.hotplug },
                                 time: late.time).0 == .kms)
        #expect(late.elapsed == 0.5)

        for (requested, limit, appears) in [(OutputKind.headless, 10.0, nil), (.auto, 10, 0), (.auto, 0, nil)] as [(OutputKind, Double, Double?)] {
            let script = Script(appears: appears)
            let log = Lines()
            var made = false
            _ = try selectOutput(requested, waitForCard: limit, logger: log.logger, probe: script.probe,
                                 events: { made = true; return script.hotplug }, time: script.time)
            #expect(script.elapsed == 0 && !made && log.all.isEmpty, "\(requested) \(limit) \(String(describing: appears))")
        }
    }

    @Test("no display controller at all (a server, a VM without a GPU): auto plays headless at once; kms still waits")
    func noDisplayController() throws {
        let server = Script(appears: nil, hardware: .none)
        let log = Lines()
        let (kind, why) = try selectOutput(.auto, waitForCard: 10, logger: log.logger, probe: server.probe,
                                           events: { server.hotplug }, time: server.time)
        #expect(kind == .headless && server.elapsed == 0)
        #expect(why.hasPrefix("no display controller on this machine"), "\(why)")
        #expect(log.all.contains { $0.contains("no display card can appear") } && !log.all.contains { $0.contains("msg=\"waiting") }, "\(log.all)")
        // A board with a device tree may have a platform controller whose driver loads late: waited for.
        let board = Script(appears: 1.5, hardware: .unknown("a device tree"))
        #expect(try selectOutput(.auto, waitForCard: 10, logger: Lines().logger, probe: board.probe, events: { board.hotplug },
                                 time: board.time).0 == .kms && board.elapsed == 1.5)
        // Asked for KMS (a USB display adapter has no PCI display class): the wait stays.
        let usb = Script(appears: nil, hardware: .none)
        #expect(throws: OutputUnavailable.self) {
            try selectOutput(.kms, waitForCard: 2, logger: Lines().logger, probe: usb.probe, events: { usb.hotplug }, time: usb.time)
        }
        #expect(usb.elapsed == 2)
    }

    @Test("display hardware is read from PCI classes and the device tree in sysfs")
    func displayHardwareFromSysfs() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sysfs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        func device(_ name: String, _ pciClass: String) throws {
            try FileManager.default.createDirectory(atPath: "\(root)/bus/pci/devices/\(name)", withIntermediateDirectories: true)
            try "\(pciClass)\n".write(toFile: "\(root)/bus/pci/devices/\(name)/class", atomically: true, encoding: .utf8)
        }
        #expect(displayHardware(sysfs: root) == .none)
        try device("0000:00:03.0", "0x020000")   // network
        try device("0000:00:1f.0", "0x060100")   // bridge
        #expect(displayHardware(sysfs: root) == .none)
        try device("0000:00:02.0", "0x030000")   // VGA
        #expect(displayHardware(sysfs: root) == .controllers(["0000:00:02.0"]))
        try FileManager.default.removeItem(atPath: "\(root)/bus/pci/devices/0000:00:02.0")
        try FileManager.default.createDirectory(atPath: "\(root)/firmware/devicetree", withIntermediateDirectories: true)
        #expect(displayHardware(sysfs: root) == .unknown("a device tree (platform display controllers)"))
    }

    @Test("a card's uevents wake the wait: SUBSYSTEM=drm of any action, not only display hotplugs")
    func drmDeviceUevents() {
        func uevent(_ fields: [String]) -> [UInt8] { fields.flatMap { Array($0.utf8) + [0] } }
        let add = uevent(["add@/devices/pci0000:00/0000:00:01.0/drm/card0", "ACTION=add", "DEVPATH=/devices/pci0000:00/0000:00:01.0/drm/card0",
                          "SUBSYSTEM=drm", "DEVNAME=dri/card0", "DEVTYPE=drm_minor", "MAJOR=226", "MINOR=0"])
        #expect(isDRMDeviceEvent(uevent: add))
        #expect(!isDRMHotplug(uevent: add))
        #expect(!isDRMDeviceEvent(uevent: uevent(["add@/devices/virtual/input/input3", "ACTION=add", "SUBSYSTEM=input"])))
        #expect(isDRMDeviceEvent(uevent: uevent(["change@/devices/x/drm/card0", "ACTION=change", "SUBSYSTEM=drm", "HOTPLUG=1"])))
    }
}
