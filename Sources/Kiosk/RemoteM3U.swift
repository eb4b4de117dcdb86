import Foundation
import Network

/// A remote M3U playlist's text as marquee reads it (`{"m3u": "https://..."}`): entries resolved
/// against the playlist's own URL, each one `http`/`https` and allowed by `network.allow` (any
/// other is skipped, with the reason, and never requested), and an optional SHA-256 that the
/// entry's download must match (`#EXT-X-MARQUEE-SHA256:<64 hex digits>` on a line before it).
struct RemoteM3U: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        /// The absolute URL.
        let url: String
        /// Lower-case hex, 64 digits; nil: not checked.
        let sha256: String?
    }

    static let hashTag = "#EXT-X-MARQUEE-SHA256:"
    /// The largest playlist fetched (a few thousand entries).
    static let largestFile: Int64 = 1 << 20

    let entries: [Entry]
    /// Entries left out: the entry as written (line number first) and why.
    let skipped: [String]
    /// Lines read with a problem that did not drop an entry (a malformed hash tag).
    let warnings: [String]

    /// Reads `text`, fetched from `base`. `resolve` gives a host's addresses for the allow-list
    /// check (`SystemResolver.addresses`; a fake in tests).
    init(text: String, base: String, allow: NetworkAllowList, resolve: (String) throws -> [IPAddress]) {
        var entries: [Entry] = []
        var skipped: [String] = []
        var warnings: [String] = []
        var hash: String?
        let baseURL = URL(string: base)
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let number = index + 1
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                guard line.uppercased().hasPrefix(Self.hashTag) else { continue }
                let value = line.dropFirst(Self.hashTag.count).trimmingCharacters(in: .whitespaces).lowercased()
                if value.utf8.count == 64, value.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) {
                    hash = value
                } else {
                    hash = nil
                    warnings.append("line \(number): \"\(Self.clipped(line))\" is not \(Self.hashTag) and 64 hex digits; the next entry has no hash")
                }
                continue
            }
            let expected = hash
            hash = nil
            let shown = "line \(number): \"\(Self.clipped(line))\""
            guard let resolved = URL(string: line, relativeTo: baseURL)?.absoluteURL.absoluteString else {
                skipped.append("\(shown): not a URL")
                continue
            }
            let scheme = resolved.prefix { $0 != ":" }.lowercased()
            guard scheme == "http" || scheme == "https" else {
                skipped.append("\(shown): \(scheme) entries are not played from a remote playlist, only http and https")
                continue
            }
            guard RemoteMediaCache.isCacheable(resolved) else {
                skipped.append("\(shown): a playlist, not a file to cache")
                continue
            }
            if case .refused(let reason) = allow.check(resolved, resolve: resolve) {
                skipped.append("\(shown): refused by network.allow: \(reason)")
                continue
            }
            entries.append(Entry(url: resolved, sha256: expected))
        }
        (self.entries, self.skipped, self.warnings) = (entries, skipped, warnings)
    }

    static func clipped(_ s: String) -> String { s.count > 120 ? String(s.prefix(117)) + "..." : s }
}
