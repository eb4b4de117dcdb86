import Foundation
import SystemCalls

/// How a child process ended (`SystemCalls.ChildEnd`).
public typealias ProcessEnd = ChildEnd

extension ChildEnd {
    public var reason: Process.TerminationReason { signalled ? .uncaughtSignal : .exit }
}

extension Process {
    /// How the process ended, or nil while it runs, from Foundation once it knows and from the
    /// kernel before (`ChildEnd.of`: Foundation may not see an end for as long as a process that
    /// inherited its socket lives; a test suite once sat for an hour in CI that way).
    public var end: ProcessEnd? {
        guard processIdentifier > 0 else { return nil }
        if !isRunning { return ProcessEnd(status: terminationStatus, signalled: terminationReason == .uncaughtSignal) }
        return ChildEnd.of(processIdentifier)
    }

    /// Waits up to `timeout` seconds for the process to end. One still running then is killed
    /// (SIGKILL, with its process group) and nil returned.
    public func waitForEnd(timeout: Double) -> ProcessEnd? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if let end { return end }
            Thread.sleep(forTimeInterval: 0.01)
        }
        if let end { return end }
        // Its whole process group (Foundation starts each child in one of its own): what it started,
        // a QEMU guest say, must not outlive it.
        kill(-processIdentifier, SIGKILL)
        kill(processIdentifier, SIGKILL)
        let killed = Date(timeIntervalSinceNow: 5)
        while end == nil && Date() < killed { Thread.sleep(forTimeInterval: 0.01) }
        return nil
    }
}
