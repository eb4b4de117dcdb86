import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing

/// The guide's loop (`seek(to: .zero)` in the did-play-to-end handler, then `play()`; or
/// `actionAtItemEnd = .none` and the seek alone) is gapless: frame 0 comes on the vsync the next
/// frame was due, exactly, on the virtual vsync.
@Suite("Seamless seek-to-zero loops, idle players and decode thread lifetimes")
struct SeamlessLoopTests {
    let backend = FakeBackend()

    func item(_ name: String, frames: Int, fps: Int32 = 30) -> PlayerItem {
        PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps)), backend: backend)
    }

    /// The vsyncs each shown frame lasted, and where frame 0 came back (the seams).
    func holds(_ display: VirtualDisplay) -> [Int64] {
        let frames = display.shown.filter { $0.frame != nil }
        return zip(frames, frames.dropFirst()).map { $1.vsync - $0.vsync }
    }

    @Test("did-play-to-end + seek(to: .zero) + play(): every frame, the last of each pass too, lasts 2 vsyncs (30 fps at 60 Hz)")
    func seekToZeroAndPlayInTheEndHandlerIsGapless() throws {
        let clip = item("seam-pause.mp4", frames: 15)
        let player = try Player(item: clip, logger: quiet)
        #expect(player.actionAtItemEnd == .pause)
        let ends = Atomic(0)
        player.consumeEvents(onThread: "test-end-handler") { event in
            guard case .didPlayToEndTime = event.event else { return }
            ends.add(1, ordering: .relaxed)
            player.seek(to: .zero) { _ in }
            player.play()
        }
        let display = try VirtualDisplay(player)
        player.play()
        display.step(30 * 10 + 1)  // ten passes of 15 frames, 2 vsyncs each
        let endCount = ends.load(ordering: .relaxed)
        #expect(endCount == 10)
        let frames = display.shown.compactMap(\.frame)
        #expect(frames.count == 150 + 1, "\(frames.count) frames shown")
        #expect(frames == (0..<151).map { $0 % 15 })
        let holds = holds(display)
        #expect(holds.allSatisfy { $0 == 2 }, "vsyncs per frame: \(holds)")
        #expect(player.stats.dropped == 0 && player.stats.delayed == 0)
    }

    @Test("actionAtItemEnd .none + seek(to: .zero) in the end handler: gapless too, frame 0 on the due vsync")
    func seekToZeroWithActionNoneIsGapless() throws {
        let clip = item("seam-none.mp4", frames: 15)
        let player = try Player(item: clip, logger: quiet)
        try player.setActionAtItemEnd(.none)
        player.consumeEvents(onThread: "test-end-handler") { event in
            guard case .didPlayToEndTime = event.event else { return }
            player.seek(to: .zero) { _ in }
        }
        let display = try VirtualDisplay(player)
        player.play()
        display.step(30 * 5 + 1)
        let frames = display.shown.compactMap(\.frame)
        #expect(frames == (0..<76).map { $0 % 15 })
        let holds = holds(display)
        #expect(holds.allSatisfy { $0 == 2 }, "vsyncs per frame: \(holds)")
    }

    @Test("nobody listening for the end: the end's vsync does not wait, and the pause holds the last frame")
    func withoutListenersTheEndDoesNotWait() throws {
        let player = try Player(item: item("seam-quiet.mp4", frames: 6), logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        let start = ContinuousClock.now
        display.step(40)
        #expect((ContinuousClock.now - start).seconds < 0.9)
        #expect(display.shown.compactMap(\.frame) == Array(0..<6))
        #expect(player.rate == 0)
    }

    @Test("a seek a replaced item left unfinished completes with false before replaceCurrentItem returns, on the caller's thread")
    func aStoppedRunsSeekCompletesThroughTheOutbox() throws {
        let first = item("outbox-a.mp4", frames: 300), second = item("outbox-b.mp4", frames: 30)
        let player = try Player(item: first, logger: quiet)
        let display = try VirtualDisplay(player)
        display.step()
        let results = Recorder<(Bool, Bool)>()
        let caller = pthread_self()
        player.seek(to: tm(5, 1)) { results.append(($0, pthread_equal(pthread_self(), caller) != 0)) }
        try player.replaceCurrentItem(with: second)
        #expect(results.all.count == 1)
        #expect(results.all.first?.0 == false)
        #expect(results.all.first?.1 == true)
    }
}

/// The CPU time of the thread that samples it last (CLOCK_THREAD_CPUTIME_ID), read from others.
final class CPUClock: Sendable {
    private let nanos = Atomic<Int64>(0)
    func sample() {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        nanos.store(Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec), ordering: .relaxed)
    }
    var seconds: Double { Double(nanos.load(ordering: .relaxed)) / 1e9 }
}
