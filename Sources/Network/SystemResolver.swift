#if canImport(Glibc)
import Glibc
#endif

/// Host names resolved with the system's resolver (getaddrinfo), as FFmpeg's own TCP and UDP
/// protocols resolve them.
public enum SystemResolver {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let host: String
        public let code: Int32
        public var description: String { "getaddrinfo(\(NetworkURL.clipped(host))): \(String(cString: gai_strerror(code)))" }
    }

    /// Every address `host` resolves to, in the resolver's order, without duplicates. Blocks for as
    /// long as the resolver does (resolv.conf's timeout and attempts).
    public static func addresses(of host: String) throws(Failure) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let r = getaddrinfo(host, nil, &hints, &list)
        guard r == 0 else { throw Failure(host: host, code: r) }
        defer { freeaddrinfo(list) }
        var found: [IPAddress] = []
        var node = list
        while let entry = node {
            if let sockaddr = entry.pointee.ai_addr {
                var address: IPAddress?
                if entry.pointee.ai_family == AF_INET {
                    address = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        withUnsafeBytes(of: $0.pointee.sin_addr) { IPAddress(bytes: Array($0)) }
                    }
                } else if entry.pointee.ai_family == AF_INET6 {
                    address = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        withUnsafeBytes(of: $0.pointee.sin6_addr) { IPAddress(bytes: Array($0)) }
                    }
                }
                // Mapped addresses read as IPv4, as IPAddress(String) reads them.
                if let a = address, let normal = IPAddress(a.description), !found.contains(normal) { found.append(normal) }
            }
            node = entry.pointee.ai_next
        }
        return found
    }
}
