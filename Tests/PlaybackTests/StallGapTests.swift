import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing

/// A live source that goes quiet twice (its reader waits for data that does not come, long enough
/// for the player to stall) and whose frames come back later on the timeline than where the stall
/// holds (a reopened stream starts at its first keyframe, later than where the last frame ended).
/// On the paced display of ClockKeepingTests: 60 Hz, decoding in virtual time.
@Suite struct StallGapTests {
    @Test func framesBackAfterAGapEndEachStallAtOnce() throws {
        let backend = FakeBackend()
        // 30 fps, decoded at real time: by vsync 119 frames 0-62 are decoded, by vsync 329 (after
        // a quiet 1.5 s) 0-122. The frames after each quiet come 27 frames (0.9 s) later.
        let clip = FakeBackend.Clip(frames: 30 * 60, fps: 30, gaps: [63: 27, 123: 27])
        let player = try Player(item: PlayerItem(url: backend.add("live.ts", clip), backend: backend), logger: quiet)
        player.stallTimeout = 0.5
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.5, headStart: 3)
        player.play()
        var resumedAfter: [Int64?] = []
        for (quietFrom, back) in [(Int64(120), 63), (330, 123)] {
            display.run(through: quietFrom - 1)
            display.decodesPerVsync = 0
            display.run(through: quietFrom + 89)  // 1.5 s without a frame
            #expect(player.isStalled, "no stall in the quiet from vsync \(quietFrom)")
            let held = player.currentTime()
            display.decodesPerVsync = 0.5
            display.run(through: quietFrom + 209)
            // The first frame after the gap is shown as soon as it is decoded, and ends the stall.
            let resumed = display.shown.first { $0.frame >= back }
            #expect(resumed != nil, "frame \(back), after the gap, never shown (held at \(held.seconds) s)")
            resumedAfter.append(resumed.map { $0.vsync - (quietFrom + 90) })
            #expect(!player.isStalled)
            // The timeline went on from that frame: 0.9 s further than where it held.
            let expected = held.seconds + 0.9 + 2
            #expect(abs(player.currentTime().seconds - expected) < 0.1, "at \(player.currentTime().seconds) s, not \(expected) s")
        }
        #expect(resumedAfter.allSatisfy { $0.map { $0 <= 3 } ?? false }, "vsyncs from decoding again to the picture: \(resumedAfter)")
        #expect(player.stats.stalls == 2, "\(player.stats)")
        // Frames keep coming after the second return (the queue is taken from).
        let last = display.shown.last?.frame ?? -1
        #expect(last >= 175, "last frame shown \(last)")
    }
}
