import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing

/// Monotonic nanoseconds that move only when the scripted output waits or renders.
final class ScriptedTime: Sendable {
    private let ns = Mutex<Int64>(0)
    var now: Int64 { ns.withLock { $0 } }
    func advance(to time: Int64) { ns.withLock { $0 = max($0, time) } }
}

/// A display clock on scripted time: vsync k at k * period.
struct ScriptedVsyncClock: VsyncClock {
    let refresh: RefreshRate
    let time: ScriptedTime
    var period: Int64 { 1_000_000_000 * refresh.denominator / refresh.numerator }
    func earliestVsync(after vsync: Int64) -> Int64 { max(vsync + 1, time.now / period + 1) }
    func timeUntilVsync(_ n: Int64) -> Duration? { .nanoseconds(n * period - time.now) }
}

/// An output driver on scripted time: rendering costs `renderCost`, a queued picture flips on the
/// vsync asked (or the first after now) plus `lateBy` vsyncs, and every wait moves time to its
/// event or its end.
final class ScriptedDriver: OutputDriver {
    typealias Frame = ScriptFrame
    let name = "scripted-0"
    let time = ScriptedTime()
    let scripted: ScriptedVsyncClock
    var clock: any VsyncClock { scripted }
    var renderCost: Int64 = 1_000_000
    var reportsRenderTime = false
    var lateBy: Int64 = 0
    /// Each picture: the vsync asked, the vsync shown, when drawing started, and its frame.
    private(set) var flips: [(asked: Int64, shown: Int64, drawnAt: Int64, frame: Int?)] = []
    private(set) var rescheduled: Int64 = 0
    private var drawn: (at: Int64, frame: Int?)?
    private var queued: (asked: Int64, flip: Int64, drawnAt: Int64, frame: Int?)?

    init(refresh: Int64 = 50) { scripted = ScriptedVsyncClock(refresh: RefreshRate(numerator: refresh), time: time) }

    func draw(_ frames: [ScriptFrame?]) throws {
        drawn = (time.now, (frames.first ?? nil)?.index)
        time.advance(to: time.now + renderCost)
    }
    var lastRenderTime: Int64? { reportsRenderTime ? renderCost : nil }
    func queue(forVsync vsync: Int64) throws {
        let flip = max(vsync, time.now / scripted.period + 1) + lateBy
        queued = (vsync, flip, drawn?.at ?? time.now, drawn?.frame)
    }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        let end = time.now + Int64(timeout * 1e9)
        if let q = queued, q.flip * scripted.period <= end {
            time.advance(to: q.flip * scripted.period)
            queued = nil
            flips.append((q.asked, q.flip, q.drawnAt, q.frame))
            return .flipped(vsync: q.flip)
        }
        time.advance(to: end)
        return .timedOut
    }
    func noteRescheduled(by vsyncs: Int64) { rescheduled += vsyncs }
}

/// A headless-like driver on the real monotonic clock: pictures flip on the vsync asked (or the
/// first after now), and waits sleep.
final class RealTimeDriver: OutputDriver {
    typealias Frame = ScriptFrame
    let name = "real-0"
    let real: RealVsyncClock
    var clock: any VsyncClock { real }
    private var queued: Int64?
    init(refresh: Int64 = 50) { real = RealVsyncClock(refresh: RefreshRate(numerator: refresh)) }
    func draw(_ frames: [ScriptFrame?]) throws {}
    func queue(forVsync vsync: Int64) throws { queued = max(vsync, real.currentVsync + 1) }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        if let q = queued, let left = real.timeUntilVsync(q)?.seconds, left <= timeout {
            if left > 0 { Thread.sleep(forTimeInterval: left) }
            queued = nil
            return .flipped(vsync: q)
        }
        Thread.sleep(forTimeInterval: max(0, timeout))
        return .timedOut
    }
}

@Suite("The presentation loop (scripted drivers, virtual and real time)")
struct PresentationLoopTests {
    func player(_ backend: FakeBackend, frames: Int, fps: Int32 = 50) -> QueuePlayer {
        let url = backend.add("loop-\(frames)-\(fps).mp4", .init(frames: frames, fps: fps))
        return QueuePlayer(items: [PlayerItem(url: url, backend: backend)], logger: quiet)
    }

    @Test("a frame that is not decoded leaves the player's lock free: the loop waits on the decode thread, not under the lock")
    func waitingForDecodingHoldsNoLock() throws {
        let backend = FakeBackend()
        backend.limitDecoding(to: 5)
        let player = player(backend, frames: 100)
        // A virtual clock waits for decoding (here up to 3 s a vsync).
        let output = ScriptedVirtualOutput()
        let presenter = try PlayerPresenter(player: player, output: output, logger: quiet)
        presenter.decodeWaitLimit = 3
        player.play()
        let stop = LoopStop(), done = DispatchSemaphore(value: 0)
        let loop = UncheckedBox(presenter)
        Thread.detachNewThread {
            _ = try? loop.value.run { !stop.stopped }
            done.signal()
        }
        defer {
            stop.stop()
            backend.limitDecoding(to: 1_000)
            #expect(done.wait(timeout: .now() + 10) == .success, "the loop did not end")
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while player.stats.presented < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(player.stats.presented == 5)
        // The loop now waits for frame 5, which is not decoded. The player answers meanwhile.
        Thread.sleep(forTimeInterval: 0.1)
        var worst = 0.0
        for _ in 0..<20 {
            let t0 = ContinuousClock.now
            _ = player.currentTime()
            _ = player.rate
            _ = player.stats
            worst = max(worst, (ContinuousClock.now - t0).seconds)
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(worst < 0.25, "a call into the player took \(worst) s while the loop waited for decoding")
    }

    @Test("on a real clock a frame that is not decoded does not hold the loop past its vsync: vsyncs go on, the picture stays")
    func realClockDoesNotBlock() throws {
        let backend = FakeBackend()
        backend.limitDecoding(to: 5)
        defer { backend.limitDecoding(to: 1_000) }
        let player = player(backend, frames: 100)
        let driver = RealTimeDriver()
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        var beats: [ContinuousClock.Instant] = []
        presenter.onVsync = { _ in beats.append(.now) }
        player.play()
        // 0.8 s after the fifth frame was shown (the fake decoder's thread may start late on a busy
        // machine; a minute at most).
        let start = ContinuousClock.now
        var shownAll: ContinuousClock.Instant?
        _ = try presenter.run {
            if shownAll == nil && player.stats.presented >= 5 { shownAll = .now }
            let now = ContinuousClock.now
            return now - start < .seconds(60) && (shownAll.map { now - $0 < .milliseconds(800) } ?? true)
        }
        #expect(player.stats.presented == 5)
        // 0.8 s at 50 Hz: about 40 vsyncs asked for although 95 frames never came.
        let waited = beats.filter { beat in shownAll.map { beat >= $0 } ?? false }
        #expect(waited.count >= 15, "\(waited.count) vsyncs in the 0.8 s after the fifth frame")
        let gaps = zip(waited, waited.dropFirst()).map { ($1 - $0).seconds }
        #expect((gaps.max() ?? 0) < 0.3, "the loop stood still for \(gaps.max() ?? 0) s")
        #expect(!player.isStalled)   // under the 2 s stall timeout
    }

}

/// A virtual-clock output that records nothing: each queued picture flips at once.
final class ScriptedVirtualOutput: OutputDriver {
    typealias Frame = ScriptFrame
    let name = "virtual-0"
    let clock: any VsyncClock = VirtualVsyncClock(refresh: RefreshRate(numerator: 50))
    private var queued: Int64?
    func draw(_ frames: [ScriptFrame?]) throws {}
    func queue(forVsync vsync: Int64) throws { queued = vsync }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        defer { queued = nil }
        return queued.map { .flipped(vsync: $0) } ?? .timedOut
    }
}

/// Hands a presenter to the thread that runs it (it is used there alone).
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

final class LoopStop: Sendable {
    private let flag = Atomic(false)
    var stopped: Bool { flag.load(ordering: .relaxed) }
    func stop() { flag.store(true, ordering: .relaxed) }
}
