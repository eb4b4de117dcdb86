import Foundation
import Kiosk
import Testing
import TestSupport

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
    /// 4 callback threads, a request worker and a command thread per client (4 clients here), the
    /// navigation thread, and the next items' decode threads (2 ahead, each with FFmpeg's frame
    /// threads).
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
