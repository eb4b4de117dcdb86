import Foundation
import HTTPServer

/// What a token may do. `control` may do everything `view` may.
public enum Role: String, Sendable, Comparable, CaseIterable {
    /// Status, health, properties, the playlist, screenshots, metrics, events.
    case view
    /// Commands, property changes, the config, uploads.
    case control

    public static func < (a: Role, b: Role) -> Bool { a == .view && b == .control }
}

/// The bearer tokens the API accepts, as SHA-256 hashes: the token file holds no secret, only
/// `ROLE sha256:HEX NAME` lines (`#` comments); a request's token is hashed and compared with
/// every entry in constant time.
public struct TokenStore: Sendable {
    public struct Entry: Sendable, Equatable {
        public let role: Role
        public let hash: [UInt8]
        public let name: String
    }

    public let entries: [Entry]

    /// A problem of the token file, with its line.
    public struct FileError: Error, CustomStringConvertible, Equatable {
        public let line: Int
        public let message: String
        public var description: String { line > 0 ? "line \(line): \(message)" : message }
    }

    /// Parses a token file's text. An empty file is an error: with no token nothing could be done.
    public init(parsing text: String) throws(FileError) {
        var entries: [Entry] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard words.count >= 2 else {
                throw FileError(line: index + 1, message: "expected ROLE sha256:HEX [NAME], e.g. control sha256:9f86d0... ops")
            }
            guard let role = Role(rawValue: words[0]) else {
                throw FileError(line: index + 1, message: "\"\(words[0].prefix(32))\" is not a role (view, control)")
            }
            guard words[1].hasPrefix("sha256:"), let hash = Self.bytes(hex: String(words[1].dropFirst(7))), hash.count == 32 else {
                throw FileError(line: index + 1, message: "the token must be given as sha256:<64 hex digits> (its hash, never the token itself)")
            }
            entries.append(Entry(role: role, hash: hash, name: words.count > 2 ? words[2...].joined(separator: " ") : "line \(index + 1)"))
        }
        guard !entries.isEmpty else { throw FileError(line: 0, message: "no tokens: give at least one ROLE sha256:HEX line") }
        self.entries = entries
    }

    /// The longest token taken (longer ones are refused before hashing).
    public static let maxTokenBytes = 1024

    /// The entry an `Authorization: Bearer TOKEN` header names; nil for none, a malformed header
    /// or an unknown token. Every entry is compared, whichever matches.
    public func authenticate(authorization: String?) -> Entry? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        guard !token.isEmpty, token.count <= Self.maxTokenBytes else { return nil }
        let hash = sha256(token)
        var found: Entry?
        for entry in entries where constantTimeEqual(entry.hash, hash) && found == nil { found = entry }
        return found
    }

    /// The line for a token file that accepts `token` as `role`.
    public static func line(role: Role, token: String, name: String) -> String {
        "\(role.rawValue) sha256:\(hexString(sha256(Array(token.utf8)))) \(name)"
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < digits.count {
            guard let high = Self.nibble(digits[i]), let low = Self.nibble(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
