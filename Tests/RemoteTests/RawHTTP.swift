import Foundation
import Glibc

/// A bare HTTP/1.1 client on a socket, for the integration tests: it sends exactly the bytes a
/// test gives (a slow header, a huge one, a body that never ends) and reads with time limits.
/// Talks only to loopback addresses or a Unix socket.
final class RawConnection {
    let fd: Int32

    /// Connects to `host:port` (from `source`, another loopback address, when given) or to the
    /// Unix socket `unixPath`; nil when refused.
    init?(port: UInt16 = 0, host: String = "127.0.0.1", source: String? = nil, unixPath: String? = nil) {
        if let unixPath {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                let bytes = Array(unixPath.utf8)
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if connected != 0 { Glibc.close(fd); return nil }
            return
        }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 { Glibc.close(fd); return nil }
    }

    deinit { Glibc.close(fd) }

    /// Sends all of `bytes`; false once the peer is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the peer closes or `timeout` seconds pass.
    func readAll(timeout: Double) -> [UInt8] {
        var out: [UInt8] = []
        let deadline = Date(timeIntervalSinceNow: timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
        }
        return out
    }

    /// Whether the peer has closed the connection (within `timeout` seconds); data read is dropped.
    func closedByPeer(within timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return true }
        }
        return false
    }
}

/// A parsed response.
struct RawReply {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }

    init?(_ bytes: [UInt8]) {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
        guard let first = head.first, first.split(separator: " ").count >= 2, let status = Int(first.split(separator: " ")[1]) else { return nil }
        self.status = status
        headers = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var rest = Array(bytes[end.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            var decoded: [UInt8] = []
            while let lineEnd = rest.firstRange(of: Array("\r\n".utf8)),
                  let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";")[0], radix: 16), size > 0,
                  rest.count >= lineEnd.upperBound + size {
                decoded += rest[lineEnd.upperBound..<(lineEnd.upperBound + size)]
                rest = Array(rest[min(rest.count, lineEnd.upperBound + size + 2)...])
            }
            rest = decoded
        }
        body = rest
    }
}

enum RawHTTP {
    /// One request (Connection: close) and its reply; nil when the connection failed or closed
    /// without one within `timeout`.
    static func request(port: UInt16 = 0, unixPath: String? = nil, source: String? = nil, _ method: String, _ path: String,
                        headers: [String: String] = [:], body: [UInt8]? = nil, timeout: Double = 20) -> RawReply? {
        guard let connection = RawConnection(port: port, source: source, unixPath: unixPath) else { return nil }
        var fields = headers
        if fields["Host"] == nil { fields["Host"] = unixPath == nil ? "127.0.0.1:\(port)" : "localhost" }
        fields["Connection"] = "close"
        if let body { fields["Content-Length"] = "\(body.count)" }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        for (k, v) in fields.sorted(by: { $0.key < $1.key }) { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        guard connection.send(Array(head.utf8) + (body ?? [])) else { return nil }
        return RawReply(connection.readAll(timeout: timeout))
    }
}
