import SystemCalls
import Foundation
import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport
@testable import KioskTests

/// Logs under journald: each line's syslog priority when standard error is the journal's stream.
@Suite struct JournalLogTests {

    /// A playing marquee whose standard error is "the journal" (a pipe named by JOURNAL_STREAM):
    /// every line has its priority, an item that cannot play is an error (`<3>`), each item change
    /// is one info line, and why hardware decoding is not used is said at most once.
    @Test func marqueeUnderTheJournalPrefixesEveryLine() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let config = TestMedia.folder + "/journal-\(UUID().uuidString).json"
        try TestConfig.write(#"{"playlist": [{"uri": "\#(clip)"}, {"uri": "/nonexistent/missing.mp4"}, {"uri": "\#(clip)", "start": 0.5}], "loop": true}"#, to: config)
        let process = Process()
        process.executableURL = MarqueeProcessTests.binary
        process.arguments = ["--config", config, "--output", "headless", "--mode", "320x180@60", "--exit-after", "5", "--socket", "none"]
        let pipe = Pipe()
        var info = stat()
        #expect(fstat(pipe.fileHandleForWriting.fileDescriptor, &info) == 0)
        // No journal socket there: every record falls back to a priority-prefixed line.
        process.environment = ProcessInfo.processInfo.environment.merging(["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)",
                                                                           "MARQUEE_JOURNAL_SOCKET": "/nonexistent/journal.sock"]) { $1 }
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let result = Command.collect(process, output: pipe, timeout: 60)
        let lines = result.text.split(separator: "\n").map(String.init)
        #expect(result.end == ProcessEnd(status: 0, signalled: false))
        let priorities = ["debug": "<7>", "info": "<6>", "warning": "<4>", "error": "<3>"]
        for line in lines {
            let level = line.split(separator: " ").first.flatMap { $0.split(separator: "=").last }.map(String.init) ?? ""
            let prefix = priorities.first { line.hasPrefix("\($0.value)level=\($0.key) ") }
            #expect(prefix != nil, "no priority: \(line)")
            _ = level
        }
        #expect(lines.contains { $0.hasPrefix("<3>level=error msg=\"cannot play item; skipped\"") && $0.contains("missing.mp4") },
                "\(lines.joined(separator: "\n"))")
        let playing = lines.filter { $0.hasPrefix("<6>level=info msg=playing ") }
        #expect(playing.count >= 3, "one line per item change: \(playing)")
        #expect(playing.allSatisfy { !$0.contains("item=0 ") }, "items count from 1")
        #expect(lines.filter { $0.contains("hardware decoding not in use") }.count <= 1)
        #expect(lines.filter { $0.contains("av_hwdevice_ctx_create") }.count <= 1, "no reason repeated with each file")
        #expect(lines.contains { $0.contains("cannot play item; skipped") && $0.contains("item=2 ") }, "items count from 1")
        print("journal: \(lines.count) lines, \(playing.count) item changes logged")
    }

    /// FFmpeg's own messages (a damaged clip's decoding errors) come out as log records with their
    /// component, never as FFmpeg's raw `[h264 @ 0x...]` lines; so does --check-config's probing.
    @Test func ffmpegsMessagesAreLogRecords() throws {
        let config = try TestConfig.write(#"{"playlist": [{"uri": "\#(try TestMedia.corruptClip())"}], "loop": false}"#,
                                          named: "ffmpeg-log-\(UUID().uuidString).json")
        let result = try Command.run(MarqueeProcessTests.binary.path, ["--config", config, "--output", "headless", "--mode", "320x180@60",
                                                                      "--clock", "virtual", "--exit-after", "5", "--socket", "none",
                                                                      "--log-level", "debug"])
        let lines = result.errorText.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(result.errorText.suffix(2000))")
        #expect(lines.allSatisfy { $0.hasPrefix("level=") }, "raw lines: \(lines.filter { !$0.hasPrefix("level=") }.prefix(5))")
        let ffmpeg = lines.filter { $0.contains(#"msg="ffmpeg: "#) }
        #expect(ffmpeg.contains { $0.hasPrefix("level=error") && $0.contains("component=h264") }, "\(lines.suffix(30))")
        #expect(ffmpeg.count <= 20, "rate-limited: \(ffmpeg.count)")
        // hwdec auto tried VAAPI, CUDA and V4L2 first (none here): FFmpeg's complaints are debug lines.
        #expect(!ffmpeg.contains { !$0.hasPrefix("level=debug") && ($0.contains("component=AVHWDeviceContext") || $0.contains("_v4l2m2m")) },
                "\(ffmpeg)")
        #expect(!ffmpeg.contains { $0.contains("component=NULL") })
        print("ffmpeg via the logger: \(ffmpeg.count) lines, e.g. \(ffmpeg.first ?? "none")")

        let garbage = try TestConfig.write(#"{"playlist": [{"uri": "\#(try TestMedia.garbage())"}]}"#, named: "ffmpeg-garbage-\(UUID().uuidString).json")
        let checked = try Command.run(MarqueeProcessTests.binary.path, ["--config", garbage, "--check-config", "--log-level", "debug"])
        #expect(checked.status == 2)
        #expect(checked.errorText.split(separator: "\n").allSatisfy { $0.hasPrefix("level=") || $0.contains(": cannot be played: ") || $0.hasSuffix(": nothing in the playlist can be played") },
                "\(checked.errorText)")
    }

    // MARK: The journal's native socket

    /// No journald (or a queue that is full): each record the socket refuses is a priority-prefixed
    /// line on standard error; none is lost and none is sent twice.
    @Test func recordsTheSocketRefusesFallBackToPrefixedLines() throws {
        let lines = Mutex<[String]>([])
        let absent = try #require(JournalSocket(path: "/nonexistent/journal.sock", identifier: "marquee"))
        Logger(level: .info, priorityPrefix: true, journal: absent) { line in lines.withLock { $0.append(line) } }.warning("w", ["uri": "x"])
        #expect(lines.withLock { $0 } == ["<4>level=warning msg=w uri=x"])
        #expect(JournalSocket(path: "", identifier: "marquee") == nil)
        #expect(JournalSocket(path: "/" + String(repeating: "p", count: 200), identifier: "marquee") == nil)

        // A journal that does not read: its queue fills, and the rest go to standard error.
        let journal = try FakeJournal()
        let socket = try #require(JournalSocket(path: journal.path, identifier: "marquee"))
        lines.withLock { $0 = [] }
        let logger = Logger(level: .info, priorityPrefix: true, journal: socket) { line in lines.withLock { $0.append(line) } }
        let sent = 2000
        for i in 0..<sent { logger.info("record", ["n": "\(i)"]) }
        let fallen = lines.withLock { $0 }
        let received = journal.collect(count: sent, timeout: 1)
        #expect(!fallen.isEmpty && !received.isEmpty, "\(fallen.count) on stderr, \(received.count) in the journal")
        #expect(fallen.allSatisfy { $0.hasPrefix("<6>level=info msg=record n=") })
        let numbers = received.compactMap { $0.first { $0.name == "N" }?.value } + fallen.compactMap { $0.split(separator: "=").last.map(String.init) }
        #expect(numbers.sorted { Int($0) ?? -1 < Int($1) ?? -1 } == (0..<sent).map(String.init), "each record exactly once")
        print("journal: a full queue took \(received.count) of \(sent) records; \(fallen.count) went to standard error")
    }

    /// marquee under systemd: with standard error the journal's stream and a journal socket that
    /// takes datagrams, its records carry PRIORITY and their fields (ITEM=, URI=, OUTPUT=).
    @Test func marqueeSendsStructuredRecordsToTheJournalSocket() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let config = TestMedia.folder + "/journal-socket-\(UUID().uuidString).json"
        try TestConfig.write(#"{"playlist": [{"uri": "\#(clip)"}, {"uri": "/nonexistent/missing.mp4"}], "loop": true}"#, to: config)
        let journal = try FakeJournal()
        journal.startCollecting()
        let process = Process()
        process.executableURL = MarqueeProcessTests.binary
        process.arguments = ["--config", config, "--output", "headless", "--mode", "320x180@60", "--exit-after", "3", "--socket", "none"]
        let pipe = Pipe()
        var info = stat()
        #expect(fstat(pipe.fileHandleForWriting.fileDescriptor, &info) == 0)
        process.environment = ProcessInfo.processInfo.environment.merging(["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)",
                                                                           "MARQUEE_JOURNAL_SOCKET": journal.path]) { $1 }
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let result = Command.collect(process, output: pipe, timeout: 60)
        let records = journal.stopCollecting()
        let lines = result.text.split(separator: "\n").map(String.init)
        #expect(result.end == ProcessEnd(status: 0, signalled: false))
        // The test host's queue may hold only 10 datagrams (net.unix.max_dgram_qlen; systemd sets
        // 512): a record the socket refused is on standard error with its priority instead.
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines)")
        #expect(records.count > lines.count, "\(records.count) records, \(lines.count) lines on standard error")
        func field(_ record: [FakeJournal.Field], _ name: String) -> String? { record.first { $0.name == name }?.value }
        #expect(records.allSatisfy { field($0, "SYSLOG_IDENTIFIER") == "marquee" && field($0, "MESSAGE")?.hasPrefix("level=") == true })
        let failed = records.filter { field($0, "MESSAGE")?.hasPrefix("level=error msg=\"cannot play item; skipped\"") == true }
        let failedLines = lines.filter { $0.hasPrefix("<3>level=error msg=\"cannot play item; skipped\"") }
        #expect(!failed.isEmpty || !failedLines.isEmpty, "the missing file is logged as an error")
        for record in failed {
            #expect(field(record, "PRIORITY") == "3")
            #expect(field(record, "URI") == "/nonexistent/missing.mp4" && field(record, "ITEM") == "2", "\(record)")
        }
        let playing = records.filter { field($0, "MESSAGE")?.hasPrefix("level=info msg=playing ") == true }
        #expect(playing.allSatisfy { field($0, "PRIORITY") == "6" && field($0, "URI") != nil && field($0, "ITEM") != nil }, "\(playing)")
        #expect(records.contains { field($0, "MESSAGE")?.contains("msg=\"output chosen\"") == true && field($0, "OUTPUT") == "headless-0" },
                "\(records.map { field($0, "MESSAGE") ?? "" })")
        print("journal socket: \(records.count) records with fields, \(lines.count) fell back to standard error")
    }
}
