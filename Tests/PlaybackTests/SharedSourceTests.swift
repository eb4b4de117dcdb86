import Foundation
@testable import Playback
import PlaybackTestSupport
import Synchronization
import Testing

/// An item opens its file once (`MediaSource`): the asset's probe, the item's preroll, its own
/// reader after the hand-over and a seek back to its start all come from one source.
@Suite struct SharedSourceTests {
    /// The fake backend's per-call readers behind a source that counts how often each file is opened.
    final class Counting: MediaBackend, @unchecked Sendable {
        let fake = FakeBackend()
        let opened = Mutex<[String: Int]>([:])

        func probe(_ url: URL) throws -> AssetDescription { try fake.probe(url) }
        func openReader(_ url: URL) throws -> any FrameReader { try fake.openReader(url) }
        func openSource(_ url: URL) throws -> any MediaSource {
            opened.withLock { $0[url.lastPathComponent, default: 0] += 1 }
            return Source(backend: fake, url: url)
        }
        func opens(_ name: String) -> Int { opened.withLock { $0[name] ?? 0 } }

        final class Source: MediaSource, @unchecked Sendable {
            let backend: FakeBackend
            let url: URL
            init(backend: FakeBackend, url: URL) {
                self.backend = backend
                self.url = url
            }
            func describe() throws -> AssetDescription { try backend.probe(url) }
            func openReader() throws -> any FrameReader { try backend.openReader(url) }
            func openPrerollReader() throws -> any FrameReader { try backend.openPrerollReader(url) }
            func openAudioReader() throws -> (any AudioReader)? { nil }
            var isUsable: Bool { true }
        }
    }

    @Test func aQueuedItemAndItsLoopOpenTheirFileOnce() throws {
        let backend = Counting()
        let items = ["a.mp4", "b.mp4"].map { PlayerItem(url: backend.fake.add($0, .init(frames: 30, fps: 30)), backend: backend) }
        for (index, item) in items.enumerated() { item.playlistIndex = index }
        let player = QueuePlayer(items: items, logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(62)  // a.mp4, then b.mp4 (prerolled and handed over)
        try player.setActionAtItemEnd(.none)
        display.step(60)
        for _ in 0..<2 {
            player.seek(to: .zero)  // back to b's start
            display.step(64)
        }
        // b's 30 frames three times: its pass, then two seeks back to its start.
        let ofB = display.shown.filter { $0.item == 1 }.compactMap(\.frame)
        #expect(ofB.filter { $0 == 0 }.count == 3 && ofB.filter { $0 == 29 }.count == 3, "\(ofB)")
        #expect(backend.opens("a.mp4") == 1)
        #expect(backend.opens("b.mp4") == 1)
        #expect(backend.fake.readersOpened.playback >= 3, "\(backend.fake.readersOpened)")
    }
}
