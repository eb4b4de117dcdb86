@testable import Playback
import PlaybackTestSupport
import Testing

/// Times from a file turned into frame counts: never a trap, always within 0...cap.
@Suite struct WholeFramesTests {
    @Test func ordinaryTimesRoundToTheNearestFrame() {
        #expect(wholeFrames(0.010, rate: 48_000, atMost: 1_000) == 480)
        #expect(wholeFrames(0.5, rate: 48_000, atMost: 1_000) == 1_000)
        #expect(wholeFrames(-0.5, rate: 48_000, atMost: 1_000) == 0)
    }

    @Test(arguments: [1e300, -1e300, Double.infinity, -Double.infinity, Double.nan, 9.3e18 / 48_000])
    func hostileTimesStayInRange(seconds: Double) {
        let frames = wholeFrames(seconds, rate: 48_000, atMost: 4_800)
        #expect((0...4_800).contains(frames))
        #expect(frames == (seconds > 0 ? 4_800 : 0))
    }
}
