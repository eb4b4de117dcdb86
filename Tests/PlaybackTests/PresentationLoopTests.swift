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

    @Test("flips that complete a vsync late: the loop drops the frames due meanwhile and keeps the clock")
    func lateFlipsKeepTheClock() throws {
        let backend = FakeBackend()
        let player = player(backend, frames: 100)
        let driver = ScriptedDriver()
        driver.lateBy = 1
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        player.play()
        let stats = try presenter.run(stopWhenEmpty: true) { driver.flips.count < 1000 }
        let pictures = driver.flips.filter { $0.frame != nil }
        // Every picture landed a vsync after the one asked.
        #expect(!pictures.isEmpty && pictures.allSatisfy { $0.shown == $0.asked + 1 })
        // Half the frames could not have a vsync of their own: dropped and counted, none lost.
        #expect(stats.dropped >= 40, "\(stats)")
        #expect(stats.presented + stats.dropped == 100, "\(stats)")
        #expect(stats.stalls == 0)
        // The clock was kept: 2 s of clip at 50 Hz ended near vsync 100, not 200 (as it would
        // if the timeline moved with the late pictures).
        let last = try #require(driver.flips.last)
        #expect(last.shown <= 106, "the clip ended on vsync \(last.shown)")
        // Shown frames follow the clock: frame k on vsync k + its start, within the late vsync, or
        // one more for a frame the decode thread had not delivered when its vsync was asked (the
        // scripted loop runs at once, without waiting for that thread): a few, never more.
        let start = pictures[0].shown - Int64(pictures[0].frame ?? 0)
        let off = pictures.dropFirst().map { abs($0.shown - start - Int64($0.frame ?? 0)) }
        #expect(off.allSatisfy { $0 <= 2 } && off.filter { $0 == 2 }.count * 20 <= off.count,
                "\(zip(pictures.dropFirst(), off).filter { $0.1 > 1 }.map { "frame \($0.0.frame ?? -1) on vsync \($0.0.shown)" })")
    }

    @Test("on time, every frame of a 25 fps clip is shown on its vsync at 50 Hz: no drops, exact 2:2 cadence")
    func exactCadence() throws {
        let backend = FakeBackend()
        let player = player(backend, frames: 50, fps: 25)
        let driver = ScriptedDriver()
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        player.play()
        let stats = try presenter.run(stopWhenEmpty: true) { driver.flips.count < 1000 }
        let pictures = driver.flips.filter { $0.frame != nil }
        #expect(pictures.map(\.frame) == (0..<50).map { Optional($0) })
        let steps = zip(pictures, pictures.dropFirst()).map { $1.shown - $0.shown }
        #expect(steps.allSatisfy { $0 == 2 }, "\(steps)")
        #expect(pictures.allSatisfy { $0.shown == $0.asked })
        #expect(stats.dropped == 0 && stats.delayed == 0)
    }

    @Test("a render longer than a vsync: the loop plans a vsync it can make and starts drawing the render time before its queue time")
    func plansFromRenderTimes() throws {
        let backend = FakeBackend()
        let player = player(backend, frames: 50)
        let driver = ScriptedDriver()
        driver.reportsRenderTime = true
        driver.renderCost = driver.scripted.period * 3 / 2
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        player.play()
        _ = try presenter.run(stopWhenEmpty: true) { driver.flips.count < 1000 }
        // The first picture has no estimate yet (shown late); from then on every picture makes
        // the vsync it was planned for.
        let planned = driver.flips.dropFirst(2)
        #expect(!planned.isEmpty && planned.allSatisfy { $0.shown == $0.asked }, "\(planned.map { ($0.asked, $0.shown) })")
        #expect(driver.rescheduled > 0)
        // Drawing started the render time before the queue time (a quarter into the interval
        // before the planned vsync), so that it ended in time for it; or, with one picture in
        // flight at a time, when the previous flip came, if that was later.
        let p = driver.scripted.period
        for (previous, f) in zip(driver.flips.dropFirst(), planned) {
            let start = max(previous.shown * p, (f.asked - 1) * p + p / 4 - driver.renderCost)
            // (within the 50 µs the loop does not wait for)
            #expect(abs(f.drawnAt - start) <= 50_000, "asked \(f.asked), drawn at \(f.drawnAt), not \(start)")
        }
    }

    @Test("with time to spare, drawing starts as late as the render time allows: its estimate before the queue time")
    func drawsAsLateAsItCan() throws {
        let backend = FakeBackend()
        let player = player(backend, frames: 25, fps: 25)   // a new picture every other vsync
        let driver = ScriptedDriver()
        driver.reportsRenderTime = true
        driver.renderCost = driver.scripted.period / 2
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        player.play()
        let stats = try presenter.run(stopWhenEmpty: true) { driver.flips.count < 1000 }
        let p = driver.scripted.period
        let planned = driver.flips.dropFirst(2).filter { $0.frame != nil }
        #expect(planned.count >= 20)
        for f in planned {
            #expect(f.shown == f.asked)
            #expect(abs(f.drawnAt - ((f.asked - 1) * p + p / 4 - driver.renderCost)) <= 50_000, "asked \(f.asked), drawn at \(f.drawnAt)")
        }
        #expect(stats.dropped == 0 && stats.delayed == 0, "\(stats)")
    }

    @Test("the planner: the first vsync whose deadline the render estimate meets, started the estimate before its queue time")
    func planner() {
        var planner = FramePlanner()
        let period: Int64 = 20_000_000
        let now: Int64 = 5 * period + period / 2  // half way between vsyncs 5 and 6
        let until: (Int64) -> Int64? = { $0 * period - now }
        #expect(planner.plan(earliest: 6, nanosUntil: until) == nil)   // no estimate: draw now
        planner.record(renderNanoseconds: period / 5)
        planner.record(renderNanoseconds: period / 10)
        #expect(planner.estimate == period / 5)
        // 4 ms of rendering fits before vsync 6 (10 ms away, less a 2 ms margin): start at
        // vsync 5 + 5 ms - 4 ms, i.e. 9 ms ago (at once).
        #expect(planner.plan(earliest: 6, nanosUntil: until) == FramePlanner.Plan(vsync: 6, startIn: -period / 2 + period / 4 - period / 5))
        // 12 ms of rendering does not fit before vsync 6: planned for 7, started 12 ms before
        // vsync 6 + 5 ms.
        planner.record(renderNanoseconds: period * 3 / 5)
        #expect(planner.plan(earliest: 6, nanosUntil: until) == FramePlanner.Plan(vsync: 7, startIn: period / 2 + period / 4 - period * 3 / 5))
        // A virtual clock has no times: no plan.
        #expect(planner.plan(earliest: 6, nanosUntil: { _ in nil }) == nil)
        planner.reset()
        #expect(planner.estimate == nil)
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
