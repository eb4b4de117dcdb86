import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing

/// How much decoding runs ahead, and how many decoders live at once: a decode thread decodes a
/// frame only when its queue has room for it, and the next item's preroll decodes its first
/// frames with a preroll reader, closes it, and opens the item's own reader only once the playing
/// item's reader has gone (or the item plays), skipping the frames it already gave.
@Suite struct PrerollDecoderTests {
    let backend = FakeBackend()

    func item(_ name: String, frames: Int, index: Int) -> PlayerItem {
        let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: 30)), backend: backend)
        item.playlistIndex = index
        return item
    }

    @Test func theNextItemsReaderOpensOnlyOnceThePlayingItemsHasGone() throws {
        // Long enough that each item's preroll starts well before the item before it has decoded
        // its last frame.
        let player = QueuePlayer(items: (0..<3).map { item("\($0).mp4", frames: 60, index: $0) }, logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(180 * 2 + 4)
        // Every frame of every item, once, in order, two vsyncs apart: the change is gapless and the
        // reopened readers skip exactly the frames their prerolls gave.
        let shown = display.shown.filter { $0.frame != nil }
        #expect(shown.map { $0.frame! } == Array(0..<60) + Array(0..<60) + Array(0..<60))
        #expect(shown.map { $0.item! } == Array(repeating: 0, count: 60) + Array(repeating: 1, count: 60) + Array(repeating: 2, count: 60))
        #expect(display.frameVsyncs == (0..<180).map { Int64($0 * 2) })
        // Items 1 and 2 were prerolled by a preroll reader (unless the item before had already let
        // its reader go when the preroll thread came to open one: then the item's own opens at
        // once), and never had their own reader while the item before them still had one.
        #expect((1...2).contains(backend.readersOpened.preroll))
        #expect(backend.readersOpened.playback == 3)
        #expect(backend.mostReadersAlive.playback == 1)
    }

}
