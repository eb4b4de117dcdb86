import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
@testable import PlaybackTests

/// The guide's loop (`seek(to: .zero)` in the did-play-to-end handler, then `play()`; or
/// `actionAtItemEnd = .none` and the seek alone) is gapless: frame 0 comes on the vsync the next
/// frame was due, exactly, on the virtual vsync.
@Suite("Seamless seek-to-zero loops, idle players and decode thread lifetimes")
struct SeamlessLoopTests {
    let unit = PlaybackTests.SeamlessLoopTests()   // its fixtures: backend, holds, item

    @Test("the item's start is decoded before its end: the seek back opens no decoder at the seam")
    func theStartIsPrimedNearTheEnd() throws {
        let clip = unit.item("seam-primed.mp4", frames: 15)
        let player = try Player(item: clip, logger: quiet)
        player.consumeEvents(onThread: "test-end-handler") { event in
            guard case .didPlayToEndTime = event.event else { return }
            // Decoding is held from the end on: only frames decoded before it can be shown.
            unit.backend.holdDecoding(true)
            player.seek(to: .zero) { _ in }
            player.play()
        }
        defer { unit.backend.holdDecoding(false) }
        let display = try VirtualDisplay(player)
        player.play()
        // The virtual clock runs the clip in moments: the start is primed once the first frame
        // is shown (the clip is shorter than the 2 s lead); give its thread real time to decode.
        display.step(2, wait: 5)
        Thread.sleep(forTimeInterval: 1)
        display.step(29, wait: 2)
        let frames = display.shown.compactMap(\.frame)
        #expect(frames == Array(0..<15) + [0], "\(frames)")
        #expect(display.shown.last?.vsync == 30)
    }

    @Test("a handler that does not seek: the end's vsync waits at most the seam's limit, then the item stays paused on its last frame")
    func aHandlerThatDoesNotSeekCostsOneBoundedWait() throws {
        let player = try Player(item: unit.item("seam-noseek.mp4", frames: 6), logger: quiet)
        let ended = Atomic(false)
        player.consumeEvents(onThread: "test-end-handler") { event in
            if case .didPlayToEndTime = event.event { ended.store(true, ordering: .relaxed) }
        }
        let display = try VirtualDisplay(player)
        player.play()
        let start = ContinuousClock.now
        display.step(40)
        #expect((ContinuousClock.now - start).seconds < 5)
        let endedSeen = ended.load(ordering: .relaxed)
        #expect(endedSeen)
        #expect(display.shown.compactMap(\.frame) == Array(0..<6))
        #expect(player.rate == 0 && player.timeControlStatus == .paused)
    }

}

@Suite("Idle players: no busy loop while paused, decode threads end with their item")
struct IdlePlayerTests {
    let backend = FakeBackend()

    func queuePlayer(_ name: String, frames: Int, fps: Int32 = 50) -> QueuePlayer {
        QueuePlayer(items: [PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps)), backend: backend)], logger: quiet)
    }

    /// Runs `presenter` on a thread of its own until `stop`; returns a way to end it.
    func runInBackground<O: OutputDriver>(_ presenter: PlayerPresenter<O>, cpu: CPUClock? = nil) -> (stop: LoopStop, done: DispatchSemaphore) {
        let stop = LoopStop(), done = DispatchSemaphore(value: 0)
        let loop = UncheckedBox({ _ = try? presenter.run { cpu?.sample(); return !stop.stopped } })
        Thread.detachNewThread {
            loop.value()
            done.signal()
        }
        return (stop, done)
    }

    @Test("paused on a virtual clock, the loop waits for the player: a handful of vsyncs in a second, not millions")
    func pausedOnAVirtualClockDoesNotSpin() throws {
        // Long enough that an idle machine cannot play it to its end before the pause lands.
        let player = queuePlayer("idle-virtual.mp4", frames: 100_000)
        let output = ScriptedVirtualOutput()
        let presenter = try PlayerPresenter(player: player, output: output, logger: quiet)
        let vsyncs = Atomic<Int64>(0)
        presenter.onVsync = { n in vsyncs.store(n, ordering: .relaxed) }
        player.play()
        let (stop, done) = runInBackground(presenter)
        defer {
            stop.stop()
            #expect(done.wait(timeout: .now() + 10) == .success, "the loop did not end")
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while player.stats.presented < 10 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        player.pause()
        Thread.sleep(forTimeInterval: 0.1)
        let before = vsyncs.load(ordering: .relaxed)
        Thread.sleep(forTimeInterval: 1)
        let advanced = vsyncs.load(ordering: .relaxed) - before
        #expect(advanced <= 10, "\(advanced) vsyncs in 1 s while paused")
        // It still wakes at once for play: the next frames come.
        let presented = player.stats.presented
        player.play()
        let resumed = Date(timeIntervalSinceNow: 5)
        while player.stats.presented < presented + 5 && Date() < resumed { Thread.sleep(forTimeInterval: 0.005) }
        #expect(player.stats.presented >= presented + 5)
    }

    @Test("with nothing to play on a virtual clock the loop waits too, and an inserted item starts at once")
    func emptyOnAVirtualClockDoesNotSpin() throws {
        let player = QueuePlayer(logger: quiet)
        let output = ScriptedVirtualOutput()
        let presenter = try PlayerPresenter(player: player, output: output, logger: quiet)
        let vsyncs = Atomic<Int64>(0)
        presenter.onVsync = { n in vsyncs.store(n, ordering: .relaxed) }
        player.play()
        let (stop, done) = runInBackground(presenter)
        defer {
            stop.stop()
            #expect(done.wait(timeout: .now() + 10) == .success, "the loop did not end")
        }
        Thread.sleep(forTimeInterval: 0.2)
        let before = vsyncs.load(ordering: .relaxed)
        Thread.sleep(forTimeInterval: 1)
        let advanced = vsyncs.load(ordering: .relaxed) - before
        #expect(advanced <= 10, "\(advanced) vsyncs in 1 s with nothing to play")
        try player.insert(PlayerItem(url: backend.add("idle-late.mp4", .init(frames: 20, fps: 50)), backend: backend), after: nil)
        let deadline = Date(timeIntervalSinceNow: 5)
        while player.stats.presented < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(player.stats.presented >= 5)
    }

    @Test("paused on a real clock for 3 s, the presentation thread uses under 1% of a CPU")
    func pausedOnARealClockIsCheap() throws {
        let player = queuePlayer("idle-real.mp4", frames: 500)
        let driver = RealTimeDriver(refresh: 60)
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        let cpu = CPUClock()
        player.play()
        let (stop, done) = runInBackground(presenter, cpu: cpu)
        defer {
            stop.stop()
            #expect(done.wait(timeout: .now() + 10) == .success, "the loop did not end")
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while player.stats.presented < 10 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        player.pause()
        Thread.sleep(forTimeInterval: 0.2)
        let (cpu0, wall0) = (cpu.seconds, ContinuousClock.now)
        Thread.sleep(forTimeInterval: 3)
        let used = cpu.seconds - cpu0, wall = (ContinuousClock.now - wall0).seconds
        #expect(used / wall < 0.01, "the paused loop used \(used) s of CPU in \(wall) s")
    }
}
