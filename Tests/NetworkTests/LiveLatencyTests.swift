import Network
import Testing

/// The live lag and its catch-up on a virtual clock. Frames 0.125 s long (8 fps), so every sum is exact.
@Suite struct LiveLatencyTests {
    let d = 0.125

    @Test func beforeTheItemPlaysNothingIsDroppedAndNoLagIsKnown() {
        var l = LiveLatency(bound: 0.25)
        #expect(l.frame(at: 5, duration: d, clock: nil) == .keep(place: 5))
        #expect(l.lag == nil && l.dropped == 0)
    }

    @Test func framesUnderTheBoundAreKeptAndTheirWaitIsTheLag() {
        var l = LiveLatency(bound: 0.25)
        #expect(l.frame(at: 1, duration: d, clock: 0.75) == .keep(place: 1))
        #expect(l.lag == 0.25, "the bound itself is kept")
        // A late frame (presentation drops it) waits for nothing.
        #expect(l.frame(at: 1.125, duration: d, clock: 2) == .keep(place: 1.125))
        #expect(l.lag == 0 && l.dropped == 0)
    }

    /// A stall holds the item's timeline where the missing frame belongs (10 s) while the source
    /// is away; the reopen's first frame comes 2 s past it. Nothing else waits to be shown, so
    /// the screen does not wait for it: it is dropped and the timeline jumps, so that the next
    /// frame is due two frames (within the bound) after the held clock: at 10.25.
    @Test func withNothingToShowTheTimelineJumpsInsteadOfWaiting() {
        var l = LiveLatency(bound: 0.25)
        #expect(l.frame(at: 9.875, duration: d, clock: 9.75) == .keep(place: 9.875))
        #expect(l.keptUntil == 10)
        #expect(l.frame(at: 12, duration: d, clock: 10) == .drop)
        #expect(l.frame(at: 12.125, duration: d, clock: 10) == .keep(place: 10.25))
        #expect(l.lag == 0.25 && l.dropped == 1 && l.pullIn == 1.875)
        // A bound under a frame's length: the next frame is due within it all the same.
        var tight = LiveLatency(bound: 0.0625)
        _ = tight.frame(at: 0, duration: d, clock: 0)
        #expect(tight.frame(at: 3, duration: d, clock: 1) == .drop)
        #expect(tight.frame(at: 3.125, duration: d, clock: 1) == .keep(place: 1.0625))
    }

    /// A reopen hands the reader a burst: frames 0...24 (3 s) there at once, then one frame every
    /// 0.125 s as the source makes them. The player shows a frame each 0.125 s and lets decoding
    /// run 6 frames ahead. Unbounded, each frame waits 0.625 s (the queue) and is shown 3 s (the
    /// burst) behind the newest frame made, for good. Bounded at 0.25 s: frames 0...2 fit (waits 0,
    /// 0.125, 0.25), the other 22 of the burst are dropped as they decode, and from then on every
    /// frame waits 0.25 s and is shown 0.25 s behind the newest.
    @Test func aBurstIsDroppedUntilTheLagIsUnderTheBound() {
        let bounded = Self.play(burst: 24, bound: 0.25)
        #expect(bounded.dropped == 22)
        #expect(bounded.lags.prefix(4) == [0, 0.125, 0.25, 0.25])
        #expect(bounded.lags.allSatisfy { $0 <= 0.25 }, "lags \(bounded.lags)")
        #expect(Set(bounded.behind.dropFirst(3)) == [0.25], "behind the edge \(bounded.behind)")

        let loose = Self.play(burst: 24, bound: 10)
        #expect(loose.dropped == 0)
        #expect(loose.lags.dropFirst(6).allSatisfy { $0 == 0.625 }, "lags \(loose.lags)")
        #expect(Set(loose.behind) == [3], "behind the edge \(loose.behind)")
    }

    /// A source that sends in real time, its first frame read 0.5 s before it is due (a lead
    /// over the bound of 0.25 s) with nothing else to show: that frame is dropped and the
    /// timeline jumps so that the next would be due 0.25 s after the drop; made 0.125 s later, it
    /// waits 0.125 s, as does every frame after it, and nothing more is dropped.
    @Test func aLeadOverTheBoundWithNothingShownJumpsOnce() {
        let run = Self.play(burst: 0, bound: 0.25, firstWait: 0.5)
        #expect(run.dropped == 1, "dropped \(run.dropped)")
        #expect(!run.lags.isEmpty && run.lags.allSatisfy { $0 == 0.125 }, "lags \(run.lags)")
    }

    /// The feeder's loop, exactly: at each vsync decoding runs while the queue has room and the
    /// source has made the next frame (frame n is made at (n - burst) * 0.125 s, the burst at
    /// 0); each frame is kept or dropped; then the frame due is shown. The clock is at 0 when
    /// frame 0 is read, less `firstWait` (the item starts that much after its first frame came).
    /// Returns the drops, the kept frames' lags, and for each frame shown how far behind the
    /// newest frame made by then it is (seconds).
    static func play(burst: Int, bound: Double, firstWait: Double = 0, seconds: Double = 8)
        -> (dropped: Int, lags: [Double], behind: [Double]) {
        let d = 0.125, ahead = 6
        var latency = LiveLatency(bound: bound)
        var queue: [(place: Double, frame: Int)] = []
        var next = 0
        var clock = -firstWait
        var lags: [Double] = [], behind: [Double] = []
        while clock < seconds {
            while queue.count < ahead, Double(max(0, next - burst)) * d <= max(0, clock + firstWait) {
                if case .keep(let place) = latency.frame(at: Double(next) * d, duration: d, clock: clock) {
                    queue.append((place, next))
                    lags.append(latency.lag ?? -1)
                }
                next += 1
            }
            if let first = queue.first, first.place <= clock {
                queue.removeFirst()
                let newest = burst + Int(((clock + firstWait) / d).rounded(.down))
                behind.append(Double(newest - first.frame) * d)
            }
            clock += d
        }
        return (latency.dropped, lags, behind)
    }
}
