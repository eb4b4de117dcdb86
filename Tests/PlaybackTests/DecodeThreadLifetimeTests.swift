import Foundation
import Playback
import PlaybackTestSupport
import Testing

@Suite("Decode threads end when their item can no longer play")
struct DecodeThreadLifetimeTests {
    let backend = FakeBackend()

    @Test("an item removed from a queue, and the rest of the queue removed, keep no decode thread")
    func decodeThreadsEndWhenItemsLeaveTheQueue() throws {
        let items = (0..<3).map { PlayerItem(url: backend.add("threads-q\($0).mp4", .init(frames: 300, fps: 30)), backend: backend) }
        let player = QueuePlayer(items: items, logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        #expect(player.decodeThreadCount >= 2)   // the current item's and the next one's preroll
        player.remove(items[1])
        player.remove(items[2])
        #expect(player.waitForDecodeThreads(atMost: 1, timeout: 5) == 1)
        player.removeAllItems()
        #expect(player.waitForDecodeThreads(atMost: 0, timeout: 5) == 0)
    }
}

