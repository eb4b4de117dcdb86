import Network
import Testing

/// The live source's states on a virtual clock: stall detection, capped jittered backoff, health.
@Suite struct LiveSourceHealthTests {
    let policy = LiveSourceHealth.Policy(stallTimeout: 2, initialDelay: 0.5, maximumDelay: 8, jitter: 0.2)

    @Test func backoffDoublesUpToItsCap() {
        let h = LiveSourceHealth(policy: policy, now: 0)
        #expect((1...8).map { h.delay(afterFailures: $0) } == [0.5, 1, 2, 4, 8, 8, 8, 8])
        #expect(h.delay(afterFailures: Int.max) == 8)
    }

    @Test func aStallIsNoticedAtItsTimeoutAndReopenedAtOnce() {
        var h = LiveSourceHealth(policy: policy, now: 0)
        h.picture(at: 0.1)
        var t = 0.1
        while t < 10 {
            t += 0.04
            if t < 5 { h.picture(at: t) }
            if h.tick(at: t) != .none { break }
        }
        // The last picture came just before 5 s: the stall is seen 2 s later, within one tick.
        #expect(t >= 6.9 && t <= 7.1, "stall seen at \(t)")
        #expect(h.degradation(source: "rtsp://cam", now: t)?.hasPrefix("rtsp://cam: down for 2.0 s (no picture for 2.0 s") == true)
        #expect(h.tick(at: t) == .reopen, "the first reopen is due at once")
        #expect(h.degradation(source: "rtsp://cam", now: t + 0.5) == "rtsp://cam: down for 2.5 s")
        h.picture(at: t + 0.6)
        #expect(h.isUp && h.degradation(source: "rtsp://cam", now: t + 1) == nil)
    }

    @Test func failedReopensBackOffWithJitterAndDownSinceStays() {
        var h = LiveSourceHealth(policy: policy, now: 0)
        h.picture(at: 1)
        h.failed(at: 3, reason: "connection refused", random: 0.5)
        #expect(h.state == .down(since: 3, retryAt: 3.5, failures: 1, reason: "connection refused"))
        var retries: [Double] = []
        var t = 3.0
        // The server stays away: every reopen fails at once; the waits double, capped at 8 s.
        while retries.count < 7 {
            t += 0.01
            if h.tick(at: t) == .reopen {
                retries.append(t)
                h.failed(at: t, reason: "connection refused", random: retries.count.isMultiple(of: 2) ? 0 : 0.999)
            }
        }
        let gaps = zip(retries.dropFirst(), retries).map { $0 - $1 }
        let expected = [1.0, 2, 4, 8, 8, 8]
        for (gap, base) in zip(gaps, expected) {
            #expect(gap >= base * 0.8 - 0.02 && gap <= base * 1.2 + 0.02, "gap \(gap) for \(base)")
        }
        #expect(gaps[3] < gaps[4], "jitter spreads equal waits: \(gaps)")
        #expect(h.downSince == 3, "down since the first failure, whatever the retries")
        h.picture(at: t + 0.1)
        #expect(h.consecutive == 0)
        h.failed(at: t + 1, reason: "eof", random: 0.5)
        #expect(h.state == .down(since: t + 1, retryAt: t + 1.5, failures: 1, reason: "eof"), "a new outage starts from the first wait")
    }

    /// The item's clock runs on while the source is away: the reopened source's pictures go on
    /// the timeline that much later, however many reopens it took.
    @Test func theTimelineGapIsTheTimeSinceTheLastPicture() {
        var h = LiveSourceHealth(policy: policy, now: 0)
        #expect(h.timelineGap(at: 3) == 0, "no picture yet: nothing to go on from")
        h.picture(at: 1)
        h.picture(at: 1.04)
        h.failed(at: 1.1, reason: "eof", random: 0.5)
        #expect(h.tick(at: 1.6) == .reopen)
        h.failed(at: 2, reason: "connection refused", random: 0.5)
        #expect(h.tick(at: 3) == .reopen)
        #expect(abs(h.timelineGap(at: 3.5) - 2.46) < 1e-9, "\(h.timelineGap(at: 3.5))")
        h.picture(at: 3.6)
        #expect(h.timelineGap(at: 3.6) == 0)
        #expect(h.timelineGap(at: 3.5) == 0, "never back in time")
    }

    @Test func anOpenThatFailsFirstIsDownFromItsStart() {
        var h = LiveSourceHealth(policy: policy, now: 10)
        #expect(h.degradation(source: "s", now: 10) == nil, "opening for the first time is not yet down")
        h.failed(at: 15, reason: "timed out", random: 0.5)
        #expect(h.downSince == 10)
        #expect(h.tick(at: 15.4) == .none)
        #expect(h.tick(at: 15.5) == .reopen)
    }
}
