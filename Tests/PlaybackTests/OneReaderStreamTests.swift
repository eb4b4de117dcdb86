import Foundation
import Playback
import PlaybackTestSupport
import Testing

/// A source one reader at a time can take (a UDP port, a camera's RTSP session) played alone in a
/// loop: its passes never have two readers alive at once, and it still loops.
@Suite("A stream one reader at a time can take")
struct OneReaderStreamTests {
    func play(oneReader: Bool) throws -> (backend: FakeBackend, shown: [Int64]) {
        let backend = FakeBackend()
        let url = backend.add("one-reader-\(oneReader).ts", .init(frames: 6, fps: 60))
        if oneReader { backend.readOneAtATime(url) }
        let player = QueuePlayer(logger: quiet)
        let looper = try PlayerLooper(player: player, templateItem: PlayerItem(url: url, backend: backend))
        let display = try VirtualDisplay(player)
        player.play()
        display.step(30)
        looper.disableLooping()
        player.removeAllItems()
        return (backend, display.shown.filter { $0.frame != nil }.map(\.vsync))
    }

    @Test("never opened for a second item while one reads it, and it still loops")
    func aLoneStreamIsNotPrerolledWhileItPlays() throws {
        let (backend, shown) = try play(oneReader: true)
        #expect(backend.mostReadersAlive.preroll == 0 && backend.mostReadersAlive.playback == 1, "\(backend.mostReadersAlive)")
        #expect(backend.readersOpened.playback >= 3, "passes played: \(backend.readersOpened)")
        #expect(shown.count >= 18, "\(shown.count) frames shown in 30 vsyncs")
    }
}
