import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// `marquee` as systemd runs it: signals from its first instant, READY=1 and the watchdog.
@Suite(.serialized) struct ServiceProcessTests {
    static var binary: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marquee").path
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Waits (up to `timeout` s) until some process opens `path`: an inotify watch for IN_OPEN.
    final class OpenWatch {
        private let fd: Int32
        init(_ path: String) throws {
            fd = inotify_init1(Int32(IN_CLOEXEC))
            guard fd >= 0, inotify_add_watch(fd, path, UInt32(IN_OPEN)) >= 0 else {
                throw Failure(description: "inotify on \(path) failed: errno \(errno)")
            }
        }
        deinit { close(fd) }
        func wait(timeout: Double) -> Bool {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&pollfd, 1, Int32(timeout * 1000)) == 1
        }
    }

    /// Starts marquee on a fresh config file, sends `signal` `delay` seconds after marquee opened
    /// its config (the first thing its `main` does after it has read its arguments), and returns
    /// how it ended and what it logged.
    func signalEarly(_ signal: Int32, delay: Double, clip: String) throws -> (reason: Process.TerminationReason, status: Int32, log: String) {
        let config = TestMedia.folder + "/signal-\(UUID().uuidString.prefix(8)).json"
        // A long playlist (the same clip 400 times): setting it up takes a while, as it does
        // with a folder of many files.
        let items = Array(repeating: #"{"uri": "\#(clip)"}"#, count: 400).joined(separator: ", ")
        try TestConfig.write(#"{"playlist": [\#(items)], "loop": true}"#, to: config)
        let watch = try OpenWatch(config)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        // The real clock: half a second of playing, so the signal always comes while it runs (on
        // the virtual clock the whole second could be over within the 50 ms).
        process.arguments = ["--config", config, "--output", "headless", "--mode", "160x90@30", "--clock", "real",
                             "--exit-after", "0.5", "--socket", "none"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        guard watch.wait(timeout: 20) else {
            process.terminate()
            throw Failure(description: "marquee never opened its config")
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        kill(process.processIdentifier, signal)
        // However it goes, it ends: a hang is killed after 30 s (and then fails the test).
        let result = Command.collect(process, output: output, timeout: 30)
        guard let end = result.end else { throw Failure(description: "marquee still ran 30 s after the signal; log:\n\(result.text)") }
        return (end.reason, end.status, result.text)
    }

    /// SIGHUP and SIGTERM from the first instant of `main` (20 starts each, the signal 0 to 50 ms
    /// after marquee opened its config): never the default action (killed by the signal). SIGTERM
    /// exits with status 0; SIGHUP is remembered and the config read again once the player runs,
    /// which then plays to its end (status 0).
    @Test(arguments: [SIGHUP, SIGTERM])
    func aSignalRightAfterStartNeverKills(_ signal: Int32) throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let name = signal == SIGHUP ? "SIGHUP" : "SIGTERM"
        for run in 0..<20 {
            let delay = Double(run % 10) * 0.005 + (run >= 10 ? 0.0025 : 0)
            let (reason, status, log) = try signalEarly(signal, delay: delay, clip: clip)
            #expect(reason == .exit, "\(name) \(Int(delay * 1000)) ms after the config was opened killed marquee (signal \(status)); log:\n\(log)")
            #expect(status == 0, "\(name) at \(Int(delay * 1000)) ms: exit status \(status); log:\n\(log)")
            if signal == SIGHUP, reason == .exit {
                #expect(log.contains("SIGHUP"), "the SIGHUP at \(Int(delay * 1000)) ms is not in the log:\n\(log)")
            }
        }
    }

    /// READY=1 comes when the service is up (config loaded, socket open), not with the first
    /// frame: with nothing playable (or, on KMS, no display) there is never a first frame, and a
    /// unit must not wait for it until TimeoutStartSec. STATUS= says what it waits for, and the
    /// watchdog is fed while it rightly has nothing to show.
    @Test func readyComesAtOnceAndTheWatchdogIsFedWhileNothingIsPlayable() throws {
        let socket = try NotifySocket()
        let config = TestMedia.folder + "/ready-\(UUID().uuidString.prefix(8)).json"
        try TestConfig.write(#"{"playlist": [{"uri": "nothing-here.mp4"}], "loop": true}"#, to: config)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--config", config, "--output", "headless", "--mode", "160x90@30", "--exit-after", "8", "--socket", "none"]
        process.environment = ProcessInfo.processInfo.environment.merging(["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = Date()
        try process.run()
        defer { if process.end == nil { process.terminate() } }
        var ready: Double?
        var messages: [String] = []
        while Date().timeIntervalSince(start) < 6 {
            guard let message = socket.receive(timeout: 0.2) else { continue }
            messages.append(message)
            if ready == nil && message.hasPrefix("READY=1") { ready = Date().timeIntervalSince(start) }
        }
        let readyAfter = try #require(ready, "no READY=1 within 6 s: \(messages)")
        #expect(readyAfter < 5, "READY=1 after \(readyAfter) s")
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=starting") == true, "\(messages)")
        #expect(messages.contains("STATUS=nothing can be played (see health)"), "\(messages)")
        // WATCHDOG_USEC 2 s: a ping every 0.5 s or so once up; at least a few in the 6 s.
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count >= 4, "\(messages)")
    }
}
