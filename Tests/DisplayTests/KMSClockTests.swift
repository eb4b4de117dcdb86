import Foundation
import Display
import Playback
import Synchronization
import Testing

/// Monotonic time that moves only when something sleeps or a test advances it.
final class VirtualTime: PresentationTime {
    private let ns = Mutex<Int64>(1_000_000_000)
    func now() -> Int64 { ns.withLock { $0 } }
    func sleep(until time: Int64) { ns.withLock { $0 = max($0, time) } }
    func advance(by delta: Int64) { ns.withLock { $0 += delta } }
    var isVirtual: Bool { true }
}

/// A display with a vsync every `period` ns (vsync k at `start + k * period`, plus `wobble(k)`): a
/// queued flip lands on the first vsync after it was queued, plus `extraVsyncs` when a test says so.
final class FakeDisplay: PageFlipDevice {
    let time: VirtualTime
    let period: Int64
    let start: Int64
    /// False: the vblank counter never moves (like virtio-gpu), only timestamps do.
    var hasCounter = true
    var extraVsyncs = 0
    var deliverEvents = true
    var wobble: (Int64) -> Int64 = { _ in 0 }
    private(set) var flips: [(framebuffer: UInt32, vsync: Int64)] = []
    private var queued: (framebuffer: UInt32, at: Int64)?

    init(time: VirtualTime, hz: Int64 = 60) {
        self.time = time
        self.period = 1_000_000_000 / hz
        self.start = time.now()
    }

    func queueFlip(framebuffer: UInt32) throws {
        precondition(queued == nil, "one flip in flight at a time")
        queued = (framebuffer, time.now())
    }

    func waitForFlip(timeout: Double) throws -> FlipEvent {
        guard deliverEvents, let q = queued else {
            time.advance(by: Int64(timeout * 1e9))
            throw WaitTimeout(waitingFor: "the page-flip event of the fake display", seconds: timeout)
        }
        queued = nil
        var k = (q.at - start) / period + 1
        k += Int64(extraVsyncs)
        let at = start + k * period + wobble(k)
        time.sleep(until: at)
        flips.append((q.framebuffer, k))
        return FlipEvent(sequence: hasCounter ? UInt32(1000 + k) : 7, time: at, crtc: 42)
    }
}

/// What the presentation loop does with one KMS head, written out for the clock tests: plans with
/// `FramePlanner` from the recorded render times, waits (on virtual time) until rendering should
/// start and then until the flip's queue time, queues the flip, waits for its event and records it
/// on the clock.
final class TestFlipper {
    let device: FakeDisplay
    let clock: PageFlipClock
    var flipTimeout = 3.0
    var planner = FramePlanner()

    init(device: FakeDisplay, clock: PageFlipClock) {
        self.device = device
        self.clock = clock
    }

    func recordRender(nanoseconds: Int64) { planner.record(renderNanoseconds: nanoseconds) }
    var renderEstimate: Int64? { planner.estimate }

    private func nanosUntil(_ v: Int64) -> Int64? { clock.predictedTime(ofVsync: v).map { $0 - clock.time.now() } }

    /// The vsync to draw the picture asked for `asked` for, after waiting until rendering starts.
    func plan(forVsync asked: Int64) throws -> Int64 {
        let earliest = max(asked, clock.earliestVsync(after: clock.lastFlipVsync))
        guard let plan = planner.plan(earliest: earliest, nanosUntil: nanosUntil) else { return earliest }
        clock.noteRescheduled(by: plan.vsync - earliest)
        clock.time.sleep(until: clock.time.now() + plan.startIn)
        return plan.vsync
    }

    /// Shows `framebuffer` on `vsync` or the first vsync it can still make; the vsync it was shown on.
    func present(framebuffer: UInt32, atVsync vsync: Int64) throws -> Int64 {
        let target = max(vsync, clock.earliestVsync(after: clock.lastFlipVsync))
        if let previous = clock.predictedTime(ofVsync: target - 1) {
            clock.time.sleep(until: previous + Int64(clock.nominalInterval * planner.commitPhase))
        }
        try device.queueFlip(framebuffer: framebuffer)
        let event = try device.waitForFlip(timeout: flipTimeout)
        return clock.record(event, planned: vsync)
    }
}

@Suite("Page-flip clock and presenter (fake KMS device, virtual time)")
struct KMSClockTests {
    func make(hz: Int64 = 60) -> (VirtualTime, FakeDisplay, TestFlipper) {
        let time = VirtualTime()
        let display = FakeDisplay(time: time, hz: hz)
        let clock = PageFlipClock(refresh: RefreshRate(numerator: hz), time: time)
        return (time, display, TestFlipper(device: display, clock: clock))
    }

    @Test("frames on consecutive vsyncs are shown on the vsync they were planned for")
    func steady() throws {
        let (_, display, presenter) = make()
        var shown: [Int64] = []
        for v in Int64(0)..<20 { shown.append(try presenter.present(framebuffer: UInt32(v % 3 + 1), atVsync: v)) }
        #expect(shown == Array(0..<20))
        #expect(presenter.clock.stats.lateFrames == 0 && presenter.clock.stats.missedVsyncs == 0)
        #expect(presenter.clock.stats.flips == 20)
        // Vsync 0 is the first flip; the display's own counter runs on from there.
        #expect(display.flips.map(\.vsync) == Array(1...20))
        let refresh = try #require(presenter.clock.measuredRefresh)
        #expect(abs(refresh - 1e9 / Double(display.period)) < 1e-6)
        #expect(presenter.clock.jitter == 0)
    }

    @Test("a frame planned ahead waits for the vsync before its own, then flips")
    func waitsForPlannedVsync() throws {
        let (time, display, presenter) = make()
        #expect(try presenter.present(framebuffer: 1, atVsync: 0) == 0)
        let t0 = time.now()
        #expect(try presenter.present(framebuffer: 2, atVsync: 10) == 10)
        #expect(time.now() - t0 == 10 * display.period)
        #expect(presenter.clock.stats.lateFrames == 0)
    }

    @Test("a slow render is shown late, and the late frame and missed vsyncs are counted")
    func lateRender() throws {
        let (time, display, presenter) = make()
        for v in Int64(0)...2 { _ = try presenter.present(framebuffer: 1, atVsync: v) }
        // Drawing vsync 3's frame takes 2.5 intervals: vsync 4 is too close, it makes vsync 5.
        time.advance(by: display.period * 5 / 2)
        #expect(presenter.clock.currentVsync == 4)
        #expect(presenter.clock.earliestVsync(after: 2) == 5)
        #expect(try presenter.present(framebuffer: 2, atVsync: 3) == 5)
        #expect(presenter.clock.stats.lateFrames == 1)
        #expect(presenter.clock.stats.missedVsyncs == 2)
        // The next frame on time is not late.
        #expect(try presenter.present(framebuffer: 3, atVsync: 6) == 6)
        #expect(presenter.clock.stats.lateFrames == 1)
    }

    @Test("a flip the driver completes a vsync late is counted as a missed vsync")
    func lateFlip() throws {
        let (_, display, presenter) = make()
        _ = try presenter.present(framebuffer: 1, atVsync: 0)
        display.extraVsyncs = 1
        #expect(try presenter.present(framebuffer: 2, atVsync: 1) == 2)
        display.extraVsyncs = 0
        #expect(presenter.clock.stats == {
            var s = FlipStats(); s.flips = 2; s.lateFrames = 1; s.missedVsyncs = 1; s.shownMinusPlanned = [0: 1, 1: 1]; return s
        }())
    }

    @Test("without a vblank counter (virtio-gpu), vsyncs are counted from the flip timestamps")
    func stuckCounter() throws {
        let (time, display, presenter) = make(hz: 50)
        display.hasCounter = false
        #expect(try presenter.present(framebuffer: 1, atVsync: 0) == 0)
        #expect(try presenter.present(framebuffer: 2, atVsync: 1) == 1)
        time.advance(by: display.period * 3 + display.period / 2)
        #expect(try presenter.present(framebuffer: 3, atVsync: 2) == 5)
        #expect(presenter.clock.stats.stuckSequences == 2)
        #expect(presenter.clock.stats.missedVsyncs == 3)
    }

    @Test("jitter is the RMS deviation of the vsync intervals relative to the interval (mpv)")
    func jitter() throws {
        let (_, display, presenter) = make()
        let d = display.period / 100  // vsyncs alternate 1% early and 1% late
        display.wobble = { k in k % 2 == 0 ? d : -d }
        for v in Int64(0)..<33 { _ = try presenter.present(framebuffer: 1, atVsync: v) }
        // 32 intervals, alternately period - 2d and period + 2d: RMS deviation 2d, relative 0.02.
        let jitter = try #require(presenter.clock.jitter)
        #expect(abs(jitter - 0.02) < 1e-3)
        let refresh = try #require(presenter.clock.measuredRefresh)
        #expect(abs(refresh - 1e9 / Double(display.period)) < 1e-6)
    }

    @Test("a flip event that never comes times out and says what it waited for")
    func timeout() throws {
        let (_, display, presenter) = make()
        display.deliverEvents = false
        presenter.flipTimeout = 0.5
        let error = #expect(throws: WaitTimeout.self) { try presenter.present(framebuffer: 1, atVsync: 0) }
        #expect(error?.description.contains("page-flip event") == true)
        #expect(error?.seconds == 0.5)
    }

    @Test("a player presented on the page-flip clock shows a 24 fps clip in 3:2 cadence at 60 Hz")
    func cadenceThroughPlayer() throws {
        let (_, display, presenter) = make()
        let output = FlipOutput(presenter: presenter)
        let item = PlayerItem(url: URL(fileURLWithPath: "/scripted/24fps.mp4"), backend: ScriptedBackend(frames: 12, fps: 24))
        let player = QueuePlayer(items: [item], logger: Logger(level: .error) { _ in })
        let presentation = try PlayerPresenter(player: player, output: output, logger: Logger(level: .error) { _ in })
        player.play()
        _ = try presentation.run(stopWhenEmpty: true) { true }  // ends when the queue has played out
        let vsyncs = output.shown
        let steps = zip(vsyncs, vsyncs.dropFirst()).map { $1 - $0 }
        #expect(vsyncs.count == 12)
        #expect(steps == [3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3])
        #expect(presenter.clock.stats.lateFrames == 0)
        #expect(display.flips.count == vsyncs.count + 1)  // and the blank after the end
    }
}

struct ScriptedFrame: PresentableFrame {
    var pts: MediaTime
    var duration: MediaTime
}

/// A media backend whose one clip is `frames` frames at `fps`.
struct ScriptedBackend: MediaBackend {
    let frames: Int
    let fps: Int32

    func probe(_ url: URL) throws -> AssetDescription {
        AssetDescription(duration: MediaTime(value: Int64(frames), timescale: fps),
                         tracks: [AssetTrack(trackID: 1, mediaType: .video, naturalSize: VideoSize(width: 64, height: 36))])
    }

    func openReader(_ url: URL) throws -> any FrameReader { Reader(frames: frames, fps: fps) }

    final class Reader: FrameReader {
        private var next = 0
        let frames: Int
        let fps: Int32
        init(frames: Int, fps: Int32) {
            self.frames = frames
            self.fps = fps
        }
        func nextFrame() throws -> (any PresentableFrame)? {
            defer { next += 1 }
            guard next < frames else { return nil }
            return ScriptedFrame(pts: MediaTime(value: Int64(next), timescale: fps), duration: MediaTime(value: 1, timescale: fps))
        }
        func seek(to time: MediaTime) throws { next = Int((time.seconds * Double(fps)).rounded(.down)) }
    }
}

/// An output driver on the fake display: "draws" nothing (a render of `renderTime` ns of virtual
/// time), queues framebuffer 1, and reports its flips as the page-flip clock numbers them.
final class FlipOutput: OutputDriver {
    let name = "fake-kms"
    let presenter: TestFlipper
    var clock: any VsyncClock { presenter.clock }
    /// Render time of each picture (virtual ns), as a GPU timer would measure it.
    var renderTime: Int64 = 0
    private(set) var shown: [Int64] = []
    private var drewFrame = false
    private var queued: (planned: Int64, frame: Bool)?
    init(presenter: TestFlipper) { self.presenter = presenter }

    func draw(_ frames: [ScriptedFrame?]) throws {
        presenter.clock.time.sleep(until: presenter.clock.time.now() + renderTime)
        drewFrame = frames.first.flatMap { $0 } != nil
    }
    var lastRenderTime: Int64? { renderTime > 0 ? renderTime : nil }
    func queue(forVsync vsync: Int64) throws {
        try presenter.device.queueFlip(framebuffer: 1)
        queued = (vsync, drewFrame)
    }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        guard let q = queued else {
            presenter.clock.time.sleep(until: presenter.clock.time.now() + Int64(timeout * 1e9))
            return .timedOut
        }
        queued = nil
        let v = presenter.clock.record(try presenter.device.waitForFlip(timeout: timeout), planned: q.planned)
        if q.frame { shown.append(v) }
        return .flipped(vsync: v)
    }
    func noteRescheduled(by vsyncs: Int64) { presenter.clock.noteRescheduled(by: vsyncs) }
}

@Suite("KMS mode choice and output selection")
struct KMSModeTests {
    let modes = [
        KMSMode(width: 1280, height: 800, refresh: RefreshRate(numerator: 60), preferred: true, index: 0),
        KMSMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60000, denominator: 1001), preferred: false, index: 1),
        KMSMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 50), preferred: false, index: 2),
        KMSMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60), preferred: false, index: 3),
        KMSMode(width: 640, height: 480, refresh: RefreshRate(numerator: 75), preferred: false, index: 4),
    ]

    @Test func parsing() {
        #expect(KMSModeRequest(parsing: "preferred") == .preferred)
        #expect(KMSModeRequest(parsing: "highest") == .highest)
        #expect(KMSModeRequest(parsing: "1920x1080") == .size(width: 1920, height: 1080, refresh: nil))
        #expect(KMSModeRequest(parsing: "1920x1080@59.94") == .size(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60000, denominator: 1001)))
        #expect(KMSModeRequest(parsing: "best") == nil)
        #expect(KMSModeRequest(parsing: "1920x") == nil)
    }

    @Test func choice() {
        #expect(chooseMode(.preferred, from: modes)?.index == 0)
        #expect(chooseMode(.preferred, from: Array(modes.dropFirst()))?.index == 1)  // none preferred: the first
        #expect(chooseMode(.highest, from: modes)?.index == 3)
        #expect(chooseMode(.size(width: 1920, height: 1080, refresh: nil), from: modes)?.index == 3)
        #expect(chooseMode(.size(width: 1920, height: 1080, refresh: RefreshRate(parsing: "59.94")), from: modes)?.index == 1)
        #expect(chooseMode(.size(width: 1920, height: 1080, refresh: RefreshRate(numerator: 50)), from: modes)?.index == 2)
        #expect(chooseMode(.size(width: 3840, height: 2160, refresh: nil), from: modes) == nil)
        #expect(chooseMode(.preferred, from: []) == nil)
    }

    @Test func kmsWithoutConnectorNamesWhatIsMissing() {
        let error = #expect(throws: OutputUnavailable.self) { try resolveOutputKind(.kms, connectors: []) }
        let text = error?.description ?? ""
        #expect(text.contains("no DRM device") || text.contains("connected connector"))
    }

    @Test func autoWithoutConnectorIsHeadless() throws {
        #expect(try resolveOutputKind(.auto, connectors: []).0 == .headless)
    }
}
