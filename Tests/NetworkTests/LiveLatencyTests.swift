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

/// The lag counted from when a frame's data came (`LiveLatency.opened`), on a virtual clock: a
/// source at 25 fps, a decoder 5 ms a frame, a player that decodes 6 frames ahead and shows what
/// is due at each tick of its clock.
@Suite struct LiveLatencyAgeTests {
    static let d = 0.04
    static let decode = 0.005

    /// One open of the source: its packets come from `start` (frame i at `start + i * d`, or all
    /// of `burst` frames at once at `start + burstDelay`), the probe holds them until `probeEnd`,
    /// and they stop at `until` (a cut).
    struct Open {
        var start: Double
        var probeEnd: Double
        var until = Double.infinity
        var burst = 0
        var burstDelay = 0.0
        /// After the burst, frames come a segment of this many seconds at once (0: one by one).
        var segment = 0.0
        /// Added to the stream's timestamps (a jump back at `jumpAt` frames: negative).
        var jump = 0.0
        var jumpAt = Int.max
    }

    struct Run {
        var latency: LiveLatency
        /// How long after its data came each picture on screen was, at each tick (cuts left out).
        var onScreen: [Double] = []
        var lags: [Double] = []
        /// When the first picture of each open was shown.
        var firstShown: [Double] = []
    }

    /// Plays `opens` for `seconds` with `bound`; `told`: whether the reader says when each open's
    /// packets began to come (false: the lag of before, from the decoder out).
    static func play(_ opens: [Open], bound: Double = 1, seconds: Double = 10, told: Bool = true) -> Run {
        var run = Run(latency: LiveLatency(bound: bound))
        var queue: [(place: Double, arrival: Double, open: Int)] = []
        var shown: (arrival: Double, open: Int)?
        var origin: (now: Double, place: Double)?
        func clock(_ now: Double) -> Double? { origin.map { $0.place + now - $0.now } }
        var decoderFree = 0.0
        let tick = 0.001
        var step = 0
        for (k, open) in opens.enumerated() {
            // Where the reader puts the stream's start: 0, or where the item's clock is at the reopen.
            let shift = clock(open.probeEnd) ?? 0
            // A frame's time before the pull-in: the decoder's shift is set once, at the open.
            let start = shift + run.latency.pullIn
            if told { run.latency.opened(at: open.start, firstAt: start) }
            var i = 0
            while true {
                let burstArrival = open.start + open.burstDelay
                let after = Double(i - open.burst + 1) * d
                let arrival = i < open.burst ? burstArrival
                    : burstArrival + (open.segment > 0 ? (after / open.segment).rounded(.up) * open.segment : after)
                guard arrival < open.until else { break }
                var out = Double.infinity
                // The player's ticks until this frame leaves the decoder, which waits for room in the queue.
                while Double(step) * tick < out {
                    let now = Double(step) * tick
                    if queue.count < 6 && out == .infinity { out = max(now, decoderFree, arrival, open.probeEnd) + decode }
                    if origin == nil, let first = queue.first { origin = (now, first.place) }
                    if let c = clock(now) {
                        while let first = queue.first, first.place <= c + 1e-9 {
                            if shown?.open != first.open { run.firstShown.append(now) }
                            shown = (first.arrival, first.open)
                            queue.removeFirst()
                        }
                    }
                    if let shown, shown.open == k, now < open.until { run.onScreen.append(now - shown.arrival) }
                    step += 1
                }
                decoderFree = out
                let time = start + Double(i) * d + (i >= open.jumpAt ? open.jump : 0)
                if case .keep(let place) = run.latency.frame(at: time, duration: d, clock: clock(out), now: out) {
                    queue.append((place, arrival, k))
                    if let lag = run.latency.lag, clock(out) != nil { run.lags.append(lag) }
                }
                i += 1
                if Double(step) * tick > seconds { return run }
            }
            queue.removeAll()
        }
        return run
    }

    /// The 0.8 s an RTSP open reads to learn the stream is played first: without the age, the
    /// picture stays 0.8 s behind plus the player's queue, over the 1 s bound, while the lag
    /// reads under it. With it, the backlog is dropped before the first picture down to a
    /// quarter of the bound: on screen the picture is then within that, and the lag says so.
    @Test func aProbeBacklogIsDroppedAndTheLagCountsIt() {
        let open = Open(start: 0, probeEnd: 0.8)
        let before = Self.play([open], told: false)
        #expect(before.onScreen.dropFirst(2000).min()! > 0.75, "on screen \(before.onScreen.max()!)")
        #expect(before.lags.max()! < 0.3)
        let after = Self.play([open])
        let steady = after.onScreen.dropFirst(2000)
        #expect(steady.max()! <= 0.25 + Self.d, "on screen \(steady.max()!)")
        #expect(after.lags.allSatisfy { $0 <= 0.25 + Self.d }, "lags \(after.lags.max()!)")
        // The lag read is the picture's age on screen give or take a frame.
        #expect(abs(after.lags.last! - steady.last!) <= Self.d + 0.01)
        #expect(after.latency.dropped >= 12 && after.latency.dropped <= 21, "dropped \(after.latency.dropped)")
        // The first picture waits only for the backlog's decoding (20 frames at 5 ms).
        #expect(after.firstShown[0] < 0.8 + 0.15)
    }

    /// An HLS-like window: 3 s of frames there at the open, held by its 0.4 s probe, then a 1 s
    /// segment at once each second. The window's frames are not taken for as old as their
    /// timestamps say (2.96 s for its last): only the front that the probe held over a quarter of
    /// the bound is dropped, none later. Had the window come 0.3 s after the probe
    /// began, its first frames would be taken for 0.3 s older than they are: the same front.
    @Test func aBurstIsNotTakenForOldFrames() {
        for delay in [0.0, 0.3] {
            let run = Self.play([Open(start: 0, probeEnd: 0.4, burst: 75, burstDelay: delay, segment: 1)])
            #expect(run.latency.dropped <= Int((0.4 - 0.25) / Self.d) + 2, "dropped \(run.latency.dropped)")
            #expect(run.lags.allSatisfy { $0 <= 0.3 }, "lags \(run.lags.max()!)")
            #expect(run.onScreen.count > 9000, "shown from \(run.firstShown)")
        }
    }

    /// The timestamps step 10 s back (a source restarted behind a relay, not seen as a new
    /// segment): the frames after it are not taken for 10 s old.
    @Test func aStepBackDoesNotDropEverything() {
        let run = Self.play([Open(start: 0, probeEnd: 0.8, jump: -10, jumpAt: 100)])
        let dropped = Self.play([Open(start: 0, probeEnd: 0.8)]).latency.dropped
        #expect(run.latency.dropped <= dropped + 1, "dropped \(run.latency.dropped), \(dropped) without the step")
        #expect(run.lags.allSatisfy { $0 <= 0.3 })
    }

    /// A cut at 4 s, the reopen at 5 s, its probe until 5.8 s: the age counts from the reopen, its
    /// backlog is dropped too, and the picture is back within the backlog's decoding.
    @Test func aReopenStartsTheAgeAgain() {
        let run = Self.play([Open(start: 0, probeEnd: 0.8, until: 4), Open(start: 5, probeEnd: 5.8)])
        #expect(run.firstShown.count == 2)
        #expect(run.firstShown[1] < 5.8 + 0.25, "back at \(run.firstShown[1])")
        let after = run.onScreen.suffix(2000)
        #expect(after.max()! <= 0.25 + Self.d, "on screen \(after.max()!)")
        #expect(run.latency.dropped >= 24, "dropped \(run.latency.dropped)")
        // Untold, the reopen's backlog stays on screen.
        let untold = Self.play([Open(start: 0, probeEnd: 0.8, until: 4), Open(start: 5, probeEnd: 5.8)], told: false)
        #expect(untold.onScreen.suffix(2000).min()! > 0.75)
    }

    /// A bound under what the source's frames are old when they come out of the decoder at its
    /// pace (here 45 ms: a frame's length to come, 5 ms to decode): the backlog (20 frames) is
    /// dropped, then every frame is shown as it comes, its lag over the bound, instead of the
    /// screen waiting. (The estimate forgets that constant delay at `drift`: 2 ms in 10 s.)
    @Test func aBoundUnderTheSourcesOwnDelayDropsOnlyTheBacklog() {
        let run = Self.play([Open(start: 0, probeEnd: 0.8)], bound: 0.03)
        #expect(run.latency.dropped <= 25, "dropped \(run.latency.dropped)")
        #expect(run.onScreen.dropFirst(2000).max()! <= 0.1, "on screen \(run.onScreen.dropFirst(2000).max()!)")
        #expect(run.lags.count > 200 && run.lags.suffix(100).allSatisfy { $0 > 0.03 && $0 < 0.1 }, "lags \(run.lags.suffix(5))")
    }

    /// A source whose clock runs 0.02 % slow for a minute: its frames are not taken for older and older.
    @Test func aSlowSourceClockIsFollowed() {
        var l = LiveLatency(bound: 0.2)
        l.opened(at: 0, firstAt: 0)
        var drops = 0
        for i in 0..<1500 {
            let time = Double(i) * Self.d
            if l.frame(at: time, duration: Self.d, clock: time - l.pullIn, now: time * 1.0002 + 0.01) == .drop { drops += 1 }
        }
        #expect(drops == 0)
        #expect(l.age! < 0.05)
    }
}
