/// What a server said identifies one version of a file (`ETag`, `Last-Modified`), kept beside the
/// file's copy: sent back on the next check (`If-None-Match`, `If-Modified-Since`: a 304 answer
/// costs no body), and beside a cut download, to resume it only if the file is still that version
/// (`If-Range`).
public struct RemoteValidators: Sendable, Equatable {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag.flatMap(Self.clean)
        self.lastModified = lastModified.flatMap(Self.clean)
    }

    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// A header value as kept: trimmed, no control characters (it goes back into a request line),
    /// at most 512 bytes; nil when nothing is left.
    static func clean(_ value: String) -> String? {
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 512, !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else { return nil }
        return trimmed
    }

    /// Takes one response header line (`Name: value`) if it is a validator.
    public mutating func take(headerLine line: String) {
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(line[line.index(after: colon)...])
        switch name {
        case "etag": etag = Self.clean(value)
        case "last-modified": lastModified = Self.clean(value)
        default: break
        }
    }

    /// The request headers of a conditional check against this version.
    public var conditionalHeaders: [String] {
        (etag.map { ["If-None-Match: \($0)"] } ?? []) + (lastModified.map { ["If-Modified-Since: \($0)"] } ?? [])
    }

    /// The `If-Range` value: a strong ETag, else the date (a weak ETag may not be used for ranges,
    /// RFC 9110 13.1.5); nil: a cut download of this version cannot be resumed safely.
    public var ifRange: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }

    /// As kept on disk: one `name: value` line each.
    public var fileText: String {
        (etag.map { "etag: \($0)\n" } ?? "") + (lastModified.map { "last-modified: \($0)\n" } ?? "")
    }

    /// Read back from `fileText` (lines it does not know are ignored).
    public init(fileText: String) {
        self.init()
        for line in fileText.split(separator: "\n") { take(headerLine: String(line)) }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }  // "\r\n" is one Character
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
