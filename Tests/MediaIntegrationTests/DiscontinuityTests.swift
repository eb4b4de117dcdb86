import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// Streams whose timestamps jump (concatenated recordings, broadcast captures): the frames keep
/// their cadence across the jump, on one continuous timeline.
@Suite struct DiscontinuityTests {
    func decodedTimes(_ path: String) throws -> (pts: [Double], discontinuities: Int) {
        let decoder = try VideoDecoder(path: path, threads: 1)
        var pts: [Double] = []
        while let frame = try decoder.nextFrame() { pts.append(frame.pts.seconds) }
        return (pts, decoder.discontinuities)
    }

    @Test(arguments: [10, -19]) func framesKeepTheirCadenceAcrossATimestampJump(secondAt offset: Int) throws {
        let (pts, discontinuities) = try decodedTimes(try TestMedia.joinedRecordings(secondAt: offset))
        #expect(pts.count == 50)
        let steps = zip(pts, pts.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { abs($0 - 0.04) < 0.001 }, "steps off 40 ms: \(steps.enumerated().filter { abs($0.element - 0.04) >= 0.001 })")
        #expect(discontinuities == 1)
    }

    /// A clip without jumps is left as it is: no discontinuity, times as the file says.
    @Test func aStreamWithoutJumpsHasNoDiscontinuity() throws {
        let clip = try TestMedia.make("part-red-0s.ts", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "1", "-vf", "drawbox=c=red:t=fill:w=20:h=20",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-output_ts_offset", "0", "-f", "mpegts",
        ])
        let (pts, discontinuities) = try decodedTimes(clip)
        #expect(discontinuities == 0)
        #expect(pts.count == 25 && abs(pts[0]) < 0.001 && abs(pts[24] - 0.96) < 0.001)
    }
}

extension DiscontinuityTests {
    /// A forward gap in a container whose timestamps do not jump by design (Matroska: a
    /// variable-rate recording's still stretch) is the file's own timing and is kept.
    @Test func aForwardGapInMatroskaIsKept() throws {
        let mkv = try TestMedia.make("joined-10s.mkv", ["-i", try TestMedia.joinedRecordings(secondAt: 10), "-c", "copy", "-f", "matroska"])
        let (pts, discontinuities) = try decodedTimes(mkv)
        let steps = zip(pts, pts.dropFirst()).map { $1 - $0 }
        #expect(discontinuities == 0)
        #expect(steps.filter { $0 > 1 }.count == 1, "\(steps)")
    }
}
