import Foundation
import Playback

/// An error reply of the control protocol, with mpv's error strings.
public enum ControlError: Error, Equatable, Sendable {
    case propertyUnavailable
    case propertyNotFound
    case invalidParameter
    /// A property that cannot be set (read-only), or a value it cannot take.
    case propertyError
    /// A value of a type the property does not take (`set_property pause "maybe"`).
    case propertyFormat
    case commandFailed(String)

    /// The `error` field of the reply.
    public var replyText: String {
        switch self {
        case .propertyUnavailable: "property unavailable"
        case .propertyNotFound: "property not found"
        case .invalidParameter: "invalid parameter"
        case .propertyError: "error accessing property"
        case .propertyFormat: "unsupported format for accessing property"
        case .commandFailed: "error running command"
        }
    }
}

/// What the control server asks of the player. Called on the server's worker threads: requests of
/// different clients run at the same time (each client's one after another), so an implementation
/// must be thread-safe; it may block (a screenshot waits for the output) without holding up other
/// clients.
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
/// One thread does the socket I/O with `poll`. Requests that reach the player run on worker
/// threads, one at a time per client and in order (so a client's replies come in the order it
/// asked), while other clients go on being answered: a slow request (a screenshot, a player that
/// does not answer) holds up only the client that sent it. Observed properties are read on a
/// worker too.
///
/// Bad input never reaches playback, and every per-client resource is bounded: malformed lines get
/// an error reply; a line longer than `maxLineBytes` disconnects; a client past `maxClients` is
/// refused; at most `maxObservedPerClient` observed properties; one request runs at a time and
/// lines behind it wait in at most `maxLineBytes` of input (the server stops reading meanwhile).
/// Replies a client asked for are always delivered whole, however big (a screenshot), but the
/// server runs its next request only once less than `maxPendingBytes` of replies wait unread.
/// Unsolicited lines (events, property changes) a client leaves unread count against
/// `maxPendingBytes`: past it the client is disconnected and the log names it.
public final class ControlServer: @unchecked Sendable {
    // @unchecked: clients and the listening socket belong to the server thread; `pendingEvents`,
    // `finished`, `stopping` and the wake pipe's state are guarded by `lock`.
    public let path: String
    public let maxClients: Int
    public let maxLineBytes: Int
    public let maxPendingBytes: Int
    public let maxObservedPerClient: Int
    private let handler: any ControlHandler
    private let logger: Logger
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let lock = NSLock()
    private var pendingEvents: [JSONValue] = []
    private var finished: [Finished] = []
    private var stopping = false
    private var wakeClosed = false
    private var thread: Thread?
    // The server thread's own.
    private var clients: [Int32: Client] = [:]
    private var nextClientID = 1
    private var observationRunning = false
    /// Reads of the observed properties, run in turn by one **marquee-control-observe** thread
    /// (they come as often as new pictures: a thread each would be one thread a frame).
    private let observations = FrameQueue<@Sendable () -> Void>(capacity: 2)
    /// `propertiesMayHaveChanged` was called since the observed properties were last read.
    private var changeHinted = false
    /// Some client observes a property (guarded by `lock`: `propertiesMayHaveChanged` reads it).
    private var anyObserver = false
    /// Observed properties are read at most this often when the player says they changed (a new
    /// picture), and every 100 ms otherwise.
    public static let fastestObservation: Duration = .milliseconds(10)
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    /// What a worker hands back to the server thread.
    private enum Finished {
        /// The encoded reply line of a client's request.
        case reply(clientID: Int, line: [UInt8])
        /// The values of the observed properties.
        case observed([String: JSONValue?])
    }

    final class Client {
        /// The protocol: parsing, the protocol's own commands, observed properties.
        let session: ControlSession
        var id: Int { session.clientID }
        /// The connecting process (SO_PEERCRED), for the log.
        let pid: Int32?
        /// Bytes read; `input[..<inputStart]` is handled, `input[inputStart..<scanned]` holds no newline.
        var input = [UInt8]()
        var inputStart = 0
        var scanned = 0
        var output = OutputQueue()
        /// A request of this client runs on a worker.
        var busy = false
        /// The client will send no more (end of stream): what it sent is still answered.
        var inputClosed = false
        /// The client has gone: what it sent still runs, replies are dropped.
        var peerGone = false
        init(_ session: ControlSession, pid: Int32?) {
            self.session = session
            self.pid = pid
        }
        var label: String { session.label }
        var unhandledBytes: Int { input.count - inputStart }
        var hasCompleteLine: Bool { input[scanned...].contains(0x0A) }
    }

    /// A client's unsent output: one byte stream, knowing which of its bytes are replies (asked for)
    /// and which are events (unsolicited).
    struct OutputQueue {
        private var bytes = [UInt8]()
        private var start = 0
        /// How many bytes of the stream have been sent (the stream offset of `bytes[start]`).
        private var sent = 0
        /// The stream ranges of replies not yet sent completely, from `replyHead` on.
        private var replies: [(from: Int, to: Int)] = []
        private var replyHead = 0
        private(set) var unsentReplyBytes = 0

        var isEmpty: Bool { start == bytes.count }
        var unsentBytes: Int { bytes.count - start }
        var unsentEventBytes: Int { unsentBytes - unsentReplyBytes }

        mutating func append(_ line: [UInt8], isReply: Bool) {
            if isReply {
                let from = sent + unsentBytes
                replies.append((from, from + line.count))
                unsentReplyBytes += line.count
            }
            bytes.append(contentsOf: line)
        }

        /// Sends what the socket takes now; the errno of a failed send, nil otherwise.
        mutating func send(to fd: Int32) -> Int32? {
            defer { compact() }
            while start < bytes.count {
                let n = bytes[start...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                    return errno
                }
                consumed(n)
            }
            return nil
        }

        private mutating func consumed(_ n: Int) {
            let before = sent
            sent += n
            start += n
            while replyHead < replies.count {
                let range = replies[replyHead]
                let overlap = min(range.to, sent) - max(range.from, before)
                if overlap > 0 { unsentReplyBytes -= overlap }
                guard range.to <= sent else { break }
                replyHead += 1
            }
        }

        private mutating func compact() {
            if start == bytes.count {
                // A big reply's buffer is given back; a small one is kept for the next lines.
                bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 16)
                start = 0
            } else if start > 1 << 16 && start * 2 > bytes.count {
                bytes.removeSubrange(0..<start)
                start = 0
            }
            if replyHead == replies.count {
                replies.removeAll(keepingCapacity: true)
                replyHead = 0
            } else if replyHead > 64 && replyHead * 2 > replies.count {
                replies.removeSubrange(0..<replyHead)
                replyHead = 0
            }
        }
    }

    public struct SocketError: Error, CustomStringConvertible {
        public let call: String
        public let path: String
        public let errno: Int32
        public var description: String { "\(call) on control socket \(path) failed: \(String(cString: strerror(errno)))" }
    }

    /// Binds `path` (mode `mode`, default 0660) and starts serving.
    public init(path: String, mode: mode_t = 0o660, handler: any ControlHandler, logger: Logger,
                maxClients: Int = 32, maxLineBytes: Int = 64 * 1024, maxPendingBytes: Int = 1 << 20,
                maxObservedPerClient: Int = 64) throws {
        self.path = path
        self.handler = handler
        self.logger = logger.with(["socket": path])
        self.maxClients = maxClients
        self.maxLineBytes = maxLineBytes
        self.maxPendingBytes = maxPendingBytes
        self.maxObservedPerClient = maxObservedPerClient
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
        let observer = Thread { [observations] in
            while true {
                switch observations.pop(timeout: 1) {  // an idle wait for work; 1 s to see a close
                case .element(let read): read()
                case .timedOut: continue
                case .closed: return
                }
            }
        }
        observer.name = "marquee-control-observe"
        observer.start()
    }

    /// True when `path` is a socket nobody accepts on.
    private static func isStale(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK else { return false }
        let probe = UnixSocketClient.connect(path: path, timeout: 0.2)
        return probe == nil
    }

    /// Stops serving, disconnects every client and removes the socket file. Requests still running
    /// on workers finish there; their replies are dropped.
    public func stop() {
        lock.withLock { stopping = true }
        wakeUp()
        while thread?.isFinished == false { Thread.sleep(forTimeInterval: 0.005) }
        observations.close()
    }

    /// Says that observed properties may have changed (the player shows a new picture, so
    /// `time-pos` moved): they are read again soon (at most every `fastestObservation`), not only
    /// at the next 100 ms tick. Cheap when nobody observes. Any thread.
    public func propertiesMayHaveChanged() {
        let wake = lock.withLock { () -> Bool in
            guard anyObserver, !changeHinted else { return false }
            changeHinted = true
            return true
        }
        if wake { wakeUp() }
    }

    /// Sends an event (`{"event":"end-file",...}`) to every client.
    public func broadcast(_ event: JSONValue) {
        lock.withLock { pendingEvents.append(event) }
        wakeUp()
    }

    /// Wakes the server thread's `poll` (from any thread; not once the pipe is closed).
    private func wakeUp() {
        lock.withLock {
            guard !wakeClosed else { return }
            _ = write(wake.write, "x", 1)
        }
    }

    /// Hands a worker's result to the server thread.
    private func finish(_ result: Finished) {
        lock.withLock { finished.append(result) }
        wakeUp()
    }

    private func serve() {
        defer {
            for fd in clients.keys { close(fd) }
            clients.removeAll()
            close(listener)
            lock.withLock {
                wakeClosed = true
                close(wake.read)
                close(wake.write)
            }
            unlink(path)
        }
        var lastObservation = ContinuousClock.now
        while true {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            for (fd, client) in clients where !client.peerGone {
                // Input is read while what waits unhandled is under a line's limit; POLLHUP and
                // POLLERR are reported whatever is asked.
                let readable = !client.inputClosed && client.unhandledBytes <= maxLineBytes
                fds.append(pollfd(fd: fd, events: (readable ? Int16(POLLIN) : 0) | (client.output.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
            }
            // Wake at least every 100 ms to report observed property changes (sooner when a change
            // was hinted while a read ran).
            _ = poll(&fds, nfds_t(fds.count), lock.withLock { changeHinted } ? 10 : 100)
            let (stop, events, results) = lock.withLock { () -> (Bool, [JSONValue], [Finished]) in
                defer {
                    pendingEvents.removeAll()
                    finished.removeAll()
                }
                return (stopping, pendingEvents, finished)
            }
            if stop { return }
            if fds[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wake.read, &sink, sink.count) > 0 {}
            }
            if fds[0].revents & Int16(POLLIN) != 0 { acceptClients() }
            for entry in fds.dropFirst(2) where entry.revents != 0 {
                guard let client = clients[entry.fd] else { continue }
                if entry.revents & Int16(POLLIN) != 0 {
                    readFrom(entry.fd, client)
                } else if entry.revents & Int16(POLLHUP | POLLERR) != 0 {
                    client.peerGone = true
                    client.inputClosed = true
                }
                if clients[entry.fd] != nil && entry.revents & Int16(POLLOUT) != 0 { flush(entry.fd, client) }
            }
            for result in results {
                switch result {
                case .reply(let id, let line):
                    guard let (fd, client) = clients.first(where: { $0.value.id == id }) else { continue }  // gone meanwhile
                    client.busy = false
                    if !client.peerGone {
                        client.output.append(line, isReply: true)
                        flush(fd, client)
                    }
                case .observed(let values):
                    observationRunning = false
                    reportObservedChanges(values)
                }
            }
            for event in events {
                for (fd, client) in clients { send(event, to: client, fd: fd) }
            }
            let sinceObservation = ContinuousClock.now - lastObservation
            if !observationRunning
                && (sinceObservation >= .milliseconds(100) || (sinceObservation >= Self.fastestObservation && lock.withLock({ changeHinted }))) {
                lastObservation = .now
                lock.withLock { changeHinted = false }
                readObservedProperties()
            }
            for (fd, client) in clients { process(fd, client) }
        }
    }

    private func acceptClients() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            setNonBlockingCloseOnExec(fd)
            let pid = peerProcess(fd)
            guard clients.count < maxClients else {
                let reply = #"{"error":"too many clients","request_id":0}"# + "\n"
                _ = reply.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(fd)
                logger.warning("control client refused: too many clients", ["limit": "\(maxClients)", "pid": pid.map { "\($0)" } ?? "-"])
                continue
            }
            clients[fd] = Client(ControlSession(clientID: nextClientID, handler: handler, maxObserved: maxObservedPerClient), pid: pid)
            nextClientID += 1
        }
    }

    private func disconnect(_ fd: Int32, _ why: String?) {
        if let why, let client = clients[fd] {
            logger.warning("control client disconnected", ["client": client.label, "pid": client.pid.map { "\($0)" } ?? "-", "why": why])
        }
        clients[fd] = nil
        close(fd)
    }

    /// Reads one chunk (poll comes back for the rest): a client cannot hold the thread.
    private func readFrom(_ fd: Int32, _ client: Client) {
        let n = read(fd, &scratch, scratch.count)
        if n == 0 {
            client.inputClosed = true
        } else if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            disconnect(fd, "read failed: \(String(cString: strerror(errno)))")
        } else {
            client.input.append(contentsOf: scratch[0..<n])
        }
    }

    /// Runs the client's waiting lines until one goes to a worker; ends a client that is done.
    private func process(_ fd: Int32, _ client: Client) {
        guard clients[fd] === client else { return }  // disconnected meanwhile
        while !client.busy && client.output.unsentReplyBytes < maxPendingBytes {
            guard let newline = client.input[client.scanned...].firstIndex(of: 0x0A) else {
                client.scanned = client.input.count
                break
            }
            let line = Array(client.input[client.inputStart..<newline])
            client.inputStart = newline + 1
            client.scanned = client.inputStart
            guard line.count <= maxLineBytes else { return disconnect(fd, "line longer than \(maxLineBytes) bytes") }
            handle(line, from: client, fd: fd)
            guard clients[fd] === client else { return }
        }
        if client.inputStart > 0 && (client.inputStart == client.input.count || client.inputStart > 1 << 15) {
            client.input.removeSubrange(0..<client.inputStart)
            client.scanned -= client.inputStart
            client.inputStart = 0
        }
        if client.scanned == client.input.count && client.unhandledBytes > maxLineBytes {
            return disconnect(fd, "line longer than \(maxLineBytes) bytes")
        }
        // A client that has said all it will is closed once it is answered (one that has gone,
        // once its requests have run).
        if client.inputClosed && !client.busy && !client.hasCompleteLine && (client.peerGone || client.output.isEmpty) {
            disconnect(fd, nil)
        }
    }

    private func flush(_ fd: Int32, _ client: Client) {
        if let error = client.output.send(to: fd) {
            if error == EPIPE || error == ECONNRESET {
                // Gone: what it sent still runs (a command sent before closing), nothing more is sent.
                client.peerGone = true
                client.inputClosed = true
            } else {
                disconnect(fd, "write failed: \(String(cString: strerror(error)))")
            }
        }
    }

    /// An event: unsolicited, so it counts against the client's unread limit.
    private func send(_ value: JSONValue, to client: Client, fd: Int32) {
        guard !client.peerGone else { return }
        let line = Array(value.encoded.utf8) + [0x0A]
        if client.output.unsentEventBytes + line.count > maxPendingBytes {
            disconnect(fd, "more than \(maxPendingBytes) bytes of events unread")
        } else {
            client.output.append(line, isReply: false)
            flush(fd, client)
        }
    }

    /// One request line: answered here, or its player's part started on a worker.
    private func handle(_ bytes: [UInt8], from client: Client, fd: Int32) {
        switch client.session.request(bytes) {
        case nil:
            return
        case .answered(let line)?:
            guard !client.peerGone else { return }
            client.output.append(line, isReply: true)
            flush(fd, client)
        case .player(let work)?:
            // The player's part runs on a worker; the server thread goes on with the other clients.
            client.busy = true
            let id = client.id
            let worker = Thread { [self] in finish(.reply(clientID: id, line: work())) }
            worker.name = "marquee-control-request"
            worker.start()
        }
    }

    /// Reads every observed property once, on the observe thread (a slow property holds up no client).
    private func readObservedProperties() {
        let names = clients.values.reduce(into: Set<String>()) { $0.formUnion($1.session.observedNames) }
        lock.withLock { anyObserver = !names.isEmpty }
        guard !names.isEmpty else { return }
        let handler = self.handler
        // One read at a time (observationRunning), so the queue always has room.
        observationRunning = observations.push({ [self] in
            // nil: unavailable or unknown (the change event then has no data, as mpv's).
            var values: [String: JSONValue?] = [:]
            for name in names { values.updateValue(try? handler.property(name), forKey: name) }
            finish(.observed(values))
        }, timeout: 0.5) == .pushed
    }

    private func reportObservedChanges(_ values: [String: JSONValue?]) {
        for (fd, client) in clients {
            for event in client.session.propertyChanges(values) {
                send(event, to: client, fd: fd)
                if clients[fd] == nil { break }
            }
        }
    }
}

/// The process at the other end of a Unix socket, when the kernel says.
private func peerProcess(_ fd: Int32) -> Int32? {
    // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc shows the type only with _GNU_SOURCE).
    var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
    var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else { return nil }
    return credentials.pid
}

private func setNonBlockingCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
}
