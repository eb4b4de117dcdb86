import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless, real clock) on a live source that sends a burst at each connect:
/// the first 1 s held back and sent at once (as an HLS window is), then live. A loopback proxy
/// cuts the connection once, so a reopen brings a second burst.
@Suite(.serialized) struct LiveLagTests {
    static func now() -> Double { Date().timeIntervalSince1970 }

    struct Outcome {
        var lags: [(t: Double, lag: Double)] = []
        var dropsBeforeCut = 0, dropsAtEnd = 0
        var back = 0.0
        /// Seconds from the source back until 15 frames of its burst are dropped.
        var caughtUpAfter: Double?
        /// Frames dropped in the last 3 s, long after the burst.
        var dropsLast3s = 0
        /// Frames presentation dropped as late (`frame-drop-count`), at the end.
        var lateDrops = 0
        var log = "", requests: [String] = []
    }

    /// Plays the burst source with `network.liveLatency` `bound` for 4 s, cuts the connection,
    /// and plays 6 s more; `live-lag` is read every 50 ms throughout.
    func play(bound: Double) throws -> Outcome {
        let server = try LoopbackServer("live", [])
        let proxy = try LoopbackServer("proxy", [String(server.port)])
        let url = "\(proxy.url)/burst/1.0/live.mkv"
        let path = TestMedia.folder + "/live-lag-config-\(UUID().uuidString).json"
        try TestConfig.write(#"{"playlist": [{"uri": "\#(url)"}], "loop": true, "network": {"allow": ["http://127.0.0.1"], "liveLatency": \#(bound)}}"#, to: path)
        let running = try MarqueeProcessTests.Running(config: path, clock: "real", exitAfter: 60)
        let client = try running.connect()
        func number(_ name: String) -> Double? { client.request(["get_property", .string(name)], id: 1)?["data"]?.numberValue }
        func wait(within seconds: Double, _ test: () -> Bool) -> Bool { LiveReconnectTests.wait(within: seconds, test) }
        var outcome = Outcome()
        #expect(wait(within: 20) { number("live-lag") != nil }, "no live-lag; log:\n\(running.log)")
        let started = Self.now()
        func sample(for seconds: Double, drops: inout [(t: Double, n: Double)]) {
            let end = Self.now() + seconds
            while Self.now() < end {
                if let lag = number("live-lag") { outcome.lags.append((Self.now() - started, lag)) }
                if let n = number("decoder-frame-drop-count") { drops.append((Self.now(), n)) }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        var drops: [(t: Double, n: Double)] = []
        sample(for: 4, drops: &drops)
        outcome.dropsBeforeCut = Int(drops.last?.n ?? 0)
        let backs = running.log.components(separatedBy: "live source back").count
        proxy.signal(SIGUSR2)
        #expect(wait(within: 15) { running.log.components(separatedBy: "live source back").count > backs }, "not back; log:\n\(running.log)")
        outcome.back = Self.now() - started
        drops = []
        sample(for: 6, drops: &drops)
        outcome.dropsAtEnd = Int(drops.last?.n ?? 0)
        outcome.lateDrops = Int(number("frame-drop-count") ?? -1)
        outcome.log = running.log
        outcome.requests = proxy.events
        // The reopen's burst is drained once 15 of its frames are dropped.
        if let drained = drops.first(where: { Int($0.n) - outcome.dropsBeforeCut >= 15 }) {
            outcome.caughtUpAfter = drained.t - (started + outcome.back)
        }
        outcome.dropsLast3s = Int((drops.last?.n ?? 0) - (drops.first { $0.t >= Self.now() - 3 }?.n ?? 0))
        _ = client.request(["quit"], id: 2)
        #expect(running.wait(timeout: 20) == 0, "\(running.log.suffix(2000))")
        return outcome
    }

    static func rounded(_ s: Double) -> Double { (s * 1000).rounded() / 1000 }

    /// Unbounded (60 s), each burst stays queued: the picture waits the decode-ahead queue's
    /// length (over 0.15 s) for good and next to nothing is dropped. Bounded at 0.08 s: nine in
    /// ten frames shown are within it (none over by a frame), the bursts are dropped (over 15
    /// frames of each 25), the reopen's within 3 s of the source coming back (the log's "back"
    /// is its first picture).
    @Test func aBurstAfterAReopenIsDroppedUntilTheLagIsUnderTheBound() throws {
        let loose = try play(bound: 60)
        let late = loose.lags.filter { $0.t > 2 }.map(\.lag)
        print("live lag unbounded: lag \(late.min().map(Self.rounded) ?? -1)...\(late.max().map(Self.rounded) ?? -1) s "
              + "(median \(late.isEmpty ? -1 : Self.rounded(late.sorted()[late.count / 2]))), "
              + "dropped \(loose.dropsBeforeCut) before the cut, \(loose.dropsAtEnd) at the end")
        #expect(!late.isEmpty && late.sorted()[late.count / 2] > 0.15, "median lag \(late.sorted())")
        // The decoder's own skipping of late frames may count a few; the bound's drops are dozens.
        #expect(loose.dropsAtEnd < 5, "dropped \(loose.dropsAtEnd)")
        #expect(!loose.log.contains("playback stalled"), "unbounded: proxy \(loose.requests); log:\n\(loose.log)")

        let bound = 0.08
        let tight = try play(bound: bound)
        let lags = tight.lags.map(\.lag)
        print("live lag bounded at \(bound): lag \(lags.min().map(Self.rounded) ?? -1)...\(lags.max().map(Self.rounded) ?? -1) s, "
              + "dropped \(tight.dropsBeforeCut) in the first burst, \(tight.dropsAtEnd - tight.dropsBeforeCut) after the reopen, "
              + "15 of the reopen's burst dropped \(tight.caughtUpAfter.map(Self.rounded) ?? -1) s after the source was back, "
              + "\(tight.dropsLast3s) dropped in the last 3 s, \(tight.lateDrops) dropped late by presentation; "
              + "lags after the reopen \(tight.lags.filter { $0.t > tight.back }.prefix(12).map { Self.rounded($0.lag) })")
        // The lag counts each frame's age out of the decoder: a frame that came at the source's
        // pace is kept though its age takes it over (dropping it would only hold the picture),
        // by less than a frame (25 fps); most are within the bound.
        #expect(!lags.isEmpty && lags.allSatisfy { $0 <= bound + 0.04 }, "lags \(lags)")
        #expect(lags.filter { $0 <= bound + 0.001 }.count * 10 >= lags.count * 9, "lags \(lags)")
        #expect(tight.dropsBeforeCut >= 15, "dropped \(tight.dropsBeforeCut) of the first burst")
        // Tolerated until proven gone: after the reopen only a few frames dropped, the picture
        // stopped and the player reported a stall it did not leave, as when reopened frames went
        // on the wall clock past a timeline the stall had stopped (they now follow the item's clock).
        withKnownIssue("bounded: the picture can stop after a reopen (a stall that never resumes)", isIntermittent: true) {
            #expect(tight.dropsAtEnd - tight.dropsBeforeCut >= 15, "dropped \(tight.dropsAtEnd - tight.dropsBeforeCut) of the reopen's burst; proxy \(tight.requests); log:\n\(tight.log)")
            #expect(!tight.log.contains("presentation stalled; the watchdog"), "bounded: log:\n\(tight.log)")
            #expect((tight.caughtUpAfter ?? 99) < 3, "caught up after \(String(describing: tight.caughtUpAfter)) s")
        }
    }
}
