import Foundation

/// systemd's service notification (`sd_notify`): datagrams like `READY=1` to `$NOTIFY_SOCKET`.
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
public final class ServiceNotifier: @unchecked Sendable {
    // @unchecked: `lastWatchdog` is guarded by `lock`; the socket is only written.
    private let fd: Int32
    private var address = sockaddr_un()
    private var addressLength: socklen_t = 0
    /// Half of `WATCHDOG_USEC`: how often `WATCHDOG=1` must be sent; nil when no watchdog is set.
    public let watchdogInterval: Duration?
    private let lock = NSLock()
    private var lastWatchdog: ContinuousClock.Instant?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let usec = environment["WATCHDOG_USEC"].flatMap(Int64.init), usec > 0,
           environment["WATCHDOG_PID"].map({ $0 == "\(getpid())" }) ?? true {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty,
              path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            fd = -1
            return
        }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // the abstract namespace
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: bytes) }
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    }

    deinit { if fd >= 0 { close(fd) } }

    public var isActive: Bool { fd >= 0 }

    /// Sends `state` (newline-separated `KEY=value` lines). Returns false when it could not be sent.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard fd >= 0 else { return false }
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sockaddrPointer, addressLength) }
            }
        }
        return sent == bytes.count
    }

    public func ready(status: String) { notify("READY=1\nSTATUS=\(status)") }
    public func status(_ text: String) { notify("STATUS=\(text)") }
    public func stopping() { notify("STOPPING=1") }
    public func reloading() { notify("RELOADING=1") }

    /// Sends `WATCHDOG=1` if half the watchdog interval has passed since the last one. Called when
    /// playback makes progress, so a hung presenter stops the pings and systemd restarts it.
    public func watchdogPing(now: ContinuousClock.Instant = .now) {
        guard let interval = watchdogInterval, fd >= 0 else { return }
        let due = lock.withLock { () -> Bool in
            if let last = lastWatchdog, now - last < interval / 2 { return false }
            lastWatchdog = now
            return true
        }
        if due { notify("WATCHDOG=1") }
    }
}
