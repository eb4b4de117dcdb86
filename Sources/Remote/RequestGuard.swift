import HTTPServer

/// Refuses requests a browser could be tricked into sending: a `Host` that is a name this box
/// is not known by (DNS rebinding: a hostile name resolved to this address), and a state-changing
/// request from another site (`Origin` or `Sec-Fetch-Site`). Numeric addresses are always
/// accepted as hosts: rebinding needs a name.
public struct RequestGuard: Sendable {
    /// Lower-case names the Host header may give: `localhost` and `http.allowedHosts`.
    public let allowedNames: Set<String>

    public init(allowedHosts: [String]) {
        allowedNames = Set(["localhost"] + allowedHosts.map { $0.lowercased() })
    }

    /// Why `request` is refused (403), or nil.
    public func refusal(_ request: HTTPRequest) -> String? {
        guard let host = request[header: "host"] else { return "no Host header" }
        guard allows(host: host) else { return "Host \"\(host.prefix(64))\" is not a name of this player (DNS rebinding?); add it to http.allowedHosts" }
        if ["GET", "HEAD", "OPTIONS"].contains(request.method) { return nil }
        if request[header: "sec-fetch-site"] == "cross-site" { return "a cross-site request (Sec-Fetch-Site: cross-site)" }
        if let origin = request[header: "origin"] {
            guard let rest = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first,
                  origin.hasPrefix("http://") || origin.hasPrefix("https://"), allows(host: String(rest)) else {
                return "a cross-origin request (Origin \(origin.prefix(64)))"
            }
        }
        return nil
    }

    /// Whether a `host[:port]` names this player: an IP address, or an allowed name.
    func allows(host text: String) -> Bool {
        var host = Substring(text.lowercased())
        if host.hasPrefix("[") {
            // [v6]:port
            guard let end = host.firstIndex(of: "]") else { return false }
            let inside = host[host.index(after: host.startIndex)..<end]
            return isIPv6(String(inside))
        }
        if let colon = host.lastIndex(of: ":") {
            guard UInt16(host[host.index(after: colon)...]) != nil else { return false }
            host = host[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        return isIPv4(String(host)) || allowedNames.contains(String(host))
    }

    private func isIPv4(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }
    }

    private func isIPv6(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 45 && s.contains(":") && s.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
}
