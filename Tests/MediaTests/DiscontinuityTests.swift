import Foundation
import Media
import Playback
import Testing
import TestSupport

/// Streams whose timestamps jump (concatenated recordings, broadcast captures): the frames keep
/// their cadence across the jump, on one continuous timeline.
@Suite struct DiscontinuityTests {
    /// Two one-second 25 fps MPEG-TS recordings joined byte for byte; the second's timestamps
    /// start `secondAt` seconds after the first's (10 s later, or 19 s earlier).
    static func joinedRecordings(secondAt offset: Int) throws -> String {
        let name = "joined-\(offset > 0 ? "forward" : "backward")-\(abs(offset))s.ts"
        let path = TestMedia.folder + "/" + name
        if FileManager.default.fileExists(atPath: path) { return path }
        let base = offset > 0 ? 0 : -offset
        func part(_ at: Int, _ colour: String) throws -> Data {
            let file = try TestMedia.make("part-\(colour)-\(at)s.ts", [
                "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "1", "-vf", "drawbox=c=\(colour):t=fill:w=20:h=20",
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-output_ts_offset", "\(at)", "-f", "mpegts",
            ])
            return try Data(contentsOf: URL(fileURLWithPath: file))
        }
        let joined = try part(base, "red") + part(base + offset, "blue")
        try joined.write(to: URL(fileURLWithPath: path + ".part"))
        try FileManager.default.moveItem(atPath: path + ".part", toPath: path)
        return path
    }

    func decodedTimes(_ path: String) throws -> (pts: [Double], discontinuities: Int) {
        let decoder = try VideoDecoder(path: path, threads: 1)
        var pts: [Double] = []
        while let frame = try decoder.nextFrame() { pts.append(frame.pts.seconds) }
        return (pts, decoder.discontinuities)
    }

    @Test(arguments: [10, -19]) func framesKeepTheirCadenceAcrossATimestampJump(secondAt offset: Int) throws {
        let (pts, discontinuities) = try decodedTimes(try Self.joinedRecordings(secondAt: offset))
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
