import Foundation
import Glibc

/// How a child process ended: its exit status, or the signal that ended it.
public struct ProcessEnd: Equatable, Sendable, CustomStringConvertible {
    public let status: Int32
    public let signalled: Bool
    public var reason: Process.TerminationReason { signalled ? .uncaughtSignal : .exit }
    public var description: String { signalled ? "killed by signal \(status)" : "exit status \(status)" }
    public init(status: Int32, signalled: Bool) {
        self.status = status
        self.signalled = signalled
    }
}

extension Process {
    /// How the process ended, or nil while it runs, found from its pid.
    ///
    /// Foundation learns that a child ended only when a socket it handed the child is closed by
    /// every process holding it: a grandchild the child left behind, or a process another thread
    /// started at that moment (Foundation lists the descriptors to close before it spawns), keeps
    /// `isRunning` true and `waitUntilExit()` waiting for as long as it lives. A test suite once
    /// sat for an hour in CI that way. `waitid` with `WNOWAIT` asks the kernel and leaves the child
    /// for Foundation to reap; `terminationStatus` is only read once Foundation has.
    public var end: ProcessEnd? {
        guard processIdentifier > 0 else { return nil }
        if !isRunning { return ProcessEnd(status: terminationStatus, signalled: terminationReason == .uncaughtSignal) }
        var info = siginfo_t()
        guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
              info._sifields._sigchld.si_pid == processIdentifier else {
            // Still running, or reaped by Foundation this instant (ECHILD): asked again next time.
            return nil
        }
        return ProcessEnd(status: info._sifields._sigchld.si_status, signalled: info.si_code != CLD_EXITED)
    }

    /// Waits up to `timeout` seconds for the process to end. One still running then is killed
    /// (SIGKILL) and nil returned.
    public func waitForEnd(timeout: Double) -> ProcessEnd? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if let end { return end }
            Thread.sleep(forTimeInterval: 0.01)
        }
        if let end { return end }
        kill(processIdentifier, SIGKILL)
        let killed = Date(timeIntervalSinceNow: 5)
        while end == nil && Date() < killed { Thread.sleep(forTimeInterval: 0.01) }
        return nil
    }
}
