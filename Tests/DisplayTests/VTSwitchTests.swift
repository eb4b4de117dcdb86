@testable import Display
import Foundation
import Playback
import Testing

/// A card whose DRM master calls are recorded (with the terminal's acknowledgements, in order).
private final class FakeMaster: DRMMasterControl {
    var calls: [String] = []
    var claimedCRTCs = 0
    var refuseSetMaster = false
    func dropMaster() throws { calls.append("drop master") }
    func setMaster() throws {
        if refuseSetMaster { throw DRMError(call: "drmSetMaster", errno: EBUSY) }
        calls.append("set master")
    }
}

private final class FakeTerminal: VTAcknowledging {
    let master: FakeMaster
    init(master: FakeMaster) { self.master = master }
    func acknowledgeRelease() throws { master.calls.append("ack release") }
    func acknowledgeAcquire() throws { master.calls.append("ack acquire") }
}

/// Signals handed to the switcher one batch per call.
private final class SignalScript: @unchecked Sendable {
    var queued: [VTSignal] = []
    func take() -> [VTSignal] {
        defer { queued = [] }
        return queued
    }
}

private final class CountingHotplug: HotplugEvents {
    var waited: [Double] = []
    func wait(timeout: Double) -> Bool {
        waited.append(timeout)
        return false
    }
}

@Suite("VT switching")
struct VTSwitchTests {
    private func rig() -> (VTSwitcher, FakeMaster, SignalScript) {
        let master = FakeMaster()
        let script = SignalScript()
        let switcher = VTSwitcher(name: "tty1", terminal: FakeTerminal(master: master), signals: { script.take() },
                                  logger: Logger(level: .error) { _ in })
        return (switcher, master, script)
    }

    @Test("a switch away lets every head go, then drops master and acknowledges; the return takes master back")
    func releaseAndAcquire() {
        let (switcher, master, script) = rig()
        master.claimedCRTCs = 1
        #expect(switcher.claim(master) == nil, "in front: the display may be used")
        #expect(switcher.releaseRequested() == nil)

        script.queued = [.release]
        #expect(switcher.releaseRequested() == "tty1 is being switched away", "a presenting head must go")
        // A head still drives its CRTC: nothing is released yet.
        #expect(switcher.claim(master)?.contains("letting go") == true)
        #expect(master.calls.isEmpty)

        master.claimedCRTCs = 0
        #expect(switcher.claim(master) == "tty1 is in the background (VT switched away)")
        #expect(master.calls == ["drop master", "ack release"], "master is dropped before the switch goes on")
        #expect(switcher.claim(master) != nil, "still in the background")
        #expect(switcher.releaseRequested() == nil)
        #expect(master.calls.count == 2, "released once")

        script.queued = [.acquire]
        #expect(switcher.claim(master) == nil, "in front again")
        #expect(master.calls == ["drop master", "ack release", "ack acquire", "set master"])
        #expect(switcher.claim(master) == nil)
        #expect(master.calls.count == 4, "master taken back once")
    }

    @Test("master that cannot be taken back keeps the display waiting, and is tried again")
    func setMasterRefused() {
        let (switcher, master, script) = rig()
        script.queued = [.release]
        _ = switcher.claim(master)
        script.queued = [.acquire]
        master.refuseSetMaster = true
        let why = switcher.claim(master)
        #expect(why?.contains("DRM master cannot be taken back") == true, "\(why ?? "nil")")
        master.refuseSetMaster = false
        #expect(switcher.claim(master) == nil)
        #expect(master.calls.last == "set master")
    }

    @Test("a switch away still waiting when the output closes is let go on")
    func finishAcknowledges() {
        let master = FakeMaster()
        let script = SignalScript()
        var finished = false
        let switcher = VTSwitcher(name: "tty1", terminal: FakeTerminal(master: master), signals: { script.take() },
                                  logger: Logger(level: .error) { _ in }, onFinish: { finished = true })
        script.queued = [.release]
        switcher.finish(master)
        #expect(master.calls == ["drop master", "ack release"])
        #expect(finished, "the terminal's mode is put back")
    }

    @Test("a VT signal is a notice for the display link; without one the inner events are waited on in slices")
    func vtSignalsWakeHotplugWaits() {
        let (switcher, _, script) = rig()
        let inner = CountingHotplug()
        let events = VTAwareHotplugEvents(inner: inner, switcher: switcher, slice: 0.1)
        #expect(events.wait(timeout: 0.35) == false)
        #expect(inner.waited.count == 4 && abs(inner.waited.reduce(0, +) - 0.35) < 1e-9, "\(inner.waited)")
        script.queued = [.release]
        inner.waited = []
        #expect(events.wait(timeout: 5) == true)
        #expect(inner.waited.isEmpty, "answered at once")
        #expect(events.wait(timeout: 0) == false, "one notice per signal")
    }

    @Test("the saved atomic state leaves out read-only properties, requests and DPMS; the fallback only what marquee sets")
    func restorableProperties() {
        func property(_ name: String, immutable: Bool = false) -> PropertyInfo {
            PropertyInfo(id: 1, name: name, value: 0, immutable: immutable, isBlob: false)
        }
        for name in ["FB_ID", "CRTC_ID", "MODE_ID", "ACTIVE", "rotation", "zpos", "GAMMA_LUT", "alpha", "SRC_W"] {
            #expect(restorable(property(name)), "\(name)")
        }
        for name in ["IN_FENCE_FD", "OUT_FENCE_PTR", "FB_DAMAGE_CLIPS", "DPMS"] { #expect(!restorable(property(name)), "\(name)") }
        #expect(!restorable(property("type", immutable: true)))
        #expect(restorable(property("FB_ID"), core: true) && restorable(property("MODE_ID"), core: true))
        #expect(!restorable(property("rotation"), core: true) && !restorable(property("GAMMA_LUT"), core: true))
    }
}
