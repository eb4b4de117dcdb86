import Foundation
import Playback

/// An error reply of the control protocol, with mpv's error strings.
public enum ControlError: Error, Equatable, Sendable {
    case propertyUnavailable
    case propertyNotFound
    case invalidParameter
    case commandFailed(String)

    /// The `error` field of the reply.
    public var replyText: String {
        switch self {
        case .propertyUnavailable: "property unavailable"
        case .propertyNotFound: "property not found"
        case .invalidParameter: "invalid parameter"
        case .commandFailed: "error running command"
        }
    }
}

/// What the control server asks of the player. Called on the server's thread.
public protocol ControlHandler: AnyObject, Sendable {
    /// The names `get_property` and `observe_property` accept.
    var propertyNames: [String] { get }
    func property(_ name: String) throws(ControlError) -> JSONValue
    func setProperty(_ name: String, to value: JSONValue) throws(ControlError)
    /// Runs a command other than the protocol's own (get/set/observe/client_name/get_version);
    /// returns the reply's `data`.
    func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue?
}

/// The control and health socket: a Unix stream socket speaking mpv's JSON IPC, one JSON object per
/// line. Requests `{"command":["get_property","pause"],"request_id":7}` get
/// `{"data":false,"request_id":7,"error":"success"}`; events arrive as `{"event":"..."}` lines.
///
/// One thread serves every client with `poll`. Bad input never reaches playback: malformed lines get
/// an error reply; a line longer than `maxLineBytes`, a client past `maxClients`, or a client whose
/// unread replies pass `maxPendingBytes` (one that never reads) is disconnected.
public final class ControlServer: @unchecked Sendable {
    // @unchecked: clients and the listening socket belong to the server thread; `events` is guarded
    // by `lock`; the wake pipe is written from any thread.
    public let path: String
    public let maxClients: Int
    public let maxLineBytes: Int
    public let maxPendingBytes: Int
    private let handler: any ControlHandler
    private let logger: Logger
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let lock = NSLock()
    private var pendingEvents: [JSONValue] = []
    private var stopping = false
    private var thread: Thread?
    private var clients: [Int32: Client] = [:]
    private var nextClientID = 1

    final class Client {
        let id: Int
        var name = ""
        var input = [UInt8]()
        var output = [UInt8]()
        /// observe_property: id -> (name, last value sent).
        var observed: [Int: (name: String, last: JSONValue?)] = [:]
        init(id: Int) { self.id = id }
    }

    public struct SocketError: Error, CustomStringConvertible {
        public let call: String
        public let path: String
        public let errno: Int32
        public var description: String { "\(call) on control socket \(path) failed: \(String(cString: strerror(errno)))" }
    }

    /// Binds `path` (mode `mode`, default 0660) and starts serving.
    public init(path: String, mode: mode_t = 0o660, handler: any ControlHandler, logger: Logger,
                maxClients: Int = 32, maxLineBytes: Int = 64 * 1024, maxPendingBytes: Int = 1 << 20) throws {
        self.path = path
        self.handler = handler
        self.logger = logger.with(["socket": path])
        self.maxClients = maxClients
        self.maxLineBytes = maxLineBytes
        self.maxPendingBytes = maxPendingBytes

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SocketError(call: "bind", path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // The socket's folder (/run/marquee when run by hand as root; systemd makes it for the unit).
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty && !FileManager.default.fileExists(atPath: folder) {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o750])
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", path: path, errno: errno) }
        // A socket file left by an earlier run that is no longer listening is replaced.
        if Self.isStale(path) { unlink(path) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw SocketError(call: "bind", path: path, errno: e)
        }
        chmod(path, mode)
        guard listen(fd, 16) == 0 else {
            let e = errno
            close(fd)
            throw SocketError(call: "listen", path: path, errno: e)
        }
        listener = fd
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            let e = errno
            close(fd)
            throw SocketError(call: "pipe", path: path, errno: e)
        }
        for end in pipeFDs { setNonBlockingCloseOnExec(end) }
        wake = (pipeFDs[0], pipeFDs[1])
        let thread = Thread { [self] in serve() }
        thread.name = "marquee-control"
        self.thread = thread
        thread.start()
    }

    /// True when `path` is a socket nobody accepts on.
    private static func isStale(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK else { return false }
        let probe = UnixSocketClient.connect(path: path, timeout: 0.2)
        return probe == nil
    }

    /// Stops serving, disconnects every client and removes the socket file.
    public func stop() {
        lock.withLock { stopping = true }
        _ = write(wake.write, "x", 1)
        while thread?.isFinished == false { Thread.sleep(forTimeInterval: 0.005) }
    }

    /// Sends an event (`{"event":"end-file",...}`) to every client.
    public func broadcast(_ event: JSONValue) {
        lock.withLock { pendingEvents.append(event) }
        _ = write(wake.write, "x", 1)
    }

    private func serve() {
        defer {
            for fd in clients.keys { close(fd) }
            clients.removeAll()
            close(listener)
            close(wake.read)
            close(wake.write)
            unlink(path)
        }
        var lastObservation = ContinuousClock.now
        while true {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            for (fd, client) in clients {
                fds.append(pollfd(fd: fd, events: Int16(POLLIN) | (client.output.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
            }
            // Wake at least every 100 ms to report observed property changes.
            _ = poll(&fds, nfds_t(fds.count), 100)
            let (stop, events) = lock.withLock { () -> (Bool, [JSONValue]) in
                defer { pendingEvents.removeAll() }
                return (stopping, pendingEvents)
            }
            if stop { return }
            if fds[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wake.read, &sink, sink.count) > 0 {}
            }
            if fds[0].revents & Int16(POLLIN) != 0 { acceptClients() }
            for entry in fds.dropFirst(2) where entry.revents != 0 {
                guard let client = clients[entry.fd] else { continue }
                if entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readFrom(entry.fd, client) }
                if clients[entry.fd] != nil && entry.revents & Int16(POLLOUT) != 0 { flush(entry.fd, client) }
            }
            for event in events {
                for (fd, client) in clients { send(event, to: client, fd: fd) }
            }
            if ContinuousClock.now - lastObservation >= .milliseconds(100) {
                lastObservation = .now
                reportObservedChanges()
            }
        }
    }

    private func acceptClients() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            setNonBlockingCloseOnExec(fd)
            guard clients.count < maxClients else {
                let reply = #"{"error":"too many clients","request_id":0}"# + "\n"
                _ = reply.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(fd)
                logger.warning("control client refused: too many clients", ["limit": "\(maxClients)"])
                continue
            }
            clients[fd] = Client(id: nextClientID)
            nextClientID += 1
        }
    }

    private func disconnect(_ fd: Int32, _ why: String?) {
        if let why, let client = clients[fd] {
            logger.warning("control client disconnected", ["client": "\(client.id)", "why": why])
        }
        clients[fd] = nil
        close(fd)
    }

    private func readFrom(_ fd: Int32, _ client: Client) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n == 0 { return disconnect(fd, nil) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { break }
                return disconnect(fd, "read failed: \(String(cString: strerror(errno)))")
            }
            client.input.append(contentsOf: buffer[0..<n])
            while let newline = client.input.firstIndex(of: 0x0A) {
                if newline > maxLineBytes { return disconnect(fd, "line longer than \(maxLineBytes) bytes") }
                let line = Array(client.input[..<newline])
                client.input.removeSubrange(...newline)
                handle(line, from: client, fd: fd)
                if clients[fd] == nil { return }
            }
            if client.input.count > maxLineBytes {
                return disconnect(fd, "line longer than \(maxLineBytes) bytes")
            }
        }
    }

    private func flush(_ fd: Int32, _ client: Client) {
        while !client.output.isEmpty {
            let n = client.output.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { return }
                return disconnect(fd, "write failed: \(String(cString: strerror(errno)))")
            }
            client.output.removeFirst(n)
        }
    }

    private func send(_ value: JSONValue, to client: Client, fd: Int32) {
        client.output.append(contentsOf: value.encoded.utf8)
        client.output.append(0x0A)
        if client.output.count > maxPendingBytes {
            disconnect(fd, "more than \(maxPendingBytes) bytes unread")
        } else {
            flush(fd, client)
        }
    }

    private func reply(_ client: Client, _ fd: Int32, _ requestID: JSONValue, _ result: Result<JSONValue?, ControlError>) {
        var members: [(key: String, value: JSONValue)] = []
        switch result {
        case .success(let data):
            if let data { members.append(("data", data)) }
            members.append(("request_id", requestID))
            members.append(("error", "success"))
        case .failure(let error):
            members.append(("request_id", requestID))
            members.append(("error", .string(error.replyText)))
            if case .commandFailed(let detail) = error { members.append(("detail", .string(detail))) }
        }
        send(.object(members), to: client, fd: fd)
    }

    private func handle(_ bytes: [UInt8], from client: Client, fd: Int32) {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return }
        guard let request = try? JSONParser.parse(text), case .object = request else {
            return reply(client, fd, 0, .failure(.invalidParameter))
        }
        let requestID = request["request_id"] ?? 0
        let name: String
        var arguments: [JSONValue] = []
        switch request["command"] {
        case .array(let list)?:
            guard let first = list.first?.stringValue else { return reply(client, fd, requestID, .failure(.invalidParameter)) }
            name = first
            arguments = Array(list.dropFirst())
        case .object(let members)?:
            // Named arguments: {"command":{"name":"seek","target":10}}
            guard let first = members.first(where: { $0.key == "name" })?.value.stringValue else {
                return reply(client, fd, requestID, .failure(.invalidParameter))
            }
            name = first
            arguments = members.filter { $0.key != "name" }.map(\.value)
        default:
            return reply(client, fd, requestID, .failure(.invalidParameter))
        }
        reply(client, fd, requestID, Result { () throws(ControlError) -> JSONValue? in
            try execute(name, arguments, client: client)
        })
    }

    private func execute(_ name: String, _ arguments: [JSONValue], client: Client) throws(ControlError) -> JSONValue? {
        switch name {
        case "get_property":
            guard arguments.count == 1, let property = arguments[0].stringValue else { throw .invalidParameter }
            return try handler.property(property)
        case "set_property":
            guard arguments.count == 2, let property = arguments[0].stringValue else { throw .invalidParameter }
            try handler.setProperty(property, to: arguments[1])
            return nil
        case "observe_property":
            guard arguments.count == 2, let id = arguments[0].numberValue, let property = arguments[1].stringValue else {
                throw .invalidParameter
            }
            guard handler.propertyNames.contains(property) else { throw .propertyNotFound }
            client.observed[Int(id)] = (property, nil)
            return nil
        case "unobserve_property":
            guard arguments.count == 1, let id = arguments[0].numberValue else { throw .invalidParameter }
            client.observed[Int(id)] = nil
            return nil
        case "client_name":
            return .string(client.name.isEmpty ? "client\(client.id)" : client.name)
        case "get_version":
            return .number(Double(marqueeVersionNumber))
        default:
            return try handler.run(name, arguments)
        }
    }

    private func reportObservedChanges() {
        for (fd, client) in clients where !client.observed.isEmpty {
            for (id, entry) in client.observed.sorted(by: { $0.key < $1.key }) {
                let value = (try? handler.property(entry.name)) ?? .null
                if entry.last == nil || entry.last! != value {
                    client.observed[id] = (entry.name, value)
                    send(["event": "property-change", "id": .number(Double(id)), "name": .string(entry.name), "data": value],
                         to: client, fd: fd)
                    if clients[fd] == nil { break }
                }
            }
        }
    }
}

private func setNonBlockingCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
}

/// The protocol version `get_version` reports: major * 65536 + minor.
public let marqueeVersionNumber = 0 * 65536 + 1

/// A blocking client of the control socket, for `marqueectl` and tests.
public final class UnixSocketClient {
    private let fd: Int32
    private var input = [UInt8]()

    private init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }

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
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return UnixSocketClient(fd: fd)
    }

    /// Sends one line (a newline is added).
    @discardableResult
    public func send(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// The next line, or nil on end of stream or when none came within the socket's timeout.
    public func readLine() -> String? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let newline = input.firstIndex(of: 0x0A) {
                let line = String(decoding: input[..<newline], as: UTF8.self)
                input.removeSubrange(...newline)
                return line
            }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return nil }
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

/// Where the control socket lives unless `--socket` says otherwise: `$RUNTIME_DIRECTORY/marquee.sock`
/// (systemd's RuntimeDirectory=), else `/run/marquee/marquee.sock` as root, else
/// `$XDG_RUNTIME_DIR/marquee.sock`, else a file in the temporary folder.
public func defaultControlSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
    if let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first, !runtime.isEmpty {
        return "\(runtime)/marquee.sock"
    }
    if getuid() == 0 { return "/run/marquee/marquee.sock" }
    if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return "\(xdg)/marquee.sock" }
    return NSTemporaryDirectory() + "marquee-\(getuid()).sock"
}
