/// The parts of a network URL the allow-list checks: its scheme, host and port. Parsed here, not by
/// Foundation, so that what is checked is what FFmpeg reads (`av_url_split`'s rules: the authority
/// ends at the first `/`, `?` or `#`; user info ends at its last `@`; an IPv6 host is in brackets).
public struct NetworkURL: Sendable, Equatable, CustomStringConvertible {
    /// Lower-cased, e.g. `https`; a `crypto+` prefix (HLS AES segments) is taken off.
    public let scheme: String
    /// Lower-cased host name, or an address as written (IPv6 without its brackets); may be empty
    /// (`udp://@:1234` listens on every address).
    public let host: String
    /// The port written in the URL, or nil.
    public let port: Int?

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)\(port.map { ":\($0)" } ?? "")"
    }

    /// Why a string is not a network URL.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    public init(scheme: String, host: String, port: Int?) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// Whether `uri` has a scheme other than `file` (written `scheme://` or `scheme:`, as FFmpeg
    /// takes both): what is not a network URL is a file path.
    public static func hasNetworkScheme(_ uri: String) -> Bool {
        guard let colon = uri.firstIndex(of: ":") else { return false }
        let scheme = uri[..<colon]
        guard scheme.count >= 2, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
              scheme.first?.isLetter == true else { return false }  // `C:` and `./a:b` are paths
        return scheme.lowercased() != "file"
    }

    /// Whether `uri` is a stream one reader at a time can take: UDP and RTP bind their port, an
    /// RTSP camera or an SRT listener serves few sessions.
    public static func isOneReaderStream(_ uri: String) -> Bool {
        guard let colon = uri.firstIndex(of: ":") else { return false }
        return ["udp", "rtp", "rtsp", "rtsps", "srt"].contains(uri[..<colon].lowercased())
    }

    public init(parsing uri: String) throws(ParseError) {
        guard let separator = uri.firstRange(of: "://") else {
            throw ParseError(reason: "\"\(Self.clipped(uri))\" has no scheme://host")
        }
        var scheme = uri[..<separator.lowerBound].lowercased()
        if scheme.hasPrefix("crypto+") { scheme.removeFirst("crypto+".count) }
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
            throw ParseError(reason: "\"\(Self.clipped(uri))\" has no valid scheme")
        }
        let rest = uri[separator.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ParseError(reason: "\"\(Self.clipped(uri))\": an IPv6 address without its closing ]")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(reason: "\"\(Self.clipped(uri))\": text after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port: Int?
        if let portText, !portText.isEmpty {
            // Int(_:) returns nil on overflow; it never traps.
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let p = Int(portText), (0...65535).contains(p) else {
                throw ParseError(reason: "\"\(Self.clipped(uri))\": the port \"\(Self.clipped(String(portText)))\" is not 0 to 65535")
            }
            port = p
        }
        guard host.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && $0 != "%" }) else {
            throw ParseError(reason: "\"\(Self.clipped(uri))\": the host has characters a host name cannot have")
        }
        self.init(scheme: scheme, host: host.lowercased(), port: port)
    }

    /// At most 80 characters of `text`, for messages.
    static func clipped(_ text: String) -> String {
        text.count > 80 ? String(text.prefix(80)) + "…" : text
    }
}
