import Foundation
import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport

/// Logs under journald: each line's syslog priority when standard error is the journal's stream.
@Suite struct JournalLogTests {
    @Test func linesCarryTheirPriorityOnlyWhenAskedTo() {
        let lines = Mutex<[String]>([])
        let journal = Logger(level: .debug, priorityPrefix: true) { line in lines.withLock { $0.append(line) } }
        journal.debug("d")
        journal.info("i", ["uri": "a b.mp4"])
        journal.warning("w")
        journal.error("e")
        #expect(lines.withLock { $0 } == ["<7>level=debug msg=d", #"<6>level=info msg=i uri="a b.mp4""#, "<4>level=warning msg=w",
                                          "<3>level=error msg=e"])
        lines.withLock { $0 = [] }
        Logger(level: .info) { line in lines.withLock { $0.append(line) } }.error("e")
        #expect(lines.withLock { $0 } == ["level=error msg=e"])
    }

    @Test func theJournalIsRecognisedByStandardErrorsDeviceAndInode() {
        var info = stat()
        #expect(fstat(2, &info) == 0)
        let mine = "\(info.st_dev):\(info.st_ino)"
        #expect(Logger.standardErrorIsJournal(environment: ["JOURNAL_STREAM": mine]))
        for other in ["\(info.st_dev):\(info.st_ino &+ 1)", "", ":", "1", "x:y", "\(info.st_dev):\(info.st_ino):0",
                      "99999999999999999999999:1", "-1:-1"] {
            #expect(!Logger.standardErrorIsJournal(environment: ["JOURNAL_STREAM": other]), "\(other)")
        }
        #expect(!Logger.standardErrorIsJournal(environment: [:]))
    }

    /// A playing marquee whose standard error is "the journal" (a pipe named by JOURNAL_STREAM):
    /// every line has its priority, an item that cannot play is an error (`<3>`), each item change
    /// is one info line, and why hardware decoding is not used is said at most once.
    @Test func marqueeUnderTheJournalPrefixesEveryLine() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let config = TestMedia.folder + "/journal-\(UUID().uuidString).json"
        try #"{"playlist": [{"uri": "\#(clip)"}, {"uri": "/nonexistent/missing.mp4"}, {"uri": "\#(clip)", "start": 0.5}], "loop": true}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = MarqueeProcessTests.binary
        process.arguments = ["--config", config, "--output", "headless", "--mode", "320x180@60", "--exit-after", "5", "--socket", "none"]
        let pipe = Pipe()
        var info = stat()
        #expect(fstat(pipe.fileHandleForWriting.fileDescriptor, &info) == 0)
        process.environment = ProcessInfo.processInfo.environment.merging(["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]) { $1 }
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0)
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
}
