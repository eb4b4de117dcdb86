#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended: its exit status, or the number of the signal that ended it.
public struct ChildEnd: Sendable, Equatable, CustomStringConvertible {
    public let status: Int32
    public let signalled: Bool

    public init(status: Int32, signalled: Bool) {
        self.status = status
        self.signalled = signalled
    }

    public var description: String { signalled ? "killed by signal \(status)" : "exit status \(status)" }

    /// How child `pid` ended, or nil while it runs (or once it has been reaped), asked of the
    /// kernel without reaping it (`waitid` with `WNOWAIT`), so its owner can still collect it.
    ///
    /// Foundation's `Process` learns of an end only when every holder of a socket it hands the
    /// child has closed it: a grandchild left behind, or a process another thread started at that
    /// moment (Foundation lists what to close before it spawns), keeps the end unseen, and
    /// `isRunning` true, for as long as it lives.
    public static func of(_ pid: Int32) -> ChildEnd? {
        guard pid > 0 else { return nil }
        var info = siginfo_t()
        guard (try? systemCall("waitid(\(pid))", { waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) })) != nil,
              info._sifields._sigchld.si_pid == pid else { return nil }
        return ChildEnd(status: info._sifields._sigchld.si_status, signalled: info.si_code != CLD_EXITED)
    }
}

extension FileDescriptor {
    /// What descriptor `fd` (held elsewhere) gives now without waiting, up to `limit` bytes: a
    /// finished child's output, when a write end may still be open in some other process.
    public static func readAvailable(_ fd: Int32, limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < limit, (try? poll(fd, timeout: 0)) == true {
            let count = buffer.withUnsafeMutableBytes { raw in (try? systemCall("read") { Glibc.read(fd, raw.baseAddress, raw.count) }) ?? 0 }
            guard count > 0 else { break }
            bytes += buffer[..<min(count, limit - bytes.count)]
        }
        return bytes
    }
}
