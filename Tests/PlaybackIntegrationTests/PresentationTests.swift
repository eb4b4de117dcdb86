import Foundation
import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

@Suite struct SupportTests {
    @Test func queueIsBoundedAndTimesOut() {
        let queue = FrameQueue<Int>(capacity: 2)
        #expect(queue.push(1, timeout: 0) == .pushed)
        #expect(queue.push(2, timeout: 0) == .pushed)
        #expect(queue.push(3, timeout: 0.01) == .timedOut)
        guard case .element(1) = queue.pop(timeout: 0) else { Issue.record("expected 1"); return }
        #expect(queue.push(3, timeout: 0) == .pushed)
        queue.close()
        guard case .element(2) = queue.pop(timeout: 0) else { Issue.record("expected 2"); return }
        guard case .element(3) = queue.pop(timeout: 0) else { Issue.record("expected 3"); return }
        guard case .closed = queue.pop(timeout: 0) else { Issue.record("expected closed"); return }
    }

    /// Decoding runs up to `decodeAhead` frames ahead, but big frames (4K, RGBA) stop it at 8 MB
    /// of frames, and never fewer than 1.
    @Test(arguments: [(0, 6), (1 << 20, 6), (12 << 20, 1), (100 << 20, 1), (8 << 20, 1), (4 << 20, 2), (3 << 20, 2), (2 << 20, 4)])
    func bigFramesRunFewerFramesAhead(frameBytes: Int, ahead: Int) throws {
        let backend = FakeBackend()
        let url = backend.add("big.mp4", .init(frames: 60, fps: 30, frameBytes: frameBytes))
        let player = try Player(item: PlayerItem(url: url, backend: backend), logger: Logger(level: .error))
        player.play()
        let display = try VirtualDisplay(player)
        // Playing for 20 vsyncs (10 frames): the start's allowance (`ItemFeeder.startFrames`, the
        // first frames queued whatever their size before the item plays) is over. Beyond the
        // frames counted as presented, the decode thread has decoded the queue's worth (it decodes
        // a frame only when the queue has room for it) and the few frames the player and the
        // presentation loop hold outside it (3 here in every case: the next frames, taken to see
        // when they are due).
        display.step(20)
        func beyond() -> Int { backend.decodedCount - player.stats.presented }
        let deadline = Date(timeIntervalSinceNow: 60)  // a busy machine may run the decode thread late
        while beyond() < ahead && Date() < deadline { usleep(1000) }
        usleep(100_000)
        #expect((ahead...ahead + 3).contains(beyond()), "\(backend.decodedCount) frames decoded, \(player.stats.presented) shown")
    }

    /// A preroll's queue grows when its item starts playing; the frames it holds keep their order.
    @Test func aQueueGrowsAndShrinksKeepingItsOrder() {
        let queue = FrameQueue<Int>(capacity: 2)
        #expect(queue.push(1, timeout: 0) == .pushed)
        #expect(queue.push(2, timeout: 0) == .pushed)
        guard case .element(1) = queue.pop(timeout: 0) else { Issue.record("expected 1"); return }
        #expect(queue.push(3, timeout: 0) == .pushed)  // wraps around the ring
        #expect(queue.push(4, timeout: 0.01) == .timedOut)
        queue.setCapacity(4)
        #expect(queue.capacity == 4)
        for n in 4...5 { #expect(queue.push(n, timeout: 0) == .pushed) }
        #expect(queue.push(6, timeout: 0.01) == .timedOut)
        queue.setCapacity(1)
        #expect(queue.push(6, timeout: 0.01) == .timedOut)
        for n in 2...5 {
            guard case .element(let got) = queue.pop(timeout: 0), got == n else { Issue.record("expected \(n)"); return }
        }
        #expect(queue.push(6, timeout: 0) == .pushed)
        #expect(queue.push(7, timeout: 0.01) == .timedOut)
    }

}
