import Foundation

/// systemd-journald's native socket: each log record is one datagram of journal fields
/// (`KEY=value` lines; a value that holds a line break or a NUL goes as `KEY`, a newline, its
/// length as 64-bit little-endian, the bytes and a newline), so that the logger's structured
/// fields become fields of their own (`journalctl -u marquee ITEM=2`, `-o json`).
///
/// Sends never wait: a record the socket does not take at once (no journald, a full queue, a
/// record larger than a datagram) is refused, and the logger writes it to standard error instead.
/// Owns its socket (closed in deinit); sends from any thread.
public final class JournalSocket: Sendable {
    public static let defaultPath = "/run/systemd/journal/socket"
    /// Journal field names the record itself uses; a structured field of the same name is renamed.
    static let ownFields: Set<String> = ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID"]

    public let path: String
    /// `SYSLOG_IDENTIFIER=` of every record (the unit's `SyslogIdentifier=` covers only its streams).
    public let identifier: String
    private let fd: Int32
    private let address: sockaddr_un

    /// Nil when `path` cannot be a Unix socket address (empty, or 108 bytes or longer) or no
    /// datagram socket can be made.
    public init?(path: String, identifier: String) {
        let bytes = Array(path.utf8)
        var address = sockaddr_un()
        guard !bytes.isEmpty, !bytes.contains(0), bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.address = address
        self.path = path
        self.identifier = identifier
    }

    deinit { close(fd) }

    /// Sends one record; false when the socket did not take it (nothing was sent).
    public func send(priority: Int, message: String, fields: [(String, String)]) -> Bool {
        let datagram = Self.record(priority: priority, identifier: identifier, message: message, fields: fields)
        var address = self.address
        let sent = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL), $0,
                           socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == datagram.count
    }

    /// The datagram of one record: PRIORITY, SYSLOG_IDENTIFIER, MESSAGE, then each field under its
    /// journal name (`journalFieldName`).
    public static func record(priority: Int, identifier: String, message: String, fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        append("PRIORITY", String(priority), to: &out)
        append("SYSLOG_IDENTIFIER", identifier, to: &out)
        append("MESSAGE", message, to: &out)
        for (key, value) in fields { append(journalFieldName(key), value, to: &out) }
        return out
    }

    /// A structured field's journal name: upper-cased, each character outside `A-Z 0-9 _` written
    /// `_`, at most 64 characters; a name that would start with a digit or `_` (journald's own
    /// trusted fields), be empty, or be one of the record's own fields gets `FIELD_` in front.
    public static func journalFieldName(_ key: String) -> String {
        var name = String(key.uppercased().unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "A"..."Z", "0"..."9", "_": Character(scalar)
            default: "_"
            }
        })
        if name.first.map({ $0 == "_" || $0.isNumber }) ?? true || ownFields.contains(name) { name = "FIELD_" + name }
        return String(name.prefix(64))
    }

    private static func append(_ name: String, _ value: String, to out: inout [UInt8]) {
        let bytes = Array(value.utf8)
        out += Array(name.utf8)
        if bytes.contains(where: { $0 == 0x0A || $0 == 0 }) {
            out.append(0x0A)
            withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { out += $0 }
            out += bytes
        } else {
            out.append(UInt8(ascii: "="))
            out += bytes
        }
        out.append(0x0A)
    }
}
