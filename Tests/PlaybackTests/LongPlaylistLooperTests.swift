import Foundation
import Synchronization
import Playback
import PlaybackTestSupport
import Testing

/// Issue 26: a looped playlist of any length costs the looper only the replicas it queues; its
/// template items are made when due (a million-entry M3U made a PlayerItem and an Asset each).
@Suite("A long looped playlist makes its items when due")
struct LongPlaylistLooperTests {
    let backend = FakeBackend()

    @Test("100,000 entries: 3 items made at the start, one more per item played, in playlist order")
    func aLongSourceMakesOnlyTheQueuedItems() throws {
        let urls = (0..<4).map { backend.add("long-\($0).mp4", .init(frames: 6, fps: 60)) }
        let made = Mutex<[Int]>([])
        let source = PlayerLooper.TemplateSource(count: 100_000) { [backend] index in
            made.withLock { $0.append(index) }
            return PlayerItem(url: urls[index % urls.count], backend: backend)
        }
        let player = QueuePlayer(logger: quiet)
        let looper = PlayerLooper(player: player, templates: source)
        #expect(looper.status == .ready)
        #expect(made.withLock { $0 } == [0, 1, 2], "the replica playing and two behind it")
        #expect(player.items().map(\.playlistIndex) == [0, 1, 2])
        let display = try VirtualDisplay(player)
        player.play()
        display.step(6 * 5)  // five items of 6 frames at 60 Hz
        let playedIndices = display.shown.compactMap { $0.frame == nil ? nil : $0.item }
        #expect(Array(Set(playedIndices)).sorted() == Array(0..<5), "\(Set(playedIndices))")
        let count = made.withLock { $0.count }
        #expect(count <= 5 + 3, "items made: \(count) for 5 played")
        #expect(made.withLock { $0 } == Array(0..<count), "made in order, each once")
        looper.disableLooping()
        player.removeAllItems()
    }

    @Test("appending a source of 50,000 entries makes none of them until they are due")
    func anAppendedSourceMakesNothingAtOnce() throws {
        let url = backend.add("append-long.mp4", .init(frames: 6, fps: 60))
        let made = Mutex(0)
        let player = QueuePlayer(logger: quiet)
        let looper = PlayerLooper(player: player, templateItems: (0..<2).map { _ in PlayerItem(url: url, backend: backend) })
        looper.append(templates: PlayerLooper.TemplateSource(count: 50_000) { [backend] _ in
            made.withLock { $0 += 1 }
            return PlayerItem(url: url, backend: backend)
        })
        // The window of 3 was 0, 1, 0; the replica behind the next is made again: the first new one.
        #expect(made.withLock { $0 } == 1)
        #expect(player.items().map(\.playlistIndex) == [0, 1, 2])
        player.removeAllItems()
        looper.disableLooping()
    }
}
