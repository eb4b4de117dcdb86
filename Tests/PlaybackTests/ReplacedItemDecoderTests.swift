import Foundation
import Playback
import PlaybackTestSupport
import Testing

/// Issue 26: a queue whose next item is replaced again and again (a playlist queued anew per
/// `loadfile append`, items removed while the next one prerolls) must not keep the replaced
/// items' decode threads: each ends when its item leaves, not a wait's timeout later, so a burst
/// of replacements cannot pile them up.
@Suite("A replaced or removed next item keeps no decode thread")
struct ReplacedItemDecoderTests {
    let backend = FakeBackend()

    @Test("a looper replaced 20 times behind the item playing leaves the current and next items' threads only")
    func replacedLoopersLeaveNoDecoder() throws {
        let urls = (0..<3).map { backend.add("replaced-loop-\($0).mp4", .init(frames: 600, fps: 30)) }
        let player = QueuePlayer(logger: quiet)
        var looper = PlayerLooper(player: player, templateItems: urls.map { PlayerItem(url: $0, backend: backend) })
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        for _ in 0..<20 {
            looper.disableLooping()
            looper = PlayerLooper(player: player, templateItems: urls.map { PlayerItem(url: $0, backend: backend) },
                                  afterCurrentItem: true)
            display.step(3)
        }
        display.step(5)
        let left = player.waitForDecodeThreads(atMost: 2, timeout: 5)
        #expect(left <= 2, "decode threads left running: \(left)")
        #expect(backend.readersAlive.preroll == 0, "no replaced item's preroll reader is left open")
        looper.disableLooping()
        player.removeAllItems()
        #expect(player.waitForDecodeThreads(atMost: 0, timeout: 5) == 0)
    }
}
