import Display
import Foundation
import Playback
import Testing

/// Hotplug notices at scripted virtual times: `wait` moves time to the next notice or the timeout.
final class FakeHotplug: HotplugEvents {
    let time: VirtualTime
    var notices: [Int64] = []
    init(time: VirtualTime) { self.time = time }
    func wait(timeout: Double) -> Bool {
        let end = time.now() + Int64(timeout * 1e9)
        if let next = notices.filter({ $0 <= end }).min() {
            time.sleep(until: next)
            notices.removeAll { $0 <= time.now() }
            return true
        }
        time.sleep(until: end)
        return false
    }
}

/// A card with one connector whose display comes and goes on a virtual-time script; every change
/// sends a hotplug notice.
final class FakeCard: HotplugDisplay {
    let time: VirtualTime
    let hotplug: FakeHotplug
    /// (from, mode or nil for disconnected), in time order.
    private var script: [(at: Int64, mode: DisplayMode?)] = []
    /// Flips that never complete (each one a timeout) before the display answers again.
    var stalledFlips = 0
    /// Render time of each picture, nanoseconds (the fake GPU).
    var renderTime: (Int) -> Int64 = { _ in 1_000_000 }
    private(set) var probes = 0
    private(set) var heads: [FakeHead] = []
    private(set) var absence = ""

    init(time: VirtualTime, hotplug: FakeHotplug) {
        self.time = time
        self.hotplug = hotplug
    }

    func change(at: Int64, to mode: DisplayMode?) {
        script.append((at, mode))
        hotplug.notices.append(at)
    }

    var current: DisplayMode? { script.last { $0.at <= time.now() }?.mode }

    func connect() throws -> FakeHead? {
        probes += 1
        guard let mode = current else {
            absence = "no connected connector on the fake card"
            return nil
        }
        let head = FakeHead(card: self, mode: mode)
        heads.append(head)
        return head
    }

    func recheck(_ head: FakeHead) -> String? {
        guard let mode = current else { return "connector Fake-1 was disconnected" }
        return mode == head.mode ? nil : "connector Fake-1 now offers \(mode) instead of \(head.mode)"
    }
}

final class FakeHead: DisplayHead {
    let connector = "Fake-1"
    let mode: DisplayMode
    let flipClock: PageFlipClock
    let display: FakeDisplay
    unowned let card: FakeCard
    private(set) var closed: Bool?
    private(set) var rendered = 0

    init(card: FakeCard, mode: DisplayMode) {
        self.card = card
        self.mode = mode
        display = FakeDisplay(time: card.time, hz: Int64(mode.refresh.hertz.rounded()))
        flipClock = PageFlipClock(refresh: mode.refresh, time: card.time)
    }

    private var planned: Int64 = 0

    func draw(_ draw: () throws -> Void) throws -> Int64? {
        let cost = card.renderTime(rendered)
        rendered += 1
        card.time.advance(by: cost)
        try draw()
        return cost
    }

    func queueFlip(planned: Int64) throws {
        self.planned = planned
        display.deliverEvents = card.current != nil && card.stalledFlips == 0
        if card.stalledFlips > 0 { card.stalledFlips -= 1 }
        try display.queueFlip(framebuffer: 1)
    }

    func waitForFlip(timeout: Double) throws -> Int64 {
        flipClock.record(try display.waitForFlip(timeout: timeout), planned: planned)
    }

    func close(lost: Bool) { closed = lost }
}

/// Shows one (empty) picture on `link` the way the presentation loop does: waits for a display
/// while there is none (until `shouldContinue` says stop), draws, waits until a quarter into the
/// interval before session vsync `n`, queues, and waits for the flip; a picture lost with its
/// display is drawn again on the next one. Returns the session vsync it was shown on.
func show(on link: DisplayLink<FakeCard>, atVsync n: Int64) throws -> Int64 {
    while link.shouldContinue() {
        guard link.isReady else {
            _ = try link.waitForEvent(timeout: 0.5)
            continue
        }
        try link.draw {}
        let phase = link.clock.refresh.interval.seconds / 4
        var lost = false
        while !lost, let left = link.clock.timeUntilVsync(n - 1).map({ $0.seconds + phase }), left > 1e-6 {
            if case .lost = try link.waitForEvent(timeout: left) { lost = true }
        }
        if lost { continue }
        try link.queue(forVsync: n)
        flip: while true {
            switch try link.waitForEvent(timeout: 0.5) {
            case .flipped(let v): return max(v, n)
            case .lost: break flip
            case .timedOut: continue
            }
        }
    }
    return n
}

let hd60 = DisplayMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60))
let hd50 = DisplayMode(width: 1280, height: 720, refresh: RefreshRate(numerator: 50))

@Suite("Hotplug state machine (fake KMS device, virtual time)")
struct HotplugTests {
    struct Rig {
        let time = VirtualTime()
        let hotplug: FakeHotplug
        let card: FakeCard
        let link: DisplayLink<FakeCard>
        var states: [DisplayLinkState] { recorded.states }
        let recorded = Recorder()
        init() {
            hotplug = FakeHotplug(time: time)
            card = FakeCard(time: time, hotplug: hotplug)
            link = DisplayLink(display: card, hotplug: hotplug, time: time, logger: Logger(level: .error) { _ in })
            link.onStateChange = { [recorded] in recorded.states.append($0) }
        }
        func seconds(_ s: Double) -> Int64 { time.now() + Int64(s * 1e9) }
        /// Presents `count` pictures the way the player does: each on the clock's next vsync.
        func play(_ count: Int, from last: inout Int64) throws -> [Int64] {
            var shown: [Int64] = []
            for _ in 0..<count {
                let n = link.clock.earliestVsync(after: last)
                last = try show(on: link, atVsync: n)
                shown.append(last)
            }
            return shown
        }
    }
    final class Recorder { var states: [DisplayLinkState] = [] }

    func kinds(_ states: [DisplayLinkState]) -> [String] {
        states.map {
            switch $0 {
            case .waitingForDisplay: "waiting"
            case .modesetting: "modesetting"
            case .presenting: "presenting"
            case .lost: "lost"
            }
        }
    }

    @Test("no display at start: waits on hotplug notices (no tight polling) and presents once one appears")
    func absentAtStart() throws {
        let rig = Rig()
        let start = rig.time.now()
        rig.card.change(at: rig.seconds(5), to: hd60)
        #expect(try rig.link.waitForDisplay())
        #expect(rig.time.now() - start == 5_000_000_000)  // woken by the notice, not a poll
        #expect(rig.card.probes == 2)                     // at start, and on the notice
        #expect(rig.link.clock.refresh == hd60.refresh)
        var last: Int64 = -1
        #expect(try rig.play(5, from: &last) == [0, 1, 2, 3, 4])
        #expect(kinds(rig.states) == ["waiting", "modesetting", "presenting"])
        if case .waitingForDisplay(let why) = rig.states[0] { #expect(why.contains("no connected connector")) }
        #expect(rig.link.counters.connects == 1 && rig.link.counters.hotplugNotices == 1)
    }

    @Test("the display goes away while presenting and comes back: modeset again, the timeline carries on")
    func disappearsAndReturns() throws {
        let rig = Rig()
        rig.card.change(at: rig.time.now(), to: hd60)
        var last: Int64 = -1
        #expect(try rig.play(10, from: &last) == Array(0..<10))
        rig.card.change(at: rig.seconds(0.01), to: nil)
        rig.card.change(at: rig.seconds(3), to: hd60)
        rig.time.advance(by: 20_000_000)
        let after = try rig.play(10, from: &last)
        // The player was not asked for frames during the 3 s without a display: it goes on from
        // the vsync it asked for before the loss was noticed (20 ms after vsync 9: vsync 11).
        #expect(after == Array(11..<21))
        #expect(kinds(rig.states) == ["modesetting", "presenting", "lost", "waiting", "modesetting", "presenting"])
        let lost = rig.states.compactMap { if case .lost(let r) = $0 { r } else { nil } }
        #expect(lost.count == 1 && lost[0].contains("disconnected"))
        #expect(rig.link.counters.losses == 1 && rig.link.counters.connects == 2)
        #expect(rig.card.heads.count == 2 && rig.card.heads[0].closed == true)
        #expect(rig.card.heads[1].flipClock.stats.flips == 10)
    }

    @Test("the display comes back in another mode: new head in that mode, the session's vsyncs keep their rate")
    func returnsInAnotherMode() throws {
        let rig = Rig()
        rig.card.change(at: rig.time.now(), to: hd60)
        var last: Int64 = -1
        _ = try rig.play(30, from: &last)
        rig.card.change(at: rig.seconds(0.001), to: nil)
        rig.card.change(at: rig.seconds(1), to: hd50)
        rig.time.advance(by: 2_000_000)
        _ = try rig.play(1, from: &last)   // waits for the display, modesets in 50 Hz
        #expect(rig.link.head?.mode == hd50)
        #expect(rig.link.clock.refresh == hd60.refresh)   // the player's rate stays
        let t0 = rig.time.now(), s0 = last
        _ = try rig.play(120, from: &last)
        // One picture per 50 Hz vsync (none skipped): 2.4 s, and the session's 60 Hz vsyncs
        // advanced with the time, give or take one.
        let seconds = Double(rig.time.now() - t0) / 1e9
        #expect(abs(seconds - 2.4) < 0.021, "\(seconds) s for 120 pictures")
        #expect(abs(seconds - Double(last - s0) / 60) <= 0.021, "\(seconds) s for \(last - s0) session vsyncs")
        #expect(rig.card.heads.last!.flipClock.stats.lateFrames == 0)
    }

    @Test("a notice with the connector offering a new preferred mode redoes the head without a disconnect")
    func modeChangedInPlace() throws {
        let rig = Rig()
        rig.card.change(at: rig.time.now(), to: hd60)
        var last: Int64 = -1
        _ = try rig.play(3, from: &last)
        rig.card.change(at: rig.time.now(), to: hd50)
        _ = try rig.play(3, from: &last)
        #expect(rig.link.head?.mode == hd50)
        let lost = rig.states.compactMap { if case .lost(let r) = $0 { r } else { nil } }
        #expect(lost.count == 1 && lost[0].contains("now offers"))
    }

    @Test("a flip that times out counts as lost: the display is modeset again and presenting goes on")
    func flipTimeoutIsLost() throws {
        let rig = Rig()
        rig.card.change(at: rig.time.now(), to: hd60)
        var last: Int64 = -1
        _ = try rig.play(3, from: &last)
        rig.card.stalledFlips = 1
        let shown = try rig.play(3, from: &last)
        #expect(shown == [3, 4, 5])
        #expect(rig.link.counters.flipTimeouts == 1 && rig.link.counters.losses == 1 && rig.link.counters.connects == 2)
        let lost = rig.states.compactMap { if case .lost(let r) = $0 { r } else { nil } }
        #expect(lost.first?.contains("page-flip event") == true)
        if case .presenting = rig.link.state {} else { Issue.record("not presenting: \(rig.link.state)") }
    }

    @Test("waiting stops when told to, and a wait with a limit says what it waited for")
    func waitsEnd() throws {
        let rig = Rig()
        let stopAt = rig.seconds(2)
        rig.link.shouldContinue = { rig.time.now() < stopAt }
        #expect(try rig.link.waitForDisplay() == false)
        #expect(rig.time.now() >= stopAt && rig.time.now() < stopAt + 600_000_000)  // within one wait slice
        #expect(try show(on: rig.link, atVsync: 7) == 7)  // stopped: nothing shown, nothing thrown
        rig.link.shouldContinue = { true }
        rig.link.waitTimeout = 3
        let error = #expect(throws: WaitTimeout.self) { try rig.link.waitForDisplay() }
        #expect(error?.waitingFor.contains("a connected display") == true)
        #expect(error?.waitingFor.contains("no connected connector") == true)
    }

    @Test("uevents: only DRM hotplugs count")
    func ueventFilter() {
        func bytes(_ fields: [String]) -> [UInt8] { fields.flatMap { Array($0.utf8) + [0] } }
        #expect(isDRMHotplug(uevent: bytes(["change@/devices/pci0000:00/0000:00:02.0/drm/card0", "ACTION=change",
                                            "DEVPATH=/devices/pci0000:00/0000:00:02.0/drm/card0", "SUBSYSTEM=drm",
                                            "HOTPLUG=1", "DEVNAME=dri/card0", "SEQNUM=2711"])))
        #expect(!isDRMHotplug(uevent: bytes(["change@/devices/virtual/net/eth0", "ACTION=change", "SUBSYSTEM=net"])))
        #expect(!isDRMHotplug(uevent: bytes(["add@/devices/.../drm/renderD128", "ACTION=add", "SUBSYSTEM=drm"])))
    }

    @Test("the sysfs fallback notices a status change on its slow poll")
    func sysfsFallback() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hotplug-sysfs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let connector = dir.appendingPathComponent("card0-HDMI-A-1")
        try FileManager.default.createDirectory(at: connector, withIntermediateDirectories: true)
        try "disconnected\n".write(to: connector.appendingPathComponent("status"), atomically: true, encoding: .utf8)
        let time = VirtualTime()
        let events = SysfsPollHotplugEvents(sysfs: dir.path, interval: 2, time: time)
        let t0 = time.now()
        #expect(events.wait(timeout: 3) == false)
        #expect(time.now() - t0 == 3_000_000_000)
        try "connected\n".write(to: connector.appendingPathComponent("status"), atomically: true, encoding: .utf8)
        #expect(events.wait(timeout: 3) == true)
        #expect(time.now() - t0 == 4_000_000_000)   // the next poll, 2 s after the first
    }

    @Test("--output kms or auto with a display card but nothing connected waits instead of failing")
    func selectionWaits() throws {
        let (kind, reason) = try resolveOutputKind(.kms, connectors: [], cards: ["card0"])
        #expect(kind == .kms && reason.contains("waiting"))
        #expect(try resolveOutputKind(.auto, connectors: [], cards: []).0 == .headless)
    }
}

@Suite("GPU-timed presentation (fake KMS device, virtual time)")
struct GPUTimedPresentationTests {
    func make() -> (VirtualTime, FakeDisplay, TestFlipper) {
        let time = VirtualTime()
        let display = FakeDisplay(time: time, hz: 60)
        return (time, display, TestFlipper(device: display, clock: PageFlipClock(refresh: RefreshRate(numerator: 60), time: time)))
    }

    /// Plans, "renders" for `cost` ns, presents; returns (planned, shown, render start).
    func frame(_ time: VirtualTime, _ p: TestFlipper, asked: Int64, cost: Int64) throws -> (Int64, Int64, Int64) {
        let planned = try p.plan(forVsync: asked)
        let start = time.now()
        time.advance(by: cost)
        p.recordRender(nanoseconds: cost)
        return (planned, try p.present(framebuffer: 1, atVsync: planned), start)
    }

    @Test("rendering starts as late as the measured render time allows, and every frame makes its vsync")
    func startsLate() throws {
        let (time, display, p) = make()
        let cost = display.period / 5
        for v in Int64(0)..<3 { _ = try frame(time, p, asked: v, cost: cost) }
        let (planned, shown, start) = try frame(time, p, asked: 3, cost: cost)
        #expect(planned == 3 && shown == 3)
        // Queue time is a quarter interval after vsync 2; rendering starts the estimate before it.
        let vsync2 = try #require(p.clock.predictedTime(ofVsync: 2))
        let expected = vsync2 + display.period / 4 - cost
        #expect(abs(start - expected) <= 1)
        #expect(p.clock.stats.shownMinusPlanned == [0: 4])
        #expect(p.clock.stats.rescheduledFrames == 0)
    }

    @Test("a render longer than the time left moves the frame to a vsync it can make: rescheduled, not late")
    func reschedules() throws {
        let (time, display, p) = make()
        for v in Int64(0)..<3 { _ = try frame(time, p, asked: v, cost: display.period / 10) }
        // The renderer slows down to 1.3 intervals: measured once, the next plan knows it.
        _ = try frame(time, p, asked: 3, cost: display.period * 13 / 10)   // not known yet: late
        let lateBefore = p.clock.stats.lateFrames
        #expect(lateBefore == 1)
        var last = p.clock.lastFlipVsync
        for _ in 0..<5 {
            let (planned, shown, _) = try frame(time, p, asked: last + 1, cost: display.period * 13 / 10)
            #expect(planned > last + 1)
            #expect(shown == planned)
            last = shown
        }
        #expect(p.clock.stats.lateFrames == lateBefore)
        #expect(p.clock.stats.rescheduledFrames == 5)
        #expect(p.clock.stats.rescheduledVsyncs >= 5)
        #expect(p.clock.stats.shownMinusPlanned[0] == 8 && p.clock.stats.shownMinusPlanned.values.reduce(0, +) == 9)
    }

    @Test("without a render estimate the plan is the asked vsync")
    func noEstimate() throws {
        let (_, _, p) = make()
        #expect(try p.plan(forVsync: 0) == 0)
        #expect(p.renderEstimate == nil)
        p.recordRender(nanoseconds: 5)
        p.recordRender(nanoseconds: 9)
        p.recordRender(nanoseconds: 7)
        #expect(p.renderEstimate == 9)
    }
}
