import Foundation
import Testing
import TestSupport
@testable import KioskTests

/// `marquee` on the headless output with the real clock, playing a clip heavier than this machine
/// decodes and draws in real time: the timeline keeps the wall clock, and the frames it could not
/// show are counted as dropped.
@Suite(.serialized) struct ClockUnderLoadTests {
    /// Two seconds of 4K60 HEVC (x265, a keyframe every half second).
    static func heavyClip() throws -> String {
        try TestMedia.make("hevc-2160p60-2s.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=60", "-t", "2",
            "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "keyint=30:open-gop=0:log-level=error",
            "-pix_fmt", "yuv420p", "-tag:v", "hvc1", "-f", "mp4",
        ])
    }

    @Test func a4K60HEVCLoopPlaysAtTheClockWithDropsReported() throws {
        let clip = try Self.heavyClip()
        let clipSeconds = 2.0, clipFrames = 120
        let config = try MarqueeProcessTests().writeConfig([clip])
        let running = try MarqueeProcessTests.Running(config: config, exitAfter: 9, extra: ["--mode", "1280x720@60"])
        let status = running.wait(timeout: 120)
        #expect(status == 0, "\(running.log)")
        let lines = try running.traceLines()
        // The loop's passes end on the timeline every 2 s. The ratio is taken between the first
        // end and the last (the first picture is drawn late: the timeline starts when it is ready).
        let ends = lines.filter { $0["event"] as? String == "end-file" && $0["reason"] as? String == "eof" }.compactMap { $0["t"] as? Double }
        #expect(ends.count >= 3, "ends \(ends); log:\n\(running.log)")
        if ends.count >= 2, let firstEnd = ends.first, let lastEnd = ends.last {
            let ratio = Double(ends.count - 1) * clipSeconds / (lastEnd - firstEnd)
            #expect(ratio >= 0.95 && ratio <= 1.05, "\(ends.count - 1) passes of \(clipSeconds) s in \(lastEnd - firstEnd) s: timeline / wall \(ratio)")
        }
        // Every picture shown keeps the clock: at most half a second behind where the timeline
        // stands in its pass (the old player showed frames seconds late, as fast as they decoded).
        var lags: [Double] = []
        var pass = 0
        for line in lines {
            guard let t = line["t"] as? Double, let firstEnd = ends.first else { continue }
            if line["event"] as? String == "end-file" { pass += 1 }
            if line["type"] as? String == "frame", let pts = line["pts"] as? Double {
                let passStart = pass == 0 ? firstEnd - clipSeconds : ends[min(pass, ends.count) - 1]
                lags.append(t - passStart - pts)
            }
        }
        #expect(!lags.isEmpty && lags.allSatisfy { $0 <= 0.5 }, "seconds behind the clock: \(lags)")
        // Every frame due was shown or counted as dropped (by presentation or by the decoder).
        let stop = running.log.split(separator: "\n").last { $0.contains("msg=stopped") || $0.contains("msg=\"stopped\"") }
        let counts = try #require(stop.map { Self.fields(String($0)) }, "no stop line in:\n\(running.log)")
        let shown = counts["frames"] ?? 0, dropped = (counts["dropped"] ?? 0) + (counts["decoder-dropped"] ?? 0)
        let due = max(0, ends.count - 1) * clipFrames
        #expect(shown + dropped >= due * 9 / 10, "shown \(shown) + dropped \(dropped) of at least \(due) due: \(stop ?? "")")
        #expect(counts["stalls"] == 0, "\(stop ?? "")")
    }

    /// The numeric fields of a logfmt line.
    static func fields(_ line: String) -> [String: Int] {
        var out: [String: Int] = [:]
        for part in line.split(separator: " ") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            if let number = Int(value) { out[String(pair[0])] = number }
        }
        return out
    }
}
