import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

@Suite("Keeping the clock under load")
struct ClockKeepingTests {
    let unit = PlaybackTests.ClockKeepingTests()   // its fixtures: slowClip

    @Test func anOutputThatShowsEveryPictureFiveVsyncsLateDropsFramesAndKeepsTheClock() throws {
        let backend = FakeBackend()
        // Decoding keeps up (real time); drawing is the bottleneck, as on a slow display.
        let player = try Player(item: unit.slowClip(backend, seconds: 12, honoursFrameDrop: false), logger: quiet)
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.5, headStart: 3)
        display.drawVsyncs = 5
        player.play()
        display.run(through: 599)
        #expect(abs(player.currentTime().seconds / 10 - 1) < 0.01, "\(player.currentTime().seconds)")
        let stats = player.stats
        // 12 pictures a second of 30 frames: the other 18 are dropped (the old player showed
        // every frame and its timeline ran at 0.4).
        #expect(display.shown.count >= 115 && display.shown.count <= 125, "\(display.shown.count) pictures")
        #expect(stats.dropped >= 160, "\(stats)")
        #expect(display.worstLag(from: 0) < 0.151, "lag \(display.worstLag(from: 0)) s")
        // Presentation dropping frames tells the decoder to skip non-reference frames.
        #expect(backend.frameDropLevels.first == .nonReference, "\(backend.frameDropLevels)")
    }

}
