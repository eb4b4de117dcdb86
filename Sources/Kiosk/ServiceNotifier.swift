import Foundation
import Playback
import Synchronization
import SystemCalls

/// systemd's service notification (`sd_notify`): datagrams like `READY=1` to `$NOTIFY_SOCKET`.
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
public final class ServiceNotifier: @unchecked Sendable {
    // @unchecked: `lastWatchdog` is a Mutex; the socket is only written.
    private let socket: NotifySocket?
    /// Half of `WATCHDOG_USEC`: how often `WATCHDOG=1` must be sent; nil when no watchdog is set.
    public let watchdogInterval: Duration?
    private let lastWatchdog = Mutex<ContinuousClock.Instant?>(nil)

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let usec = environment["WATCHDOG_USEC"].flatMap(Int64.init), usec > 0,
           environment["WATCHDOG_PID"].map({ $0 == "\(getpid())" }) ?? true {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
        socket = environment["NOTIFY_SOCKET"].flatMap { try? NotifySocket(path: $0) }
    }

    public var isActive: Bool { socket != nil }

    /// Sends `state` (newline-separated `KEY=value` lines). Returns false when it could not be sent.
    /// Never waits: when the receiver's queue is full the message is dropped (the next watchdog
    /// ping or status comes soon), so a manager that does not read cannot stop the player.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socket else { return false }
        let bytes = Array(state.utf8)
        return (try? socket.send(bytes)) == bytes.count
    }

    // A status is one line with control characters escaped: a file name with a newline must not
    // add `KEY=value` lines (`READY=1`, `MAINPID=`) to a notification.
    public func ready(status: String) { notify("READY=1\nSTATUS=\(escapingControlCharacters(status))") }
    public func status(_ text: String) { notify("STATUS=\(escapingControlCharacters(text))") }
    public func stopping() { notify("STOPPING=1") }
    public func reloading() { notify("RELOADING=1") }

    /// Sends `WATCHDOG=1` if half the watchdog interval has passed since the last one. Called only
    /// while presentation progresses (`ServiceSupervisor`), so a frozen picture or a hung presenter
    /// stops the pings and systemd restarts the service.
    public func watchdogPing(now: ContinuousClock.Instant = .now) {
        guard let interval = watchdogInterval, socket != nil else { return }
        let due = lastWatchdog.withLock { lastWatchdog -> Bool in
            if let last = lastWatchdog, now - last < interval / 2 { return false }
            lastWatchdog = now
            return true
        }
        if due { notify("WATCHDOG=1") }
    }
}

/// A datagram socket to systemd's notification socket: the path (`@` for the abstract namespace).
private final class NotifySocket: Sendable {
    private let socket: FileDescriptor
    private let address: sockaddr_un
    private let addressLength: socklen_t

    /// nil for a path that is empty or too long for a socket address.
    init?(path: String) throws(SystemCallError) {
        var address = sockaddr_un()
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // the abstract namespace
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: bytes) }
        self.address = address
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        socket = try FileDescriptor.socket(domain: AF_UNIX, type: Int32(SOCK_DGRAM.rawValue), call: "socket(AF_UNIX, SOCK_DGRAM)")
    }

    /// Sends one datagram without waiting (a full queue: `wouldBlock`); the count sent.
    func send(_ bytes: [UInt8]) throws(SystemCallError) -> Int {
        var address = self.address
        let (fd, length) = (socket.rawValue, addressLength)
        return try systemCall("sendto(NOTIFY_SOCKET)") {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                    bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), target, length) }
                }
            }
        }
    }
}

/// Feeds the systemd watchdog from what the status says, not from the mere passing of vsyncs:
/// every `tick` judges `KioskStatus.supervision` and sends `WATCHDOG=1` only while presentation
/// progresses or rightly waits (for a display, paused by command, nothing playable, starting up);
/// `STATUS=` says which, or why it is stalled, whenever that changes. A frozen picture thus
/// stops the pings and systemd restarts the service after `WatchdogSec`.
public final class ServiceSupervisor: @unchecked Sendable {
    // @unchecked: `judged` and `timer` are Mutexes.
    private let notifier: ServiceNotifier
    private let status: KioskStatus
    private let logger: Logger
    /// The last verdict's summary, and whether it said progressing.
    private let judged = Mutex<(summary: String?, progressing: Bool)>((nil, true))
    private let timer = Mutex<TimerSource?>(nil)
    /// A dispatch timer handed between threads (dispatch sources are thread-safe).
    private struct TimerSource: @unchecked Sendable { let source: any DispatchSourceTimer }

    public init(notifier: ServiceNotifier, status: KioskStatus, logger: Logger) {
        self.notifier = notifier
        self.status = status
        self.logger = logger
    }

    /// Judges once: feeds the watchdog when due and progressing, updates `STATUS=`, and logs
    /// when presentation stops or starts progressing again. Returns the verdict.
    @discardableResult
    public func tick(now: ContinuousClock.Instant = .now) -> KioskStatus.Supervision {
        let verdict = status.supervision(now: now)
        if verdict.progressing { notifier.watchdogPing(now: now) }
        let (changed, wasProgressing) = judged.withLock { last -> (Bool, Bool) in
            defer { last = (verdict.summary, verdict.progressing) }
            return (last.summary != verdict.summary, last.progressing)
        }
        if changed { notifier.status(verdict.summary) }
        if wasProgressing && !verdict.progressing {
            logger.error("presentation stalled; the watchdog is no longer fed", ["why": verdict.summary,
                                                                               "watchdog": notifier.watchdogInterval.map { "\(($0 * 2).seconds) s" } ?? "none"])
        } else if !wasProgressing && verdict.progressing {
            logger.info("presentation progresses again", ["status": verdict.summary])
        }
        return verdict
    }

    /// Sends `READY=1` with what `STATUS=` says now.
    public func ready() {
        let summary = status.supervision().summary
        judged.withLock { $0.summary = summary }
        notifier.ready(status: summary)
    }

    /// Ticks every `interval` seconds on a queue of its own until `stop`.
    public func start(every interval: Double = 0.5) {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "marquee-supervisor"))
        source.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(50))
        source.setEventHandler { [weak self] in self?.tick() }
        timer.withLock { $0 = TimerSource(source: source) }
        source.resume()
    }

    public func stop() {
        timer.withLock { timer -> TimerSource? in
            defer { timer = nil }
            return timer
        }?.source.cancel()
    }
}
