import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport
@testable import KioskTests

/// Issue 26: bounded concurrency. A burst of `loadfile append` started a probe thread per file
/// (300 requests peaked at 223 threads); probes now come from a pool of at most 4 threads, their
/// callbacks from another of 4, and a looped playlist keeps 3 items queued (each queued item
/// probes its file), so the thread count has a bound whatever the burst.
@Suite(.serialized) struct BoundedConcurrencyTests {
    typealias Running = MarqueeProcessTests.Running

    /// The threads and open fds of process `pid` now.
    func counts(_ pid: Int32) -> (threads: Int, fds: Int) {
        let fm = FileManager.default
        return ((try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1,
                (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1)
    }

    /// The names of the threads of `pid`, counted: `marquee-decode: 2, ...`.
    func threadNames(_ pid: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        return Dictionary(grouping: names, by: { $0 }).map { "\($0.key): \($0.value.count)" }.sorted().joined(separator: ", ")
    }

    /// The counts once they have settled: the same for half a second (at most `timeout` s).
    func settled(_ pid: Int32, timeout: Double) -> (threads: Int, fds: Int) {
        var last = counts(pid), stableSince = Date()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            let now = counts(pid)
            if now != last { (last, stableSince) = (now, Date()) }
            if Date().timeIntervalSince(stableSince) >= 0.5 { break }
        }
        return last
    }

    /// Any burst stays under this many threads above the playing process's own: 4 probe threads,
    /// 4 callback threads, a request worker per client (4 clients here), 4 command threads (which
    /// also hand seeks and steps over), and the next items' decode threads (2 ahead, each with
    /// FFmpeg's frame threads).
    static let burstAllowance = 24

    @Test func threeHundredAppendsStayUnderAThreadBoundAndFdsComeBack() throws {
        let clip = try TestMedia.clip(seconds: 3, fps: 30)
        let extra = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 120)
        let config = try MarqueeProcessTests().writeConfig([clip])
        let running = try Running(config: config, exitAfter: 120)
        let pid = running.process.processIdentifier
        let control = try running.connect()
        var path: String?
        for _ in 0..<100 where path != clip {
            Thread.sleep(forTimeInterval: 0.1)
            path = control.request(["get_property", "path"], id: 1)?["data"]?.stringValue
        }
        #expect(path == clip)
        let baseline = settled(pid, timeout: 5)
        let baselineNames = threadNames(pid)

        // 4 clients, 75 appends each, sent at once; the threads are counted every 10 ms meanwhile.
        final class Peak: @unchecked Sendable {
            let lock = NSLock()
            var threads = 0
            var done = false
        }
        let peak = Peak()
        let sampler = Thread {
            while !peak.lock.withLock({ peak.done }) {
                let now = self.counts(pid).threads
                peak.lock.withLock { peak.threads = max(peak.threads, now) }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        sampler.start()
        var clients = try (0..<4).map { _ in try running.connect() }
        for (c, client) in clients.enumerated() {
            let lines = (0..<75).map { i in #"{"command":["loadfile","\#(extra)","append"],"request_id":\#(c * 1000 + i)}"# }
            #expect(client.send(lines.joined(separator: "\n") + "\n", newline: false))
        }
        var answered = 0, succeeded = 0
        for client in clients {
            for _ in 0..<75 {
                guard let line = client.readLine(), let reply = try? JSONParser.parse(line) else { break }
                if reply["event"] != nil { continue }
                answered += 1
                if reply["error"]?.stringValue == "success" { succeeded += 1 }
            }
        }
        #expect(answered == 300 && succeeded == 300, "\(answered) answered, \(succeeded) succeeded")
        let count = control.request(["get_property", "playlist-count"], id: 2)?["data"]?.numberValue
        #expect(count == 301)
        Thread.sleep(forTimeInterval: 1)
        peak.lock.withLock { peak.done = true }
        let highest = peak.lock.withLock { peak.threads }
        #expect(highest <= baseline.threads + Self.burstAllowance,
                "peak \(highest) threads; baseline \(baseline.threads), allowance \(Self.burstAllowance)")
        // The clients go; once the pools' threads have been idle for 2 s they end. The playlist
        // is then the first clip followed by the appended ones: compared with the same clip
        // playing again (its next item decoding ahead), as at the baseline.
        clients.removeAll()
        var afterNames = ""
        var after = (threads: 0, fds: 0)
        for _ in 0..<2 {
            Thread.sleep(forTimeInterval: 3)
            after = settled(pid, timeout: 10)
            afterNames = threadNames(pid)
            if after.threads <= baseline.threads + 2 { break }
        }
        #expect(after.fds <= baseline.fds + 2, "fds \(after.fds), baseline \(baseline.fds)")
        #expect(after.threads <= baseline.threads + 2, "threads \(after.threads) (\(afterNames)), baseline \(baseline.threads) (\(baselineNames))")
        _ = control.request(["quit"], id: 3)
        #expect(running.wait() == 0)
    }
}

/// Issue 26: a player that never answers. Each command used to get a thread of its own that
/// outlived its request's timeout, so a client repeating "no answer" requests grew the process by
/// a thread each time; commands now run on a pool of 4 threads with 32 waiting at most.
@Suite struct StuckPlayerCommandTests {
    @Test func commandsToAStuckPlayerUseAtMostFourThreadsAndTheRestAreRefused() throws {
        let gate = Latch<Void>()
        let calls = Atomic<Int>(0)
        let controller = KioskController(status: KioskStatus(), commandTimeout: 0.05) { _ in
            calls.add(1, ordering: .relaxed)
            _ = gate.wait(timeout: 60)  // a player that keeps every command
            return .done
        }
        // 8 clients' worth of requests, 25 each, of every kind that reaches the player (steps and
        // seeks are answered at once and coalesced: they reach it as one hand-over at most).
        let kinds: [(name: String, waits: Bool, send: @Sendable () throws -> Void)] = [
            ("pause", true, { try controller.setProperty("pause", to: true) }),
            ("display-power", true, { try controller.setProperty("display-power", to: false) }),
            ("quit", true, { _ = try controller.run("quit", []) }),
            ("loadfile", true, { _ = try controller.run("loadfile", ["/nonexistent.mp4", "append"]) }),
            ("reload", true, { _ = try controller.run("reload", []) }),
            ("playlist-next", false, { _ = try controller.run("playlist-next", []) }),
            ("seek", false, { _ = try controller.run("seek", [5]) }),
        ]
        let outcomes = Mutex<(timedOut: Int, refused: Int, other: [String])>((0, 0, []))
        DispatchQueue.concurrentPerform(iterations: 8) { client in
            for i in 0..<25 {
                let kind = kinds[(client + i) % kinds.count]
                do {
                    try kind.send()
                    if kind.waits { outcomes.withLock { $0.other.append("\(kind.name) answered") } }
                } catch {
                    let text = "\(error)"
                    outcomes.withLock {
                        if text.contains("no answer from the player") { $0.timedOut += 1 }
                        else if text.contains("the player is busy") { $0.refused += 1 }
                        else { $0.other.append("\(kind.name): \(text)") }
                    }
                }
            }
        }
        let waiting = (0..<8).reduce(0) { sum, client in
            sum + (0..<25).filter { kinds[(client + $0) % kinds.count].waits }.count
        }
        let (timedOut, refused, other) = outcomes.withLock { $0 }
        #expect(other.isEmpty, "\(other.prefix(3))")
        #expect(timedOut + refused == waiting)
        #expect(refused > 0, "a queue that never drains must refuse at some point")
        // The pool's own count: other tests' controllers in this process have pools of the same name.
        #expect(controller.commands.threadCount.peak <= 4)
        // At most 4 commands reached the stuck player; the 32 queued wait behind them.
        #expect(calls.load(ordering: .relaxed) <= 4)
        // The queue's entries are kept, not leaked: once the player answers, the pool drains.
        gate.set(())
        let drained = Date(timeIntervalSinceNow: 10)
        while calls.load(ordering: .relaxed) < 4 + 32, Date() < drained { Thread.sleep(forTimeInterval: 0.01) }
        #expect(calls.load(ordering: .relaxed) >= 4 + 32)
    }
}
