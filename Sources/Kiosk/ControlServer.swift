import Foundation
import Playback
import Synchronization
import SystemCalls

/// An error reply of the control protocol, with mpv's error strings.
public enum ControlError: LocalizedError, Equatable, Sendable {
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

    /// The reply's text and, for a failed command, why.
    public var errorDescription: String? {
        if case .commandFailed(let why) = self { return "\(replyText): \(why)" }
        return replyText
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
    /// The `screenshot` command's picture as PNG bytes, for a caller that serves them as they are
    /// (HTTP): no base64 and JSON on the way. nil: not offered (the command's JSON reply is used).
    /// `maxWidth`: scaled down to at most that many pixels wide (the aspect kept).
    func screenshotPNG(output: String?, maxWidth: Int?) throws(ControlError) -> Data?
}

extension ControlHandler {
    public func screenshotPNG(output: String?, maxWidth: Int?) throws(ControlError) -> Data? { nil }
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
    // @unchecked: clients and the listening socket belong to the server thread; what other
    // threads hand it, and the wake pipe's state, are in `shared`.
    public let path: String
    public let maxClients: Int
    public let maxLineBytes: Int
    public let maxPendingBytes: Int
    public let maxObservedPerClient: Int
    /// How long the server thread sleeps with nothing to do (milliseconds): observed properties
    /// are read again after it. Only a wake-up ends it sooner.
    let idleWake: Int32
    /// Tests: run by the server thread each time it has read the shared state, before it acts on it.
    let afterStateRead = Mutex<(@Sendable () -> Void)?>(nil)
    let handler: any ControlHandler
    let logger: Logger
    /// The listening socket, the server thread's: closed when that thread ends.
    var listener: FileDescriptor?
    /// The wake pipe, closed by the server thread as it ends (nil then); `wake` holds its numbers,
    /// used only while it is open.
    let wakePipe: Mutex<FileDescriptor.Pipe?>
    let wake: (read: Int32, write: Int32)
    let shared = Mutex(Shared())
    /// Set when the server thread has closed every socket and ended (`stop` waits for it).
    let ended = Latch<Void>()
    // The server thread's own.
    var clients: [Int32: Client] = [:]
    var nextClientID = 1
    var observationRunning = false
    /// Reads of the observed properties, run in turn by one **marquee-control-observe** thread
    /// (they come as often as new pictures: a thread each would be one thread a frame).
    let observations = FrameQueue<@Sendable () -> Void>(capacity: 2)
    /// Observed properties are read at most this often when the player says they changed (a new
    /// picture), and every 100 ms otherwise.
    public static let fastestObservation: Duration = .milliseconds(10)
    var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    /// What other threads share with the server thread.
    struct Shared {
        var pendingEvents: [JSONValue] = []
        var finished: [Finished] = []
        var stopping = false
        /// `propertiesMayHaveChanged` was called since the observed properties were last read.
        var changeHinted = false
        /// Some client observes a property (`propertiesMayHaveChanged` reads it).
        var anyObserver = false
    }

    /// What a worker hands back to the server thread.
    enum Finished {
        /// The encoded reply line of a client's request.
        case reply(clientID: Int, line: [UInt8])
        /// The values of the observed properties.
        case observed([String: JSONValue?])
    }

    /// Binds `path` (mode `mode`, default 0660) and starts serving. Throws `SystemCallError` naming
    /// the call and the socket's path.
    public init(path: String, mode: mode_t = 0o660, handler: any ControlHandler, logger: Logger,
                maxClients: Int = 32, maxLineBytes: Int = 64 * 1024, maxPendingBytes: Int = 1 << 20,
                maxObservedPerClient: Int = 64, idleWake: Duration = .milliseconds(100)) throws {
        self.path = path
        self.handler = handler
        self.logger = logger.with(["socket": path])
        self.maxClients = maxClients
        self.maxLineBytes = maxLineBytes
        self.maxPendingBytes = maxPendingBytes
        self.maxObservedPerClient = maxObservedPerClient
        self.idleWake = Int32(max(10, min(3_600_000, idleWake / .milliseconds(1))))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemCallError(call: "bind(control socket \(path))", errno: ENAMETOOLONG)
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
        // Owned here until the server thread takes them; closed on any failure before.
        let socket = try FileDescriptor.socket(domain: AF_UNIX, type: Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                                               call: "socket(control socket \(path))")
        let fd = socket.rawValue
        // A socket file left by an earlier run that is no longer listening is replaced.
        if Self.isStale(path) { unlink(path) }
        try systemCall("bind(control socket \(path))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        chmod(path, mode)
        try systemCall("listen(control socket \(path))") { listen(fd, 16) }
        let pipe = try FileDescriptor.pipe(flags: O_NONBLOCK)
        wake = (pipe.readEnd.rawValue, pipe.writeEnd.rawValue)
        wakePipe = Mutex(pipe)
        listener = .some(socket)
        startThread(named: "marquee-control") { [self] in serve() }
        startObserving()
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
        shared.withLock { $0.stopping = true }
        wakeUp()
        // Woken, the thread sees the flag at once, unless a client holds it up.
        if ended.wait(timeout: 5) == nil {
            logger.warning("control server thread did not end within 5 s of stop; its socket closes when it does")
        }
        observations.close()
    }

    /// Sends an event (`{"event":"end-file",...}`) to every client.
    public func broadcast(_ event: JSONValue) {
        shared.withLock { $0.pendingEvents.append(event) }
        wakeUp()
    }

    /// Wakes the server thread's `poll` (from any thread; not once the pipe is closed).
    func wakeUp() {
        wakePipe.withLock { pipe in
            guard pipe != nil else { return }
            _ = write(wake.write, "x", 1)  // a full pipe wakes the thread already
        }
    }
}
