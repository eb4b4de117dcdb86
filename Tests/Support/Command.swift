import Foundation

/// What a finished command printed.
public struct CommandResult: Sendable {
    public let status: Int32
    /// Standard output (with standard error too when the command was run with `mergeErrors`).
    public let output: Data
    public let errors: Data
    public var text: String { String(decoding: output, as: UTF8.self) }
    public var errorText: String { String(decoding: errors, as: UTF8.self) }
}

public enum Command {
    /// The repository this test build comes from.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments` until it exits and
    /// returns what it printed. `environment` is added to this process's. With a `timeout` (seconds)
    /// a command still running then is terminated, so that a hang fails the test instead of stalling it.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           directory: String? = nil, mergeErrors: Bool = false, timeout: Double? = nil) throws -> CommandResult {
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
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        if let timeout { DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer) }
        defer { killer.cancel() }
        // Standard error is drained beside standard output, so that neither pipe fills up.
        final class Box: @unchecked Sendable { var data = Data() }
        let errors = Box()
        let drained = DispatchSemaphore(value: 0)
        if mergeErrors {
            drained.signal()
        } else {
            Thread.detachNewThread {
                errors.data = err.fileHandleForReading.readDataToEndOfFile()
                drained.signal()
            }
        }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, output: output, errors: errors.data)
    }

    /// `tools/check-trace.py` on `trace` with `arguments`: its JSON report per output.
    public static func checkTrace(_ trace: String, _ arguments: [String] = []) throws -> (status: Int32, report: [String: [String: Any]]) {
        let result = try run("python3", [repository + "/tools/check-trace.py", trace, "--json"] + arguments)
        let report = try JSONSerialization.jsonObject(with: result.output) as? [String: [String: Any]] ?? [:]
        return (result.status, report)
    }
}
