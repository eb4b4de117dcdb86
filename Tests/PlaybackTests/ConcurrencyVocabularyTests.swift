import Foundation
import Testing

/// Keeps the one concurrency vocabulary (docs/ARCHITECTURE.md, "Synchronisation") true: threads,
/// `Synchronization.Mutex` for state, `Monitor` for waits, `Latch` for one-shots, `Atomic` for
/// lone counters and flags. Every Swift file under Sources/ is read; a construct of another
/// family fails the test, naming the file and line and what to use instead.
@Suite struct ConcurrencyVocabularyTests {
    struct Rule {
        let name: String
        let pattern: String
        let instead: String
        /// Files (paths from the repository root) where the construct is the vocabulary's own
        /// implementation or public API, for good.
        let home: Set<String>
        /// Lines that match `pattern` but are allowed when they also match this (an API's type).
        let unless: String?

        init(_ name: String, _ pattern: String, instead: String, home: Set<String> = [], unless: String? = nil) {
            self.name = name
            self.pattern = pattern
            self.instead = instead
            self.home = home
            self.unless = unless
        }
    }

    static let rules: [Rule] = [
        Rule("Foundation lock", #"\bNS(Recursive)?Lock\b|\bNSCondition(Lock)?\b"#,
             instead: "Synchronization.Mutex for state, Monitor to wait for a change, Latch for a one-shot"),
        Rule("dispatch semaphore or group", #"\bDispatch(Semaphore|Group)\b"#, instead: "Latch or Monitor"),
        Rule("pthread or unfair lock", #"\bpthread_(mutex|cond|rwlock)\w*|\bos_unfair_lock"#,
             instead: "Monitor (its implementation is the one place for them)",
             home: ["Sources/Diagnostics/Monitor.swift"]),
        Rule("continuation", #"\bwith(Checked|Unsafe)(Throwing)?Continuation\b"#,
             instead: "awaitCallback (Playback's one bridge from a callback to an async API); threads wait on Latch",
             home: ["Sources/Playback/AsyncBridge.swift"]),
        Rule("stream made", #"\bAsync(Throwing)?Stream\b\s*(<[^>]*>)?\s*(\.makeStream|\()"#,
             instead: "Broadcast (the one place where Playback's AsyncStreams are made)",
             home: ["Sources/Playback/Broadcast.swift"]),
        Rule("task", #"\bTask\s*(\{|\(|\.detached)"#,
             instead: "a Thread (the API's async forms bridge through awaitCallback)"),
        Rule("dispatch queue", #"\bDispatchQueue\b"#,
             instead: "a Thread, or a Monitor to hand work over; DispatchQueue only as a time observer's queue: parameter or a timer's queue",
             unless: #"DispatchQueue\?|makeTimerSource"#),
        Rule("thread started by hand", #"\bThread\s*\{|\bThread\s*\(\s*block|\bThread\.detachNewThread"#,
             instead: "startThread(named:) (it names the thread for the operating system too)",
             home: ["Sources/Diagnostics/Threads.swift"]),
        Rule("dispatch source", #"\bDispatchSource\.make(?!TimerSource)"#, instead: "a thread that polls, with a timeout"),
        Rule("polling sleep", #"\busleep\s*\(|\bwhile\b[^{]*\{\s*Thread\.sleep"#,
             instead: "Monitor.wait(until:timeout:) or a Latch (woken by the change, not polled)"),
    ]

    /// Constructs still in files that other work is rewriting (file -> rule names). Shrink it as
    /// they are converted: an entry that no longer matches fails the test too.
    static let pending: [String: Set<String>] = [:]

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `line` without its comment (a `//` outside a string literal) and string literals' contents.
    static func code(_ line: String) -> String {
        var out = ""
        var inString = false
        var previous: Character = " "
        var escaped = false
        for c in line {
            if inString {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false; out.append(c) }
                previous = c
                continue
            }
            if c == "/" && previous == "/" {
                out.removeLast()
                return out
            }
            if c == "\"" { inString = true }
            out.append(c)
            previous = c
        }
        return out
    }

    struct Finding: CustomStringConvertible {
        let file: String
        let line: Int
        let rule: Rule
        let text: String
        var description: String { "\(file):\(line): \(rule.name) (use \(rule.instead)): \(text.trimmingCharacters(in: .whitespaces))" }
    }

    static func findings(root: URL) throws -> [Finding] {
        let sources = root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: sources.path])
        }
        let compiled = try rules.map { rule in
            (rule, try NSRegularExpression(pattern: rule.pattern), try rule.unless.map { try NSRegularExpression(pattern: $0) })
        }
        var found: [Finding] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let file = String(url.path.dropFirst(root.path.count + 1))
            let text = try String(contentsOf: url, encoding: .utf8)
            var inBlockComment = false
            for (index, raw) in text.components(separatedBy: "\n").enumerated() {
                var line = raw
                if inBlockComment {
                    guard let end = line.range(of: "*/") else { continue }
                    line = String(line[end.upperBound...])
                    inBlockComment = false
                }
                if let start = line.range(of: "/*"), !line[..<start.lowerBound].contains("\"") {
                    if let end = line.range(of: "*/", range: start.upperBound..<line.endIndex) {
                        line = String(line[..<start.lowerBound]) + String(line[end.upperBound...])
                    } else {
                        line = String(line[..<start.lowerBound])
                        inBlockComment = true
                    }
                }
                let code = Self.code(line)
                let range = NSRange(code.startIndex..., in: code)
                for (rule, pattern, unless) in compiled where !rule.home.contains(file) {
                    guard pattern.firstMatch(in: code, range: range) != nil else { continue }
                    if let unless, unless.firstMatch(in: code, range: range) != nil { continue }
                    found.append(Finding(file: file, line: index + 1, rule: rule, text: raw))
                }
            }
        }
        return found.sorted { ($0.file, $0.line) < ($1.file, $1.line) }
    }

    @Test func sourcesUseOneConcurrencyVocabulary() throws {
        let all = try Self.findings(root: Self.repositoryRoot)
        let banned = all.filter { !(Self.pending[$0.file]?.contains($0.rule.name) ?? false) }
        if !banned.isEmpty {
            Issue.record("\(banned.count) constructs outside the concurrency vocabulary (docs/ARCHITECTURE.md, Synchronisation):\n\(banned.map(\.description).joined(separator: "\n"))")
        }
        // An allowance that matches nothing any more is removed, so the list only shrinks.
        var stale: [String] = []
        for (file, names) in Self.pending.sorted(by: { $0.key < $1.key }) {
            for name in names.sorted() where !all.contains(where: { $0.file == file && $0.rule.name == name }) {
                stale.append("\(file): \(name)")
            }
        }
        if !stale.isEmpty {
            Issue.record("remove from ConcurrencyVocabularyTests.pending (converted): \(stale.joined(separator: ", "))")
        }
    }

    /// The check itself: each rule finds what it is for, and comments, strings and APIs do not count.
    @Test func theCheckFindsEachBannedConstructAndIgnoresCommentsAndStrings() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vocabulary-\(UUID().uuidString)")
        let sources = root.appendingPathComponent("Sources/Some")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let bad = """
            let a = NSLock()
            let b = NSCondition()
            let c = DispatchSemaphore(value: 0)
            let d = await withCheckedContinuation { $0.resume() }
            let (s, k) = AsyncStream<Int>.makeStream()
            Task.detached { }
            let q = DispatchQueue(label: "x")
            usleep(500)
            var m = pthread_mutex_t()
            while busy { Thread.sleep(forTimeInterval: 0.01) }
            """
        let fine = """
            // NSLock, DispatchSemaphore and usleep(1) in a comment
            let text = "NSCondition() and Task { } in a string"
            func observe(queue: DispatchQueue? = nil) {}
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "t"))
            let flag = Atomic(false)
            /* DispatchGroup() in a block comment
               NSRecursiveLock() */
            let mutex = Mutex(0)
            Thread.sleep(forTimeInterval: 0.5)
            """
        try bad.write(to: sources.appendingPathComponent("Bad.swift"), atomically: true, encoding: .utf8)
        try fine.write(to: sources.appendingPathComponent("Fine.swift"), atomically: true, encoding: .utf8)
        let found = try Self.findings(root: root)
        #expect(found.allSatisfy { $0.file == "Sources/Some/Bad.swift" }, "\(found.filter { $0.file != "Sources/Some/Bad.swift" })")
        #expect(found.map(\.line) == Array(1...10), "\(found)")
        #expect(found.first?.description.hasPrefix("Sources/Some/Bad.swift:1: Foundation lock (use ") == true)
    }
}
