import SystemCalls
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

    // MARK: The journal's native socket

    /// Each record is one datagram: PRIORITY, SYSLOG_IDENTIFIER, MESSAGE (the logfmt line) and the
    /// structured fields under journal names; a value with a line break goes in the binary form.
    @Test func recordsGoToTheJournalSocketWithStructuredFields() throws {
        let journal = try FakeJournal()
        let socket = try #require(JournalSocket(path: journal.path, identifier: "marquee"))
        let lines = Mutex<[String]>([])
        let logger = Logger(level: .debug, priorityPrefix: true, journal: socket) { line in lines.withLock { $0.append(line) } }
            .with(["output": "headless-0"])
        logger.error("cannot play item; skipped", ["item": "2", "uri": "a b.mp4", "decoder-dropped": "0", "error": "line one\nline two"])
        logger.debug("d")
        let records = journal.collect(count: 2, timeout: 5)
        try #require(records.count == 2, "\(records)")
        #expect(records[0] == [
            ("PRIORITY", "3"), ("SYSLOG_IDENTIFIER", "marquee"),
            ("MESSAGE", #"level=error msg="cannot play item; skipped" output=headless-0 item=2 uri="a b.mp4" decoder-dropped=0 error="line one\nline two""#),
            ("OUTPUT", "headless-0"), ("ITEM", "2"), ("URI", "a b.mp4"), ("DECODER_DROPPED", "0"), ("ERROR", "line one\nline two"),
        ].map(FakeJournal.Field.init))
        #expect(records[1].first { $0.name == "PRIORITY" }?.value == "7")
        #expect(lines.withLock { $0 } == [], "nothing on standard error while the journal takes the records")
    }

    @Test func fieldNamesAreJournalNames() {
        #expect(JournalSocket.journalFieldName("uri") == "URI")
        #expect(JournalSocket.journalFieldName("decoder-dropped") == "DECODER_DROPPED")
        #expect(JournalSocket.journalFieldName("hwdec.interop") == "HWDEC_INTEROP")
        #expect(JournalSocket.journalFieldName("message") == "FIELD_MESSAGE")
        #expect(JournalSocket.journalFieldName("priority") == "FIELD_PRIORITY")
        #expect(JournalSocket.journalFieldName("_pid") == "FIELD__PID")
        #expect(JournalSocket.journalFieldName("2nd") == "FIELD_2ND")
        #expect(JournalSocket.journalFieldName("") == "FIELD_")
        #expect(JournalSocket.journalFieldName("caf\u{E9} \u{1B}[31m") == "CAF____31M")
        #expect(JournalSocket.journalFieldName(String(repeating: "x", count: 100)) == String(repeating: "X", count: 64))
    }

}

/// A datagram socket standing in for journald's native socket: receives records and reads the
/// native protocol back into fields.
final class FakeJournal: @unchecked Sendable {
    // @unchecked: `collected` and `stopping` are guarded by `lock`; the rest is set in init.
    struct Field: Equatable, CustomStringConvertible {
        let name: String
        let value: String
        init(_ pair: (String, String)) { (name, value) = pair }
        var description: String { "\(name)=\(value)" }
    }

    let path = "/tmp/marquee-journal-\(UUID().uuidString.prefix(8)).sock"
    private let fd: Int32
    private let lock = NSLock()
    private var collected: [[Field]] = []
    private var stopping = false
    private var reader: Thread?
    private let readerDone = DispatchSemaphore(value: 0)

    init() throws {
        fd = try bindDatagramSocket(path)
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next record, waiting up to `timeout` seconds.
    func receive(timeout: Double) -> [Field]? {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? Self.parse(buffer[..<count]) : nil
    }

    /// Up to `count` records, each waited for at most `timeout` seconds.
    func collect(count: Int, timeout: Double) -> [[Field]] {
        var records: [[Field]] = []
        while records.count < count, let record = receive(timeout: timeout) { records.append(record) }
        return records
    }

    /// Receives on a thread of its own until `stopCollecting`.
    func startCollecting() {
        let thread = Thread { [self] in
            defer { readerDone.signal() }
            while !lock.withLock({ stopping }) {
                if let record = receive(timeout: 0.05) { lock.withLock { collected.append(record) } }
            }
            while let record = receive(timeout: 0) { lock.withLock { collected.append(record) } }
        }
        reader = thread
        thread.start()
    }

    func stopCollecting() -> [[Field]] {
        lock.withLock { stopping = true }
        if reader != nil { _ = readerDone.wait(timeout: .now() + 5) }
        return lock.withLock { collected }
    }

    /// The journal's native protocol: `NAME=value\n`, or `NAME\n` + 64-bit LE length + bytes + `\n`.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [Field] {
        var fields: [Field] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            guard let end = rest.firstIndex(of: 0x0A) else { break }
            let line = rest[rest.startIndex..<end]
            if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                fields.append(Field((String(decoding: line[..<equals], as: UTF8.self),
                                     String(decoding: line[line.index(after: equals)...], as: UTF8.self))))
                rest = rest[rest.index(after: end)...]
            } else {
                let lengthStart = rest.index(after: end)
                guard rest.distance(from: lengthStart, to: rest.endIndex) >= 8 else { break }
                let length = rest[lengthStart..<lengthStart + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let valueStart = lengthStart + 8
                guard length < UInt64(rest.distance(from: valueStart, to: rest.endIndex)) else { break }
                let valueEnd = valueStart + Int(length)
                fields.append(Field((String(decoding: line, as: UTF8.self), String(decoding: rest[valueStart..<valueEnd], as: UTF8.self))))
                rest = rest[(valueEnd + 1)...]
            }
        }
        return fields
    }
}
