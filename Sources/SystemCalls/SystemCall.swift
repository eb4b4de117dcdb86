#if canImport(Glibc)
import Glibc
#endif
// LocalizedError only: the module stays clear of the rest of Foundation.
import FoundationEssentials

/// A failing system call: names the call (with what it was called on) and its errno.
public struct SystemCallError: LocalizedError, CustomStringConvertible, Sendable, Equatable {
    public var errorDescription: String? { description }
    /// The call and its subject, e.g. `open(/dev/dri/card0)`.
    public let call: String
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The C library's text for `errno`, e.g. "No such file or directory".
    public var reason: String { String(cString: strerror(errno)) }

    /// EAGAIN / EWOULDBLOCK: a non-blocking descriptor had nothing to give (or no room).
    public var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }

    public var description: String { "\(call) failed (errno \(errno): \(reason))" }
}

/// Runs `body`, a system call that returns -1 and sets errno on failure, again as long as it fails
/// with EINTR (a signal arrived first); returns its result, or throws `SystemCallError` naming
/// `call` and the errno.
@discardableResult
public func systemCall<Result: BinaryInteger>(_ call: @autoclosure () -> String,
                                              _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(call: call(), errno: code)
    }
}

/// `systemCall` for calls that return a negative errno instead of setting it (-EINVAL), as many
/// libraries' wrappers do; -1 with errno set is understood as well.
@discardableResult
public func systemCallReturningErrno<Result: FixedWidthInteger & SignedInteger>(_ call: @autoclosure () -> String,
                                                            _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = result == -1 ? errno : Int32(truncatingIfNeeded: -result)
        if code == EINTR { continue }
        throw SystemCallError(call: call(), errno: code)
    }
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
