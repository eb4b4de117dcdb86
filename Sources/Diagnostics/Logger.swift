import Foundation
import Timing
import SystemCalls

/// The one logger of a Marquee process: made in `main`, passed down, with structured fields.
///
/// Lines are logfmt (`level=info msg="..." item=0 uri=demo.mp4`) so that journald, grep and log
/// shippers read them alike. A `Logger` is a value: `with(_:)` returns a copy that adds fields to
/// every line (the output's name, the item's URI) without touching the parent.
///
/// Under systemd, when standard error is the journal (`standardErrorIsJournal`), `forService`
/// sends each record to the journal's native socket (`JournalSocket`): `PRIORITY=`, `MESSAGE=` (the
/// logfmt line) and every structured field as a journal field of its own (`ITEM=`, `URI=`,
/// `OUTPUT=`...). A record the socket does not take goes to standard error as a line that starts
/// with its syslog priority (`<3>` error, `<4>` warning, `<6>` info, `<7>` debug), which journald
/// takes as the line's PRIORITY (so `journalctl -p err` finds errors either way).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error
        public var name: String { ["debug", "info", "warning", "error"][rawValue] }
        public init?(name: String) {
            guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        /// The syslog priority: 3 err, 4 warning, 6 info, 7 debug.
        public var syslogPriority: Int { [7, 6, 4, 3][rawValue] }
    }

    /// Where finished lines go; standard error unless a test captures them.
    public typealias Sink = @Sendable (String) -> Void

    public var level: Level
    /// Lines start with `<priority>` (for the journal).
    public let priorityPrefix: Bool
    /// Where records go first, when set; the sink gets the records it refuses.
    public let journal: JournalSocket?
    private let sink: Sink
    private var fields: [(String, String)]

    public init(level: Level = .info, priorityPrefix: Bool = false, journal: JournalSocket? = nil,
                sink: @escaping Sink = Logger.standardError) {
        self.level = level
        self.priorityPrefix = priorityPrefix
        self.journal = journal
        self.sink = sink
        self.fields = []
    }

    /// The logger of a process that may run under systemd: when standard error is the journal's
    /// stream, records go to the journal's native socket (`MARQUEE_JOURNAL_SOCKET`, else
    /// `/run/systemd/journal/socket`) with priority-prefixed standard error lines as the fallback;
    /// otherwise plain lines on standard error.
    public static func forService(level: Level, identifier: String,
                                  environment: [String: String] = ProcessInfo.processInfo.environment) -> Logger {
        guard standardErrorIsJournal(environment: environment) else { return Logger(level: level) }
        let path = environment["MARQUEE_JOURNAL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? JournalSocket.defaultPath
        return Logger(level: level, priorityPrefix: true, journal: JournalSocket(path: path, identifier: identifier))
    }

    /// True when standard error is the journal's stream: systemd sets `JOURNAL_STREAM` to its
    /// `device:inode` (decimal), which must be those of file descriptor 2 (a child whose standard
    /// error was redirected keeps the variable but not the stream).
    public static func standardErrorIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    public static let standardError: Sink = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A logger whose lines all carry `fields` as well.
    public func with(_ fields: KeyValuePairs<String, String>) -> Logger {
        var copy = self
        copy.fields.removeAll { field in fields.contains { $0.key == field.0 } }
        copy.fields.append(contentsOf: fields.map { ($0.key, $0.value) })
        return copy
    }

    public func log(_ level: Level, _ message: String, _ extra: KeyValuePairs<String, String> = [:]) {
        log(level, message, fields: extra.map { ($0.key, $0.value) })
    }

    /// `log` with fields built at run time.
    public func log(_ level: Level, _ message: String, fields extra: [(String, String)]) {
        guard level >= self.level else { return }
        var line = "level=\(level.name) msg=\(Self.quote(message))"
        // A field given with the message replaces the logger's own of that name.
        let all = fields.filter({ field in !extra.contains { $0.0 == field.0 } }) + extra
        for (key, value) in all {
            line += " \(key)=\(Self.quote(value))"
        }
        if let journal, journal.send(priority: level.syslogPriority, message: line, fields: all) { return }
        sink((priorityPrefix ? "<\(level.syslogPriority)>" : "") + line)
    }

    public func debug(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.debug, message, extra) }
    public func info(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.info, message, extra) }
    public func warning(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.warning, message, extra) }
    public func error(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.error, message, extra) }

    /// Quotes a value (or a message) when it holds spaces, quotes, `=` or control characters, as
    /// logfmt expects, and escapes inside the quotes: `\\`, `\"`, `\n`, `\r`, `\t`, and `\u001b`
    /// for every other C0 control, DEL, every C1 control and the Unicode line and paragraph
    /// separators. Text from outside (file names, config values, client names) passes through here,
    /// so no ESC sequence or line break reaches a terminal or the journal raw.
    static func quote(_ value: String) -> String {
        var plain = !value.isEmpty
        var escaped = ""
        escaped.unicodeScalars.reserveCapacity(value.unicodeScalars.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""; plain = false
            case "\n": escaped += "\\n"; plain = false
            case "\r": escaped += "\\r"; plain = false
            case "\t": escaped += "\\t"; plain = false
            case " ", "=": escaped.unicodeScalars.append(scalar); plain = false
            case _ where scalar.isControlCharacter:
                escaped += scalar.unicodeEscape
                plain = false
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return plain ? value : "\"\(escaped)\""
    }

}

extension Unicode.Scalar {
    /// C0 controls, DEL, C1 controls, and U+2028/U+2029 (which some viewers take as line breaks):
    /// what the log, JSON output and marqueectl never write raw.
    public var isControlCharacter: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
    }

    /// `\u001b`: the scalar as a JSON-style escape of four hex digits (for the Basic Multilingual Plane).
    public var unicodeEscape: String {
        let digits = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// `text` with every control character (`isControlCharacter`) written as its `\u` escape, for a
/// terminal line that shows text from outside (a file name, a reason).
public func escapingControlCharacters(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: \.isControlCharacter) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.isControlCharacter { out += scalar.unicodeEscape } else { out.unicodeScalars.append(scalar) }
    }
    return out
}

extension String {
    /// The text of a C buffer up to its first NUL (what C APIs write into a char array).
    public init(nullTerminated buffer: [CChar]) {
        self = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
