import Foundation
import Playback
import Synchronization
import SystemCalls

/// The write end of the pipe the signal handler writes each signal's number to (-1 before
/// `ProcessSignals.install`). Read by the handler, so it is set once, before the handler is.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// SIGTERM, SIGINT and SIGHUP from the first instant of `main`: `install` (the first thing `main`
/// does, before it reads its arguments or its config) gives them a handler that only writes the
/// signal's number to a pipe; a thread of its own reads the pipe and hands each signal on.
///
/// Until `onStop` is set (the session does not exist yet: nothing to restore), SIGTERM and SIGINT
/// end the process at once with status 0. Until `onReload` is set (the service is not up yet), a
/// SIGHUP is remembered, and the config is read again once, when `onReload` is set. A handler
/// (rather than a blocked signal) is what children inherit nothing of: a command the player runs
/// (chronyc, pmc) starts with the default dispositions and an empty signal mask.
///
/// What comes before `main` (the dynamic loader mapping and relocating the libraries) cannot be
/// covered by the program: a signal then still has its default action.
public final class ProcessSignals: @unchecked Sendable {
    // @unchecked: `handlers` is a Mutex; the rest is immutable.
    private struct Handlers {
        var stop: (@Sendable (String) -> Void)?
        var reload: (@Sendable () -> Void)?
        var pendingReload = false
        var logger: Logger?
    }
    private let handlers = Mutex(Handlers())
    /// SIGHUPs' reloads, waiting for the reload thread (a slow reload never delays a SIGTERM).
    private let reloads = Monitor<[@Sendable () -> Void]>([])
    /// The pipe's read end (nil where the pipe could not be made); its write end is the handler's,
    /// kept open for the life of the process.
    private let readEnd: FileDescriptor?

    /// Signals `install` handles.
    public static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Installs the handler for SIGTERM, SIGINT and SIGHUP and starts the thread that hands them
    /// on. Call once, first thing in `main`.
    public static func install() -> ProcessSignals {
        let pipe: FileDescriptor.Pipe
        do {
            pipe = try signalPipe()
        } catch {
            FileHandle.standardError.write(Data("marquee: \(error): signals keep their default action\n".utf8))
            return ProcessSignals(readEnd: nil)
        }
        // The handler writes to it from now on, for the life of the process.
        signalPipeWriteEnd = pipe.writeEnd.relinquish()
        let signals = ProcessSignals(readEnd: pipe.readEnd)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            // Async-signal-safe: one write(2), errno kept.
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(signalPipeWriteEnd, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        for number in handled { sigaction(number, &action, nil) }
        startThread(named: "marquee-signals") { signals.readLoop() }
        return signals
    }

    /// The pipe from the handler: the handler must never block, so a full pipe drops the byte
    /// (the same signal is pending many times over then anyway).
    private static func signalPipe() throws(SystemCallError) -> FileDescriptor.Pipe {
        let pipe = try FileDescriptor.pipe()
        try pipe.writeEnd.setNonBlocking()
        return pipe
    }

    private init(readEnd: consuming FileDescriptor?) {
        self.readEnd = readEnd
        startThread(named: "marquee-reload") { [reloads] in
            while true {
                // The next SIGHUP's reload, whenever one comes (waited for in slices of a minute).
                let due = reloads.wait(until: { !$0.isEmpty }, timeout: 60) { queued, _ in
                    defer { queued.removeAll() }
                    return queued
                }
                for reload in due { reload() }
            }
        }
    }

    /// Where hand-offs are logged from now on (before: standard error).
    public func setLogger(_ logger: Logger) { handlers.withLock { $0.logger = logger } }

    /// SIGTERM and SIGINT call `handler` (with the signal's name) from now on.
    public func onStop(_ handler: @escaping @Sendable (String) -> Void) { handlers.withLock { $0.stop = handler } }

    /// SIGHUP calls `handler` from now on, on a thread of its own (a slow reload never delays a
    /// SIGTERM); a SIGHUP that came before calls it once now.
    public func onReload(_ handler: @escaping @Sendable () -> Void) {
        let pending = handlers.withLock { state -> Bool in
            state.reload = handler
            defer { state.pendingReload = false }
            return state.pendingReload
        }
        if pending {
            log(.info, "SIGHUP came during start-up; reading the config again now")
            reloads.update { $0.append(handler) }
        }
    }

    private func readLoop() {
        guard let fd = readEnd.rawValue else { return }
        var byte: UInt8 = 0
        while true {
            // EINTR is retried; an error or the end of the pipe (neither can happen while the
            // write end is open) ends the thread.
            let count = try? withUnsafeMutableBytes(of: &byte) { bytes throws(SystemCallError) in
                try systemCall("read(signal pipe)") { read(fd, bytes.baseAddress, 1) }
            }
            guard count == 1 else {
                log(.error, "the signal pipe cannot be read; SIGTERM, SIGINT and SIGHUP are no longer handed on")
                return
            }
            handle(Int32(byte))
        }
    }

    private func handle(_ number: Int32) {
        let name = number == SIGHUP ? "SIGHUP" : number == SIGINT ? "SIGINT" : "SIGTERM"
        if number == SIGHUP {
            let handler = handlers.withLock { state -> (@Sendable () -> Void)? in
                if state.reload == nil { state.pendingReload = true }
                return state.reload
            }
            if let handler {
                // Said as it comes, not when the reload thread gets to it: an exit may come first.
                log(.info, "SIGHUP received; reloading")
                reloads.update { $0.append(handler) }
            } else {
                log(.info, "SIGHUP during start-up: the config is read again once the player runs")
            }
            return
        }
        guard let stop = handlers.withLock({ $0.stop }) else {
            // Nothing is set up yet (no output, no socket): end here, cleanly.
            log(.info, "\(name) during start-up; exiting")
            _exit(0)
        }
        stop(name)
    }

    private func log(_ level: Logger.Level, _ message: String) {
        if let logger = handlers.withLock({ $0.logger }) {
            logger.log(level, message)
        } else {
            FileHandle.standardError.write(Data("marquee: \(message)\n".utf8))
        }
    }
}
