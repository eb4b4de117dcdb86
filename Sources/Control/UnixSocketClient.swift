import Foundation
import SystemCalls

/// A blocking client of the control socket (what `marqueectl` uses).
public final class UnixSocketClient {
    /// The connection: closed when the client goes.
    private let socket: FileDescriptor
    private var input = [UInt8]()

    private init(socket: consuming FileDescriptor) { self.socket = socket }

    /// Connects, or returns nil when nothing listens at `path` within `timeout` seconds.
    public static func connect(path: String, timeout: Double) -> UnixSocketClient? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        guard let socket = try? FileDescriptor.socket(domain: AF_UNIX, type: Int32(SOCK_STREAM.rawValue)) else { return nil }
        let fd = socket.rawValue
        // A day at most, and never negative or NaN, before the conversion to whole seconds.
        let seconds = timeout.isNaN ? 0 : min(max(timeout, 0), 86_400)
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connected = try? systemCall("connect(\(path))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        guard connected != nil else { return nil }  // the socket closes here
        return UnixSocketClient(socket: socket)
    }

    /// Sends one line (a newline is added unless `newline` is false).
    @discardableResult
    public func send(_ line: String, newline: Bool = true) -> Bool {
        let bytes = Array((newline ? line + "\n" : line).utf8)
        var sent = 0
        let fd = socket.rawValue
        while sent < bytes.count {
            let n = try? systemCall("send") {
                bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            guard let n, n > 0 else { return false }  // failed, or the send timeout passed
            sent += n
        }
        return true
    }

    /// The next line, or nil on end of stream or when none came within the socket's timeout (each
    /// read waits up to it: a long line, a screenshot, takes as long as it keeps coming).
    public func readLine() -> String? {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var scanned = 0  // input[..<scanned] holds no newline
        while true {
            if let newline = input[scanned...].firstIndex(of: 0x0A) {
                let line = String(decoding: input[..<newline], as: UTF8.self)
                input.removeSubrange(...newline)
                return line
            }
            scanned = input.count
            let n = try? buffer.withUnsafeMutableBytes { bytes throws(SystemCallError) in try socket.read(into: bytes) }
            guard let n, n > 0 else { return nil }  // end of stream, a failure, or the timeout passed
            input.append(contentsOf: buffer[0..<n])
        }
    }

    /// Sends a request and returns the reply with the same `request_id`, skipping events.
    public func request(_ command: [JSONValue], id: Int) -> JSONValue? {
        guard send(JSONValue.object([("command", .array(command)), ("request_id", .number(Double(id)))]).encoded) else { return nil }
        while let line = readLine() {
            guard let value = try? JSONParser.parse(line) else { continue }
            if value["event"] == nil, value["request_id"]?.numberValue == Double(id) { return value }
        }
        return nil
    }
}
