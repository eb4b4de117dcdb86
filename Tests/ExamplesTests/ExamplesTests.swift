import Foundation
import Testing
import TestSupport

/// Runs the example programs (Examples/) built next to this test binary and checks what they print.
/// `make test` builds them (`swift build --build-tests` builds every target). Serialized: the
/// examples' frame counts are timed, and GuidePackage's `swift build` (nested here) would load the
/// machine under them.
@Suite(.serialized) struct ExamplesTests {
    struct NotBuilt: Error, CustomStringConvertible {
        let description: String
    }

    struct Run {
        let status: Int32
        let lines: [String]
        var text: String { lines.joined(separator: "\n") }
    }

    /// The build folder: where SwiftPM puts this test binary and the example executables.
    static var binFolder: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    func run(_ name: String, _ arguments: [String], timeout: Double = 120) throws -> Run {
        let binary = Self.binFolder.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw NotBuilt(description: "\(binary.path) is not built (swift build --build-tests builds it)")
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        // The example exits by itself; a hang is killed after `timeout`.
        let result = Command.collect(process, output: out, timeout: timeout)
        let lines = result.text.split(separator: "\n").map(String.init)
        return Run(status: result.status, lines: lines)
    }

    @Test func theExamplesNeedAFileAndSaySo() throws {
        for name in ["PlayFileExample", "QueuePlayerExample"] {
            let run = try run(name, [])
            #expect(run.status == 2 && run.text.hasPrefix("usage: \(name) FILE"), "\(name): \(run.status) \(run.text)")
        }
    }

    /// The figures of a line `... N frames presented, D dropped ...`.
    func frames(in line: String) -> (presented: Int, dropped: Int)? {
        let words = line.split(separator: " ")
        guard let p = words.firstIndex(of: "presented,"), p > 1, let presented = Int(words[p - 2]),
              p + 1 < words.count, let dropped = Int(words[p + 1]) else { return nil }
        return (presented, dropped)
    }

    @Test func playFileExampleLoadsPlaysWhenReadyAndLoopsBySeekingToZero() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let run = try run("PlayFileExample", [clip, "2.5"])
        #expect(run.status == 0, "\(run.text)")
        let text = run.text
        #expect(text.contains("track 1: video h264 320x180 30.0 fps, rotated 0 degrees"), "\(text)")
        // Status observed before attaching: unknown first, then ready, then play.
        let unknown = run.lines.firstIndex { $0.hasSuffix("item status: unknown") }
        let ready = run.lines.firstIndex { $0.hasSuffix("item status: readyToPlay") }
        #expect(unknown != nil && ready != nil && unknown! < ready!, "\(text)")
        #expect(text.contains(" = 1.000}, presentation size 320x180; playing"), "\(text)")
        #expect(text.contains("didPlayToEndTime (1): seeking to zero"), "\(text)")
        // 2.5 s of a 1 s clip on a display paced by the wall clock: two ends, each followed by a
        // seek to zero that landed, and about 75 frames (a frame that came too late on a busy
        // machine is dropped and counted, not shown late).
        #expect(text.contains("didPlayToEndTime (2): seeking to zero"), "\(text)")
        let last = try #require(run.lines.last { $0.contains("stopped after 2.5 s:") }, "\(text)")
        #expect(last.hasSuffix("played to the end 2 times, 2 seeks to zero landed"), "\(last)")
        let figures = try #require(frames(in: last), "\(last)")
        #expect((65...80).contains(figures.presented + figures.dropped) && figures.presented > 0, "\(last)")
    }

    @Test func queuePlayerExampleLogsBoundariesAndTheFailedItemsError() throws {
        let clip = try TestMedia.clip(seconds: 1.5, fps: 30)
        let run = try run("QueuePlayerExample", [clip])
        #expect(run.status == 0, "\(run.text)")
        let text = run.text
        #expect(text.contains("appended item 2 (marquee-example-missing-"), "\(text)")
        #expect(text.contains("appended item 3 (\(URL(fileURLWithPath: clip).lastPathComponent))"), "\(text)")
        // Boundaries at 0.5 s and 1.0 s of the 1.5 s clip, in each playable item.
        #expect(text.contains("boundaries at {300/600 = 0.500} and {600/600 = 1.000}"), "\(text)")
        let crossings = run.lines.filter { $0.contains("crossed boundary") }
        #expect(crossings.count == 4, "\(text)")
        #expect(text.contains("every decode thread has ended"), "\(text)")
        #expect(crossings.map { $0.contains("{300/600 = 0.500} in item 1") }.first == true, "\(text)")
        #expect(crossings.contains { $0.contains("{600/600 = 1.000} in item 3") }, "\(text)")
        #expect(!crossings.contains { $0.contains("in item 2") }, "\(text)")
        // The missing file: failed, with FFmpeg's reason.
        let failed = try #require(run.lines.first { $0.contains("item 2 status: failed:") }, "\(text)")
        #expect(failed.contains("avformat_open_input failed: No such file or directory"), "\(failed)")
        #expect(text.contains("item 1 status: readyToPlay") && text.contains("item 3 status: readyToPlay"), "\(text)")
        // Two playable items of 45 frames each, every one presented or (late on a busy machine)
        // dropped, and nothing left in the queue.
        let last = try #require(run.lines.last { $0.contains("queue played out:") }, "\(text)")
        #expect(last.hasSuffix("current item: none"), "\(last)")
        let figures = try #require(frames(in: last), "\(last)")
        #expect(figures.presented + figures.dropped == 90 && figures.presented > 0, "\(last)")
    }
}
