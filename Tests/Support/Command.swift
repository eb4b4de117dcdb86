import Foundation

/// What a finished command printed.
public struct CommandResult: Sendable {
    /// The exit status, or the signal's number when a signal ended it.
    public let status: Int32
    /// Standard output (with standard error too when the command was run with `mergeErrors`).
    public let output: Data
    public let errors: Data
    /// How it ended; nil when it was still running at its timeout (it was killed then).
    public let end: ProcessEnd?
    public var timedOut: Bool { end == nil }
    public var text: String { String(decoding: output, as: UTF8.self) }
    public var errorText: String { String(decoding: errors, as: UTF8.self) }
}

public enum Command {
    /// The repository this test build comes from.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments` until it exits and
    /// returns what it printed. `environment` is added to this process's. A command still running
    /// after `timeout` seconds is killed, so that a hang fails the test instead of stalling it (by
    /// default 40 minutes: a VM test's guest waits its turn behind the others').
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           directory: String? = nil, mergeErrors: Bool = false, timeout: Double = 2400) throws -> CommandResult {
        let process = Process()
        if executable.hasPrefix("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable] + arguments
        }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = mergeErrors ? out : err
        try process.run()
        return collect(process, output: out, errors: mergeErrors ? nil : err, timeout: timeout)
    }

    /// Reads a started `process`'s `output` and `errors` pipes until it ends (at most `timeout`
    /// seconds: then it is killed). Reading stops once the process has ended and the pipes are
    /// drained, not at their end of file: a process that inherited a write end by chance (another
    /// thread's child started at that moment, a grandchild left behind) may hold it open for long.
    public static func collect(_ process: Process, output: Pipe, errors: Pipe? = nil, timeout: Double) -> CommandResult {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var fds = [output.fileHandleForReading.fileDescriptor] + (errors.map { [$0.fileHandleForReading.fileDescriptor] } ?? [])
        var data = [Data(), Data()]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var endedAt: Date?
        while !fds.isEmpty {
            var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), 50)
            if ready < 0 && errno != EINTR { break }
            var read = false
            for entry in polled where entry.revents != 0 {
                let count = Glibc.read(entry.fd, &buffer, buffer.count)
                let index = entry.fd == output.fileHandleForReading.fileDescriptor ? 0 : 1
                if count > 0 {
                    data[index].append(contentsOf: buffer[..<count])
                    read = true
                } else if count == 0 || errno != EINTR {
                    fds.removeAll { $0 == entry.fd }
                }
            }
            if read { continue }
            // Ended, and nothing more came for a moment: what it wrote has been read.
            if process.end != nil {
                if let endedAt, Date().timeIntervalSince(endedAt) > 0.2 { break }
                if endedAt == nil { endedAt = Date() }
            } else if Date() > deadline {
                break
            }
        }
        let end = process.waitForEnd(timeout: max(0, deadline.timeIntervalSinceNow))
        return CommandResult(status: end?.status ?? SIGKILL, output: data[0], errors: data[1], end: end)
    }

    /// `tools/check-trace.py` on `trace` with `arguments`: its JSON report per output.
    public static func checkTrace(_ trace: String, _ arguments: [String] = []) throws -> (status: Int32, report: [String: [String: Any]]) {
        let result = try run("python3", [repository + "/tools/check-trace.py", trace, "--json"] + arguments)
        let report = try JSONSerialization.jsonObject(with: result.output) as? [String: [String: Any]] ?? [:]
        return (result.status, report)
    }
}
