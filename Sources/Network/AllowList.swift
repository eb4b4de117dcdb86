/// `network.allow`: the network sources marquee may read, denied by default. Each entry names one
/// scheme and a host: a name (`cdn.example.com`), names under a domain (`*.example.com`), an
/// address or an address block (`192.168.10.0/24`, `[fd00::]/8`), optionally a port. A URL is
/// allowed when an entry of its scheme (and port) names its host, or when every address its host
/// name resolves to lies in a block of such an entry. A host name leading to a loopback,
/// link-local, unspecified or multicast address needs an entry naming that address.
public struct NetworkAllowList: Sendable, Equatable {
    public enum Host: Sendable, Equatable, CustomStringConvertible {
        case name(String)
        /// `*.example.com`: names ending in `.example.com` (not `example.com` itself).
        case domain(String)
        case block(CIDRBlock)

        public var description: String {
            switch self {
            case .name(let n): n
            case .domain(let d): "*.\(d)"
            case .block(let b): b.network.isIPv4 ? b.description : "[\(b.network)]/\(b.prefixLength)"
            }
        }
    }

    public struct Rule: Sendable, Equatable, CustomStringConvertible {
        public let scheme: String
        public let host: Host
        public let port: Int?

        public var description: String { "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")" }
    }

    /// The schemes an entry may name, each with the FFmpeg protocols it needs underneath
    /// (`protocol_whitelist`): HLS is `http`/`https`, with `crypto` for AES-128 segments.
    public static let protocols: [String: [String]] = [
        "http": ["http", "tcp", "crypto"],
        "https": ["https", "tls", "tcp", "crypto"],
        "rtsp": ["rtsp", "rtp", "udp", "tcp"],
        "rtsps": ["rtsps", "rtsp", "rtp", "udp", "tcp", "tls"],
        "rtmp": ["rtmp", "tcp"],
        "udp": ["udp"],
        "rtp": ["rtp", "udp"],
        "srt": ["srt"],
    ]

    /// The port a URL of `scheme` reaches when it names none.
    public static let defaultPorts: [String: Int] = ["http": 80, "https": 443, "rtsp": 554, "rtsps": 322, "rtmp": 1935]

    public let rules: [Rule]

    /// Nothing allowed: no network source plays.
    public static let none = NetworkAllowList(rules: [])

    public init(rules: [Rule]) {
        self.rules = rules
    }

    /// Parses `network.allow`'s entries; throws naming the first bad entry by its index.
    public init(entries: [String]) throws(NetworkURL.ParseError) {
        var rules: [Rule] = []
        for (index, entry) in entries.enumerated() {
            do {
                rules.append(try Self.rule(entry))
            } catch {
                throw NetworkURL.ParseError(reason: "[\(index)]: \(error.reason)")
            }
        }
        self.init(rules: rules)
    }

    /// One entry: `scheme://host[:port]`, the host a name, `*.domain`, an address or a block.
    public static func rule(_ entry: String) throws(NetworkURL.ParseError) -> Rule {
        let shown = NetworkURL.clipped(entry)
        guard let separator = entry.firstRange(of: "://") else {
            throw NetworkURL.ParseError(reason: "\"\(shown)\" is not scheme://host, e.g. https://cdn.example.com or rtsp://192.168.10.0/24")
        }
        let scheme = entry[..<separator.lowerBound].lowercased()
        guard protocols[scheme] != nil else {
            throw NetworkURL.ParseError(reason: "\"\(shown)\": the scheme \"\(NetworkURL.clipped(scheme))\" is not one of \(protocols.keys.sorted().joined(separator: ", "))")
        }
        var rest = entry[separator.upperBound...]
        if rest.hasSuffix("/") && !rest.dropLast().contains("/") { rest = rest.dropLast() }
        var port: Int?
        // A port follows the last colon, unless that colon is inside an unbracketed IPv6 address.
        if let colon = rest.lastIndex(of: ":"), !rest[..<colon].contains(":") || rest[..<colon].hasSuffix("]") || rest[..<colon].contains("]/") {
            let text = rest[rest.index(after: colon)...]
            guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }), let p = Int(text), (1...65535).contains(p) else {
                throw NetworkURL.ParseError(reason: "\"\(shown)\": the port \"\(NetworkURL.clipped(String(text)))\" is not 1 to 65535")
            }
            port = p
            rest = rest[..<colon]
        }
        let hostText = String(rest).replacingBrackets()
        guard !hostText.isEmpty else {
            throw NetworkURL.ParseError(reason: "\"\(shown)\" names no host")
        }
        let host: Host
        if let block = CIDRBlock(hostText) {
            host = .block(block)
        } else if hostText.contains("/") || IPAddress(hostText.split(separator: "/").first.map(String.init) ?? "") != nil {
            throw NetworkURL.ParseError(reason: "\"\(shown)\": \"\(NetworkURL.clipped(hostText))\" is not an address block: write e.g. 10.0.0.0/8 or [fd00::]/8")
        } else {
            let name = hostText.lowercased()
            let bare = name.hasPrefix("*.") ? String(name.dropFirst(2)) : name
            let labels = bare.split(separator: ".", omittingEmptySubsequences: false)
            guard bare.count <= 253, !labels.isEmpty, labels.allSatisfy(Self.isHostLabel) else {
                throw NetworkURL.ParseError(reason: "\"\(shown)\": \"\(NetworkURL.clipped(hostText))\" is not a host name, *.domain, address or address block")
            }
            host = name.hasPrefix("*.") ? .domain(bare) : .name(bare)
        }
        return Rule(scheme: scheme, host: host, port: port)
    }

    /// A DNS label: 1 to 63 letters, digits, `-` (not first or last) and `_`.
    static func isHostLabel(_ label: Substring) -> Bool {
        guard !label.isEmpty, label.count <= 63, label.first != "-", label.last != "-" else { return false }
        return label.allSatisfy { c in c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_") }
    }

    /// What checking a URL found.
    public enum Decision: Sendable, Equatable {
        /// Allowed; `addresses`: what its host name resolved to (empty for an address or a name
        /// not resolved).
        case allowed(addresses: [IPAddress])
        /// Refused, and why (naming the URL and the rule it lacks).
        case refused(String)

        public var isAllowed: Bool { if case .allowed = self { true } else { false } }
    }

    /// The FFmpeg protocols the listed schemes need, comma-separated (`protocol_whitelist`);
    /// never `file`.
    public var protocolWhitelist: String {
        Set(rules.flatMap { Self.protocols[$0.scheme] ?? [] }).sorted().joined(separator: ",")
    }

    /// Checks `uri`. `resolve` gives a host name's addresses (`SystemResolver.addresses`), and is
    /// called only for a name: a name listed by name or domain is resolved to check that it does
    /// not lead to a special address; a name not listed is allowed only when all its addresses are
    /// in listed blocks.
    public func check(_ uri: String, resolve: (String) throws -> [IPAddress]) -> Decision {
        let url: NetworkURL
        do { url = try NetworkURL(parsing: uri) } catch { return .refused("not a network URL: \(error.reason)") }
        let shown = url.description
        let port = url.port ?? Self.defaultPorts[url.scheme]
        let candidates = rules.filter { $0.scheme == url.scheme && ($0.port == nil || $0.port == port) }
        guard !candidates.isEmpty else {
            let schemeListed = rules.contains { $0.scheme == url.scheme }
            return .refused(schemeListed ? "\(shown): no network.allow entry for \(url.scheme) on port \(port.map(String.init) ?? "(none)")"
                                         : "\(shown): the scheme \(url.scheme) is not in network.allow")
        }
        let blocks = candidates.compactMap { if case .block(let b) = $0.host { b } else { nil } }
        guard !url.host.isEmpty else { return .refused("\(shown) names no host: write the address to listen on, and list it") }
        if let address = IPAddress(url.host) {
            return blocks.contains { $0.contains(address) } ? .allowed(addresses: [address])
                                                            : .refused("\(shown): \(address) is in no network.allow block for \(url.scheme)")
        }
        let named = candidates.contains { rule in
            switch rule.host {
            case .name(let n): n == url.host || n + "." == url.host
            case .domain(let d): url.host.hasSuffix("." + d) || url.host.hasSuffix("." + d + ".")
            case .block: false
            }
        }
        let addresses: [IPAddress]
        do {
            addresses = try resolve(url.host)
        } catch {
            return .refused("\(shown): \(url.host) did not resolve: \(error)")
        }
        guard !addresses.isEmpty else { return .refused("\(shown): \(url.host) resolved to no address") }
        for address in addresses where !blocks.contains(where: { $0.contains(address) }) {
            if !named { return .refused("\(shown): \(url.host) resolves to \(address), in no network.allow block for \(url.scheme), and the name is not listed") }
            if address.isSpecial {
                return .refused("\(shown): \(url.host) resolves to \(address) (loopback, link-local or multicast): list that address to allow it")
            }
        }
        return .allowed(addresses: addresses)
    }
}

extension String {
    /// `[fd00::]/8` as `fd00::/8`, `[::1]` as `::1`.
    fileprivate func replacingBrackets() -> String {
        guard hasPrefix("["), let close = firstIndex(of: "]") else { return self }
        return String(self[index(after: startIndex)..<close]) + self[index(after: close)...]
    }
}
