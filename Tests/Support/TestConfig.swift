import Foundation

/// Config files written by tests, each checked as it is written against both judges of a config:
/// the schema (`configs/marquee.schema.json`, with the jsonschema package) and the reader
/// (`marquee --check-config`). So every config a test plays is one the schema describes, whatever
/// order the tests run in, and a config a test means to be bad says so and is refused by both.
public enum TestConfig {
    public enum Expectation: Sendable {
        /// Valid for the schema and for the reader (its files may be missing: `--check-config` may
        /// say only that files cannot be played).
        case valid
        /// Refused by the schema and by `--check-config` (exit 2 for the config itself).
        case refused
        /// The one rule JSON Schema cannot state, as it compares two fields: an item's `end` must
        /// be after its `start`. The schema accepts it, `--check-config` refuses it for that.
        case refusedOnlyByCheckConfig
    }

    public struct Mismatch: Error, CustomStringConvertible {
        public let description: String
    }

    /// What `--check-config` says when a config is refused for the rule the schema cannot state.
    public static let checkConfigOnlyRule = "is not after start"

    /// Writes `text` to `path` (replacing it) and checks it: throws `Mismatch` when the schema or
    /// the reader does not judge it as `expectation` says. Returns `path`.
    @discardableResult
    public static func write(_ text: String, to path: String, _ expectation: Expectation = .valid) throws -> String {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try check(path, expectation)
        return path
    }

    /// `write` to a new file named `name` in the test media folder.
    @discardableResult
    public static func write(_ text: String, named name: String, _ expectation: Expectation = .valid) throws -> String {
        try write(text, to: TestMedia.folder + "/" + name, expectation)
    }

    /// Checks the config file at `path` against both judges.
    public static func check(_ path: String, _ expectation: Expectation) throws {
        let problems = try SchemaValidator.shared.problems(path)
        let checked = try checkConfig(path)
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "?"
        func fail(_ why: String) -> Mismatch {
            Mismatch(description: "\(path): \(why)\nconfig: \(text)\nschema: \(problems ?? ["(not checked)"])\n--check-config: \(checked.status) \(checked.errorText)")
        }
        // Exit 2 for files that cannot be played is the reader's verdict on the media, not the config.
        let lines = checked.errorText.split(separator: "\n").map(String.init)
        // FFmpeg's own messages (a source that refused the connection) are about the media too.
        let onlyMedia = lines.allSatisfy { $0.contains(": cannot be played: ") || $0.hasSuffix(": nothing in the playlist can be played")
            || $0.contains("msg=\"ffmpeg: ") }
        let readerAccepts = checked.status == 0 || (checked.status == 2 && onlyMedia)
        switch expectation {
        case .valid:
            if let problems, !problems.isEmpty { throw fail("the schema refuses a config the test calls valid") }
            if !readerAccepts { throw fail("--check-config refuses a config the test calls valid") }
        case .refused:
            if let problems, problems.isEmpty { throw fail("the schema accepts a config the test calls bad") }
            if checked.status != 2 || onlyMedia { throw fail("--check-config does not refuse a config the test calls bad") }
        case .refusedOnlyByCheckConfig:
            if let problems, !problems.isEmpty { throw fail("the schema refuses it: not the rule only --check-config has") }
            if checked.status != 2 || !checked.errorText.contains(checkConfigOnlyRule) {
                throw fail("--check-config does not refuse it for \"\(checkConfigOnlyRule)\"")
            }
        }
    }

    /// `marquee --check-config` on `path` (the binary built next to the test binary).
    public static func checkConfig(_ path: String) throws -> CommandResult {
        let marquee = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("marquee").path
        guard FileManager.default.isExecutableFile(atPath: marquee) else {
            throw Mismatch(description: "\(marquee) is not built (swift build --build-tests builds it)")
        }
        return try Command.run(marquee, ["--config", path, "--check-config"])
    }
}

/// The Python virtual environment of the tests (`.build/test-venv`), with packages from PyPI
/// installed on first use, one install at a time in this process.
public enum TestVenv {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
        /// PyPI could not be reached (no network): a reason to skip, not a failure.
        public let offline: Bool
    }

    private static let lock = NSLock()

    /// The venv's python with `package` importable as `module`.
    public static func python(package: String, module: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        let venv = Command.repository + "/.build/test-venv"
        let python = venv + "/bin/python"
        if (try? Command.run(python, ["-c", "import \(module)"]))?.status == 0 { return python }
        if !FileManager.default.isExecutableFile(atPath: python) {
            let made = try Command.run("python3", ["-m", "venv", venv], mergeErrors: true)
            guard made.status == 0 else {
                throw Unavailable(description: "python3 -m venv (Debian's python3-venv) failed: \(made.text)", offline: false)
            }
        }
        let pip = try Command.run(venv + "/bin/pip", ["install", "--quiet", "--disable-pip-version-check", "--timeout", "20", package],
                                  mergeErrors: true)
        if pip.status != 0 {
            let unreachable = ["Network is unreachable", "Temporary failure in name resolution", "Failed to establish a new connection",
                               "timed out", "ProxyError"]
            throw Unavailable(description: "pip install \(package) failed: \(pip.text.suffix(600))",
                              offline: unreachable.contains(where: pip.text.contains))
        }
        return python
    }
}

/// One `tools/schema-check.py --serve` for this test process: a config path a line in, its schema
/// problems (a JSON list) a line out. Each answer is waited for at most 30 s.
final class SchemaValidator: @unchecked Sendable {
    // @unchecked: everything mutable is guarded by `lock`.
    static let shared = SchemaValidator()
    private let lock = NSLock()
    private var process: Process?
    private var input: FileHandle?
    private var output: Int32 = -1
    private var pending: [UInt8] = []
    /// Why there is no validator: PyPI unreachable (then the schema half is skipped, said once;
    /// SchemaTests skips itself then too). Any other reason fails the check.
    private var offline: String?

    /// The schema's problems with the file (empty: valid); nil when jsonschema cannot be
    /// installed because PyPI is unreachable.
    func problems(_ path: String) throws -> [String]? {
        try lock.withLock {
            if offline != nil { return nil }
            if process == nil || process?.end != nil {
                do {
                    try start()
                } catch let error as TestVenv.Unavailable where error.offline {
                    offline = error.description
                    FileHandle.standardError.write(Data("test configs: not checked against the schema: \(error.description)\n".utf8))
                    return nil
                }
            }
            input?.write(Data((path + "\n").utf8))
            let line = try readLine(timeout: 30)
            guard let list = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String] else {
                throw TestConfig.Mismatch(description: "schema-check.py answered \(line)")
            }
            return list
        }
    }

    private func start() throws {
        let python = try TestVenv.python(package: "jsonschema", module: "jsonschema")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Command.repository + "/tools/schema-check.py", "--serve", Command.repository + "/configs/marquee.schema.json"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        self.process = process
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading.fileDescriptor
        pending = []
        // The read end stays open as long as the Pipe lives: keep it.
        pipes = (stdin, stdout)
    }

    private var pipes: (Pipe, Pipe)?

    private func readLine(timeout: Double) throws -> String {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestConfig.Mismatch(description: "schema-check.py did not answer within \(timeout) s") }
            var pfd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(left * 1000) + 1) >= 0 || errno == EINTR else {
                throw TestConfig.Mismatch(description: "poll on schema-check.py's output failed: errno \(errno)")
            }
            guard pfd.revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(output, &buffer, buffer.count)
            guard count > 0 else {
                process = nil
                throw TestConfig.Mismatch(description: "schema-check.py ended without answering")
            }
            pending += buffer[..<count]
        }
    }
}
