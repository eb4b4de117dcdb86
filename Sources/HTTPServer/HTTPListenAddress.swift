import Glibc
import SystemCalls

/// Where the server listens: an IP address and port (`127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`),
/// or a Unix socket's path (`/run/marquee/http.sock`). Addresses are numeric only: no name is
/// looked up, so what the config says is exactly what is bound.
public enum HTTPListenAddress: Sendable, Equatable, CustomStringConvertible {
    case inet(host: String, port: UInt16)
    case unix(path: String)

    /// Parses the config's text; the error says what is wrong with it.
    public init(parsing text: String) throws(HTTPConfigurationError) {
        if text.hasPrefix("/") {
            guard text.utf8.count < 108 else { throw .init("the socket path is longer than 107 bytes") }
            self = .unix(path: text)
            return
        }
        guard let colon = text.lastIndex(of: ":") else {
            throw .init("\"\(text)\" is neither address:port (e.g. 127.0.0.1:8080, [::1]:8080) nor an absolute socket path")
        }
        var host = String(text[..<colon])
        let portText = String(text[text.index(after: colon)...])
        // UInt16(_:) is nil past 65535 or for anything not a number: it never traps.
        guard let port = UInt16(portText) else { throw .init("\"\(portText)\" is not a port (0 to 65535)") }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard Self.family(of: host) == AF_INET6 else { throw .init("\"\(host)\" is not an IPv6 address") }
        } else {
            guard Self.family(of: host) == AF_INET else {
                throw .init("\"\(host)\" is not an IPv4 address (write an IPv6 one in brackets, e.g. [::1]:8080; names are not looked up)")
            }
        }
        self = .inet(host: host, port: port)
    }

    /// AF_INET or AF_INET6 for a numeric address, else nil.
    static func family(of host: String) -> Int32? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return AF_INET }
        if inet_pton(AF_INET6, host, &v6) == 1 { return AF_INET6 }
        return nil
    }

    /// Whether only this machine can connect: a loopback address or a Unix socket.
    public var isLocal: Bool {
        switch self {
        case .unix: return true
        case .inet(let host, _): return host.hasPrefix("127.") || host == "::1"
        }
    }

    public var description: String {
        switch self {
        case .unix(let path): path
        case .inet(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    /// A listening socket bound here (its number, now the caller's to close) (port 0: one the kernel picks); with the port bound.
    func bind(mode: mode_t) throws(SystemCallError) -> (fd: Int32, port: UInt16?) {
        switch self {
        case .unix(let path):
            let socket = try FileDescriptor.socket(domain: AF_UNIX, type: Int32(SOCK_STREAM.rawValue), call: "socket(http \(path))")
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                let bytes = Array(path.utf8)
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            // A socket file left by an earlier run is replaced (only a socket: never another file).
            var info = stat()
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
            let fd = socket.rawValue
            try systemCall("bind(http \(path))") {
                withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            }
            chmod(path, mode)
            try systemCall("listen(http \(path))") { listen(fd, 64) }
            return (socket.relinquish(), nil)
        case .inet(let host, let port):
            let v6 = Self.family(of: host) == AF_INET6
            let socket = try FileDescriptor.socket(domain: v6 ? AF_INET6 : AF_INET, type: Int32(SOCK_STREAM.rawValue), call: "socket(http \(self))")
            let fd = socket.rawValue
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if v6 {
                // `[::]` means IPv6 only; IPv4 is listened on only where the config says so.
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = port.bigEndian
                inet_pton(AF_INET6, host, &address.sin6_addr)
                return (socket.relinquish(), try bindAndListen(fd, &address))
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            return (socket.relinquish(), try bindAndListen(fd, &address))
        }
    }

    /// Binds `fd` to `address` (a sockaddr_in or sockaddr_in6), listens, and returns the port
    /// bound (both keep it, big-endian, right after the 2-byte family).
    private func bindAndListen<Address>(_ fd: Int32, _ address: inout Address) throws(SystemCallError) -> UInt16 {
        let size = socklen_t(MemoryLayout<Address>.size)
        try systemCall("bind(http \(self))") {
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, size) } }
        }
        var length = size
        try systemCall("getsockname(http \(self))") {
            withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        }
        try systemCall("listen(http \(self))") { listen(fd, 64) }
        return withUnsafeBytes(of: &address) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
    }
}

/// A setting of the server that cannot be used, and why.
public struct HTTPConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
