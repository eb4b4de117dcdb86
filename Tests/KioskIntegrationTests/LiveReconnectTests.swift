import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless, real clock) playing one live source whose connection a loopback
/// proxy cuts, again and again: each cut is a real reconnect, and none leaves anything behind.
@Suite(.serialized) struct LiveReconnectTests {
    /// What /proc says of a process: open descriptors, threads, resident memory (kB).
    struct Figures: CustomStringConvertible {
        let fds: Int, threads: Int, rssKB: Int
        var description: String { "fds \(fds), threads \(threads), rss \(rssKB) kB" }

        init?(pid: Int32) {
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
            func field(_ name: String) -> Int? {
                status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                    .flatMap { Int($0.dropFirst(name.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") }
            }
            guard let threads = field("Threads"), let rss = field("VmRSS") else { return nil }
            self.fds = fds.count
            self.threads = threads
            rssKB = rss
        }
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    /// Polls `test` every 20 ms for at most `seconds`; whether it came true.
    static func wait(within seconds: Double, _ test: () -> Bool) -> Bool {
        let end = now() + seconds
        while now() < end {
            if test() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return test()
    }

    /// A live stream (real-time H.264, no length) behind a proxy that cuts every connection on
    /// SIGUSR2, 100 times; each cycle waits until marquee reports the source back over a new
    /// connection. The figures are read once things settle after every 10th reconnect: from the
    /// 10th (warm) to the 100th, descriptors and threads stay flat and memory grows by under 5 MB.
    @Test func aHundredReconnectsLeaveDescriptorsThreadsAndMemoryFlat() throws {
        let server = try LoopbackServer("live", [])
        let proxy = try LoopbackServer("proxy", [String(server.port)])
        let url = "\(proxy.url)/live.mkv"
        let path = TestMedia.folder + "/reconnect-config-\(UUID().uuidString).json"
        try TestConfig.write(#"{"playlist": [{"uri": "\#(url)"}], "loop": true, "network": {"allow": ["http://127.0.0.1"]}}"#, to: path)
        // Within the fixtures' own 300 s life; the loop below gives up at 240 s.
        let running = try MarqueeProcessTests.Running(config: path, clock: "real", exitAfter: 290)
        let pid = running.process.processIdentifier
        let client = try running.connect()
        func count(_ text: String) -> Int { running.log.components(separatedBy: text).count - 1 }
        func connections() -> Int { proxy.events.filter { $0 == "conn" }.count }
        func wait(within seconds: Double, _ test: () -> Bool) -> Bool { Self.wait(within: seconds, test) }
        func position() -> Double { client.request(["get_property", "time-pos"], id: 1)?["data"]?.numberValue ?? 0 }
        #expect(wait(within: 20) { position() > 1 }, "not playing: time-pos \(position()); log:\n\(running.log)")

        let reconnects = 100
        var cuts: [Double] = [], backs: [Double] = []
        var samples: [(reconnect: Int, figures: Figures)] = []
        let started = Self.now()
        for reconnect in 1...reconnects {
            guard Self.now() - started < 240 else {
                Issue.record("only \(backs.count) reconnects in 240 s")
                break
            }
            let before = (backs: count("live source back"), connections: connections())
            cuts.append(Self.now())
            proxy.signal(SIGUSR2)
            // Back: the reader decoded a picture again, over a connection made after the cut.
            let back = wait(within: 15) { count("live source back") > before.backs && connections() > before.connections }
            guard back else {
                Issue.record("reconnect \(reconnect): not back within 15 s; proxy \(proxy.events.suffix(6)); log:\n\(running.log)")
                break
            }
            backs.append(Self.now())
            // A few pictures over each connection before it is cut.
            Thread.sleep(forTimeInterval: 0.3)
            if reconnect % 10 == 0 {
                // Settled: the old connection's teardown and the new one's open are over.
                Thread.sleep(forTimeInterval: 1)
                guard let figures = Figures(pid: pid) else {
                    Issue.record("marquee is gone after reconnect \(reconnect); log:\n\(running.log)")
                    break
                }
                samples.append((reconnect, figures))
                print("live reconnects: \(reconnect) in \(Int(Self.now() - started)) s: \(figures)")
            }
        }
        let recoveries = zip(cuts, backs).map { $1 - $0 }.sorted()
        Thread.sleep(forTimeInterval: 1)  // the last connection's pictures reach the screen
        _ = client.request(["quit"], id: 2)
        #expect(running.wait(timeout: 20) == 0, "\(running.log.suffix(2000))")

        let downs = count("live source down; reopening")
        let median = recoveries.isEmpty ? 0 : recoveries[recoveries.count / 2]
        print("live reconnects: \(backs.count) in \(Int((backs.last ?? started) - started)) s; back after a cut in "
              + "\(Self.rounded(recoveries.first ?? 0))...\(Self.rounded(recoveries.last ?? 0)) s (median \(Self.rounded(median))); "
              + "downs logged \(downs), proxy connections \(connections())")
        #expect(backs.count == reconnects)
        #expect(downs >= reconnects, "downs logged: \(downs)")
        #expect(connections() >= reconnects + 1, "connections: \(connections())")

        // Each reconnect's pictures reached the screen: the shown frames' times go on past the
        // last ones before by the time the source was away, at least the 0.2 s shortest backoff
        // (frames are 0.04 s apart), once per reconnect; and never back.
        let shown = try running.traceLines().filter { $0["type"] as? String == "frame" }.compactMap { $0["pts"] as? Double }
        let steps = zip(shown, shown.dropFirst()).map { $1 - $0 }
        let jumps = steps.filter { $0 >= 0.2 }.count
        print("live reconnects: \(shown.count) pictures shown, \(jumps) jumps forward of 0.2 s or more")
        #expect(jumps >= backs.count, "pictures shown after \(jumps) of \(backs.count) reconnects")
        #expect(steps.allSatisfy { $0 > 0 }, "a picture's time went back")

        #expect(samples.count == reconnects / 10, "sampled \(samples.count) times")
        guard let warm = samples.first, let end = samples.last, samples.count >= 2 else { return }
        // Descriptors: the connection (one at a time), the rest fixed (trace, log pipe, control
        // socket and this test's client). Threads: one decoder's at a time. One of slack each for
        // a teardown the settle did not see end on a loaded machine.
        #expect(end.figures.fds <= warm.figures.fds + 1, "fds \(warm.figures.fds) after \(warm.reconnect) -> \(end.figures.fds) after \(end.reconnect)")
        #expect(end.figures.threads <= warm.figures.threads + 1, "threads \(warm.figures.threads) -> \(end.figures.threads)")
        // Memory: 90 reconnects' opens and closes (each a decoder, an HTTP context, probe
        // buffers of some 100 kB) under 5 MB together, far below one leaked decoder per reconnect.
        #expect(end.figures.rssKB - warm.figures.rssKB < 5 * 1024, "rss \(warm.figures.rssKB) -> \(end.figures.rssKB) kB")
    }

    static func rounded(_ seconds: Double) -> Double { (seconds * 100).rounded() / 100 }
}
