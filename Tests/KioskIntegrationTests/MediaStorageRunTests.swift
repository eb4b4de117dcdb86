import Foundation
import Kiosk
import Media
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// Whole runs (headless output, virtual clock) with storage that misbehaves: FIFOs in a playlist,
/// files that appear late, streams whose timestamps jump.
@Suite(.serialized) struct MediaStorageRunTests {
    func run(_ config: KioskConfig, seconds: Double, lines: LogLines) throws -> HeadlessRun {
        try HeadlessRun(config, width: 320, height: 180, seconds: seconds, lines: lines)
    }

    func listConfig(_ paths: [String]) -> KioskConfig {
        var config = KioskConfig()
        config.playlist = paths.map { .init(uri: $0, path: $0) }
        return config
    }

    func folder(_ name: String) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A FIFO in a playlist folder is not opened: it is skipped with a log line naming it, and
    /// the other files play without a gap.
    @Test func aFIFOInAPlaylistFolderIsSkippedAndNamed() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let dir = try folder("fifo-folder")
        try FileManager.default.copyItem(atPath: clip, toPath: dir + "/a.mp4")
        #expect(mkfifo(dir + "/b.mp4", 0o600) == 0)
        try FileManager.default.copyItem(atPath: clip, toPath: dir + "/c.mp4")
        defer { unlink(dir + "/b.mp4") }
        let config = try KioskConfig.parse(#"{"playlist": {"directory": "\#(dir)"}}"#, baseDirectory: "/")
        #expect(config.playlist.map(\.uri) == ["a.mp4", "c.mp4"])
        let lines = LogLines()
        let result = try run(config, seconds: 4, lines: lines)
        #expect(result.frames.count == 120)
        #expect(result.frames.map { $0["vsync"] as! Int } == (0..<120).map { $0 * 2 })
        let skipped = lines.all.filter { $0.contains("not a regular file") }
        #expect(skipped.count == 1, "logged once, not on every pass: \(lines.all)")
        #expect(skipped.first?.contains("b.mp4") == true && skipped.first?.contains("a FIFO") == true)
        #expect(result.wallSeconds < 20, "took \(result.wallSeconds) s")
    }

    /// A FIFO named in a playlist (nobody writes to it) fails its item within the read limit,
    /// with the reason; the decode threads all end.
    @Test func aFIFOInAPlaylistFailsItsItemAndLeavesNoThread() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let fifo = TestMedia.folder + "/listed-\(UUID().uuidString).mp4"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let lines = LogLines()
        let result = try run(listConfig([clip, fifo, clip]), seconds: 3, lines: lines)
        let errors = lines.all.filter { $0.hasPrefix("level=error") && $0.contains(fifo) }
        #expect(errors.count == 1, "\(lines.all)")
        #expect(errors.first?.contains("timed out") == true, "\(errors)")
        #expect(Set(result.frames.map { $0["item"] as! Int }) == [0, 2])
        let vsyncs = result.frames.map { $0["vsync"] as! Int }
        #expect(vsyncs == (0..<vsyncs.count).map { $0 * 2 }, "\(zip(vsyncs, vsyncs.dropFirst()).filter { $1 - $0 != 2 })")
        // No thread is left on the FIFO: within one read limit of the end (a probe may be under
        // way then), this process holds no descriptor of it and no thread waits in the kernel for
        // a FIFO's writer (before: the probe's open(2) waited there for ever). (The process-wide
        // decode thread count would also count other tests' threads.)
        let deadline = Date(timeIntervalSinceNow: MediaIOLimits.standard.read + 2)
        while (openDescriptors(of: fifo) > 0 || threadsWaitingForAFIFOWriter() > 0) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(openDescriptors(of: fifo) == 0)
        #expect(threadsWaitingForAFIFOWriter() == 0)
        #expect(result.wallSeconds < 25, "took \(result.wallSeconds) s")
    }

    /// A file missing when the playlist starts and copied in after the first pass plays on a
    /// later pass, without a reload (a failed probe is tried again, with backoff).
    @Test func aFileThatAppearsAfterTheFirstPassPlaysOnALaterPass() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let late = TestMedia.folder + "/late-\(UUID().uuidString).mp4"
        let copied = Copied()
        // The file arrives once its first probe has failed and been reported.
        let lines = LogLines { line in
            guard line.hasPrefix("level=error"), line.contains(late), copied.claim() else { return }
            try? FileManager.default.copyItem(atPath: clip, toPath: late + ".part")
            rename(late + ".part", late)
        }
        let result = try run(listConfig([late, clip]), seconds: 8, lines: lines)
        let lateFrames = result.frames.filter { $0["item"] as? Int == 0 }
        #expect(copied.done)
        #expect(lateFrames.count >= 30, "the late file played \(lateFrames.count) frames")
        #expect((lateFrames.first?["t"] as? Double ?? 0) >= 1, "after the first pass")
        #expect(result.frames.map { $0["vsync"] as! Int } == (0..<result.frames.count).map { $0 * 2 })
    }

    /// A stream whose timestamps jump 10 s forward (or 19 s back) plays on without a freeze, a
    /// drop or a repeat: tools/check-trace.py finds nothing wrong, and every frame is shown.
    @Test(arguments: [10, -19]) func aTimestampJumpPlaysOnWithoutAGap(secondAt offset: Int) throws {
        let joined = try TestMedia.joinedRecordings(secondAt: offset)
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let result = try run(listConfig([joined, clip]), seconds: 6, lines: LogLines())
        let (status, report) = try Command.checkTrace(result.tracePath, ["--refresh", "60"])
        let figures = try #require(report["headless-0"])
        for name in ["gaps", "drops", "repeats", "cadence_errors"] {
            #expect(figures[name] as? Int == 0, "\(name): \(figures["problems"] ?? "")")
        }
        #expect(status == 0)
        // Two passes of 2 s + 1 s: each shows the 50 frames of the joined file.
        #expect(result.frames.filter { $0["item"] as? Int == 0 }.count == 100)
    }

    /// A file a third written (a copy in progress: its index not there yet) when a folder
    /// playlist starts, completed after the first pass, plays on a later pass.
    @Test func aFileCompletedAfterTheFirstPassPlaysOnALaterPass() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let whole = try Data(contentsOf: URL(fileURLWithPath: clip))
        let dir = try folder("partial")
        try FileManager.default.copyItem(atPath: clip, toPath: dir + "/a.mp4")
        let partial = dir + "/f.mp4"
        try whole.prefix(whole.count / 3).write(to: URL(fileURLWithPath: partial))
        let copied = Copied()
        let lines = LogLines { line in
            guard line.hasPrefix("level=error"), line.contains(partial), copied.claim() else { return }
            try? whole.write(to: URL(fileURLWithPath: partial + ".part"))
            rename(partial + ".part", partial)
        }
        let config = try KioskConfig.parse(#"{"playlist": {"directory": "\#(dir)"}}"#, baseDirectory: "/")
        let result = try run(config, seconds: 8, lines: lines)
        #expect(copied.done)
        #expect(result.frames.filter { $0["item"] as? Int == 1 }.count >= 30)
    }

    /// How many of this process's file descriptors refer to `path`.
    func openDescriptors(of path: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
    }

    /// This process's threads blocked opening a FIFO that has no writer (kernel wait channel
    /// `wait_for_partner`; only a FIFO's open waits there).
    func threadsWaitingForAFIFOWriter() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { (try? String(contentsOfFile: "/proc/self/task/\($0)/wchan", encoding: .utf8)) == "wait_for_partner" }.count
    }

    final class Copied: @unchecked Sendable {
        private let lock = NSLock()
        private var claimed = false
        func claim() -> Bool { lock.withLock { defer { claimed = true }; return !claimed } }
        var done: Bool { lock.withLock { claimed } }
    }
}
