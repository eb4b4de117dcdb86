import Foundation
import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

@Suite("Decode threads end when their item can no longer play")
struct DecodeThreadLifetimeTests {
    let backend = FakeBackend()

    @Test("an item that ended with .pause keeps no decode thread once no seek came; a seek starts one again")
    func decodeThreadsEndAfterAPausedEnd() throws {
        let url = backend.add("threads-pause.mp4", .init(frames: 15, fps: 30))
        let player = try Player(item: PlayerItem(url: url, backend: backend), logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(20)
        #expect(player.decodeThreadCount >= 1)
        display.step(20)   // past the end: paused on the last frame
        #expect(player.rate == 0)
        // The primed start lingers a moment for a seek, then goes: pulls go on (a display's vsyncs).
        let deadline = ContinuousClock.now + .seconds(10)
        while player.decodeThreadCount > 0 && ContinuousClock.now < deadline {
            display.step()
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(player.decodeThreadCount == 0)
        player.seek(to: .zero) { _ in }
        player.play()
        display.step()
        #expect(display.shown.last?.frame == 0)
        #expect(player.decodeThreadCount == 1)
    }

}

