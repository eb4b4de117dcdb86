import Foundation
import Testing
import TestSupport
@testable import KioskTests

/// `make soak` in short (tools/soak.py on the `marquee` binary next to this test binary): a
/// mixed playlist for 1,000 transitions, and each hostile file between two good clips.
@Suite(.serialized) struct SoakTests {
    /// Runs tools/soak.py with `arguments`; its exit status, what it printed and its results file.
    func soak(_ arguments: [String]) throws -> (status: Int32, output: String, results: [String: Any]) {
        let binary = MarqueeProcessTests.binary.path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw MarqueeProcessTests.NotBuilt(description: "\(binary) is not built")
        }
        let results = TestMedia.folder + "/soak-\(UUID().uuidString).json"
        let run = try Command.run("python3", [Command.repository + "/tools/soak.py", "--marquee", binary, "--results", results] + arguments,
                                  mergeErrors: true)
        let parsed = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: results)))) as? [String: Any]
        return (run.status, run.text, parsed ?? [:])
    }

    /// 1,000 transitions (good clips, a missing file, random bytes, an empty file): the process
    /// stays up, fds and threads stay flat, the trace has no gap, drop, repeat or blank, every bad
    /// item ends with an error naming it. (Memory is judged by the 10,000-transition `make soak`.)
    @Test func aThousandTransitionsOfAMixedPlaylistAreGaplessWithFlatFdsAndThreads() throws {
        let (status, output, results) = try soak(["--only", "soak", "--transitions", "1000"])
        let figures = try #require(results["soak"] as? [String: Any], "no results; output:\n\(output)")
        #expect(figures["transitions"] as? Int ?? 0 >= 1000)
        for name in ["gaps", "drops", "repeats", "cadence_errors", "blanks_after_start", "incomplete_good_runs"] {
            #expect(figures[name] as? Int == 0, "\(name)")
        }
        #expect((figures["failures"] as? [String])?.isEmpty == true, "\(figures["failures"] ?? "")")
        #expect(status == 0, "\(output)")
    }

    /// Zero bytes, random bytes, text, truncated, bit-flipped, no moov, audio only, huge
    /// dimensions, timestamp jumps, and a folder whose files change while it plays: the process
    /// stays up, good clips around each keep every frame with no gap, an item that shows nothing
    /// ends with an error naming the file.
    @Test func hostileFilesAreSkippedWithTheirErrorWhileGoodClipsKeepPlaying() throws {
        let (status, output, results) = try soak(["--only", "torture"])
        let cases = try #require(results["torture"] as? [[String: Any]], "no results; output:\n\(output)")
        #expect(cases.count >= 20)
        for item in cases {
            let failures = item["failures"] as? [String] ?? ["no failures field"]
            #expect(failures.isEmpty, "\(item["kind"] ?? "?"): \(failures.joined(separator: "; "))")
        }
        #expect(status == 0, "\(output)")
    }
}
