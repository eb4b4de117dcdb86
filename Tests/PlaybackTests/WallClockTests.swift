import Playback
import PlaybackTestSupport
import Testing

@Suite struct WallTimeTests {
    @Test func parsesISO8601WithItsZone() throws {
        let newYear2026: Int64 = 1_767_225_600_000_000_000
        #expect(WallTime(iso8601: "1970-01-01T00:00:00Z")?.nanoseconds == 0)
        #expect(WallTime(iso8601: "2026-01-01T00:00:00Z")?.nanoseconds == newYear2026)
        #expect(WallTime(iso8601: "2026-01-01T01:30:00+01:30")?.nanoseconds == newYear2026)
        #expect(WallTime(iso8601: "2025-12-31 19:00:00.25-05:00")?.nanoseconds == newYear2026 + 250_000_000)
        #expect(WallTime(iso8601: "2024-02-29T12:00:00Z") != nil)
        #expect(WallTime(iso8601: "1969-12-31T23:59:59Z")?.nanoseconds == -1_000_000_000)
        let t = try #require(WallTime(iso8601: "2026-03-04T05:06:07.125Z"))
        #expect(t.description == "2026-03-04T05:06:07.125Z")
        #expect(WallTime(iso8601: t.description) == t)
    }

    @Test func refusesAmbiguousOrImpossibleTimes() {
        for bad in ["2026-01-01T00:00:00", "2026-01-01", "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                    "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.Z", "yesterday", "", "2026-01-01T00:00:00Zjunk"] {
            #expect(WallTime(iso8601: bad) == nil, "\(bad)")
        }
    }
}

@Suite struct WallTimelineTests {
    static let epoch = WallTime(iso8601: "2026-01-01T00:00:00Z")!
    /// 4 s at 30 fps, 3.2 s at 25 fps, 5.005 s at 23.976 fps (120 frames): a 12.205 s loop.
    static let durations = [MediaTime(value: 4, timescale: 1), MediaTime(value: 16, timescale: 5),
                            MediaTime(value: 5005, timescale: 1000)]
    static let frames: [MediaTime?] = [MediaTime(value: 1, timescale: 30), MediaTime(value: 1, timescale: 25),
                                       MediaTime(value: 1001, timescale: 24000)]

    @Test func positionIsTheTimeSinceTheEpochModuloTheLoop() throws {
        let timeline = try WallTimeline(epoch: Self.epoch, durations: Self.durations)
        #expect(timeline.length == MediaTime(value: 12205, timescale: 1000))
        func at(_ seconds: Double) -> WallPosition { timeline.position(at: Self.epoch + Int64((seconds * 1e9).rounded())) }
        #expect(at(0) == WallPosition(pass: 0, index: 0, itemTime: .zero))
        #expect(at(3.999).index == 0)
        #expect(at(4).index == 1 && at(4).itemTime == .zero)
        #expect(at(7.5).index == 2 && at(7.5).itemTime == MediaTime(value: 3, timescale: 10))
        #expect(at(12.205) == WallPosition(pass: 1, index: 0, itemTime: .zero))
        // Before the epoch the loop runs backwards from it.
        #expect(at(-0.005) == WallPosition(pass: -1, index: 2, itemTime: MediaTime(value: 5, timescale: 1)))
        // A year later, still exact to the tick: 2_583_777 passes of 12.205 s plus 1 s.
        let year = 2_583_777 * 12.205 + 1
        #expect(at(year) == WallPosition(pass: 2_583_777, index: 0, itemTime: MediaTime(value: 1, timescale: 1)))
    }

    @Test func refusesItemsWithoutALength() {
        #expect(throws: WallSyncError.self) { try WallTimeline(epoch: Self.epoch, durations: []) }
        #expect(throws: WallSyncError.self) { try WallTimeline(epoch: Self.epoch, durations: [MediaTime(value: 1, timescale: 1), .zero]) }
        #expect(throws: WallSyncError.self) { try WallTimeline(epoch: Self.epoch, durations: [.indefinite]) }
    }

    /// A simulated node: its display's vsyncs (from a virtual vsync clock) start at `start` (true
    /// time) with a phase, run `rate` times as fast as true time, and its system clock reads
    /// `clockOffset` ns ahead of true time. Returns, per vsync, its true time and what it showed.
    struct Node {
        var start: WallTime
        var phase: Int64
        var clockOffset: Int64
        var rate = 1.0
        var stalls: [(after: Int64, nanoseconds: Int64)] = []

        func run(_ timeline: WallTimeline, frames: [MediaTime?], refresh: RefreshRate, until end: WallTime)
            -> (vsyncs: [(truth: WallTime, pick: WallPick)], scheduler: WallFrameScheduler) {
            var scheduler = WallFrameScheduler(timeline: timeline, refresh: refresh, frameDurations: frames)
            let clock = VirtualVsyncClock(refresh: refresh)
            var out: [(WallTime, WallPick)] = []
            var n: Int64 = 0, stalled: Int64 = 0
            while true {
                if let stall = stalls.first(where: { $0.after == n }) { stalled += stall.nanoseconds }
                let elapsed = Int64((Double(clock.time(ofVsync: n).seconds * 1e9) / rate).rounded())
                let truth = start + phase + elapsed + stalled
                if truth > end { break }
                out.append((truth, scheduler.pick(vsyncAt: truth + clockOffset)))
                n += 1
            }
            return (out, scheduler)
        }
    }

    /// The frame changes of a run, with the true time each appeared.
    static func events(_ vsyncs: [(truth: WallTime, pick: WallPick)]) -> [WallFrameEvent] {
        var events: [WallFrameEvent] = []
        for v in vsyncs {
            let e = WallFrameEvent(wall: v.truth, item: v.pick.position.index, pts: v.pick.pts, pass: v.pick.position.pass)
            if let last = events.last, last.item == e.item, last.pts == e.pts, last.pass == e.pass { continue }
            events.append(e)
        }
        return events
    }

    /// What was on a node's screen at true time `t`.
    static func showing(_ vsyncs: [(truth: WallTime, pick: WallPick)], at t: WallTime) -> WallPick? {
        var lo = 0, hi = vsyncs.count - 1
        guard hi >= 0, vsyncs[0].truth <= t else { return nil }
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if vsyncs[mid].truth <= t { lo = mid } else { hi = mid - 1 }
        }
        return vsyncs[lo].pick
    }

    @Test func twoNodesStartedSevenSecondsApartShowTheSameFrames() throws {
        let timeline = try WallTimeline(epoch: Self.epoch, durations: Self.durations)
        let refresh = RefreshRate(numerator: 60)
        let interval: Int64 = 16_666_667
        let t0 = Self.epoch + 1_000_123_000_000
        let end = t0 + 40_000_000_000
        // Clocks held by chrony within a fraction of a millisecond; vsync phases unrelated.
        let a = Node(start: t0, phase: 3_100_000, clockOffset: 250_000)
        let b = Node(start: t0 + 7_300_000_000, phase: 11_700_000, clockOffset: -400_000)
        let runA = a.run(timeline, frames: Self.frames, refresh: refresh, until: end)
        let runB = b.run(timeline, frames: Self.frames, refresh: refresh, until: end)
        let firstB = try #require(runB.vsyncs.first).truth
        let eventsA = Self.events(runA.vsyncs).filter { $0.wall >= firstB }
        let eventsB = Array(Self.events(runB.vsyncs).dropFirst())  // its first frame is a join, not a change
        let (error, compared) = wallSyncError(eventsA, eventsB)
        // 32.7 s of three items at 30, 25 and 23.976 fps, crossing item and loop boundaries.
        #expect(compared > 850, "frames compared: \(compared)")
        #expect(error <= interval, "sync error \(Double(error) / 1e6) ms")
        // On every vsync of the second node, the first shows the same frame, or (around a change)
        // the neighbouring one, and then only for less than one vsync.
        var same = 0
        for v in runB.vsyncs {
            let other = try #require(Self.showing(runA.vsyncs, at: v.truth))
            if other.position.index == v.pick.position.index && other.pts == v.pick.pts && other.position.pass == v.pick.position.pass {
                same += 1
            }
        }
        #expect(Double(same) / Double(runB.vsyncs.count) > 0.6, "same frame on \(same) of \(runB.vsyncs.count) vsyncs")
        // Both loop: the second pass comes round on both.
        #expect(runB.vsyncs.contains { $0.pick.position.pass > runB.vsyncs[0].pick.position.pass })
        // Nothing but cadence: no resyncs after the first frame, no repeats or skips.
        #expect(runA.scheduler.resyncs == 0 && runB.scheduler.resyncs == 0)
        #expect(runA.scheduler.repeated == 0 && runA.scheduler.skipped == 0)
        #expect(runB.scheduler.repeated == 0 && runB.scheduler.skipped == 0)
    }

    @Test(arguments: [1.001, 0.999])
    func aDisplayClockOffByOnePerMilleIsCorrectedFrameByFrame(rate: Double) throws {
        // One 10 s item at 60 fps on a nominal 60 Hz display that runs 0.1% fast or slow.
        let timeline = try WallTimeline(epoch: Self.epoch, durations: [MediaTime(value: 10, timescale: 1)])
        let refresh = RefreshRate(numerator: 60)
        let start = Self.epoch + 5_432_100_000
        let end = start + 120_000_000_000
        let run = Node(start: start, phase: 0, clockOffset: 0, rate: rate)
            .run(timeline, frames: [MediaTime(value: 1, timescale: 60)], refresh: refresh, until: end)
        let advances = run.vsyncs.dropFirst().map { $0.pick.advance }
        #expect(advances.allSatisfy { $0 != nil }, "no resync")
        let steps = advances.compactMap { $0 }
        let corrections = steps.enumerated().filter { $0.element != 1 }.map(\.offset)
        // 120 s at 0.1%: 0.12 s = about 7 frames, one at a time, about 1000 vsyncs apart.
        #expect((6...8).contains(corrections.count), "corrections at \(corrections.prefix(20))")
        if rate > 1 {
            #expect(steps.allSatisfy { $0 == 0 || $0 == 1 }, "fast: a frame shown twice, never a jump")
            #expect(run.scheduler.repeated == corrections.count && run.scheduler.skipped == 0)
        } else {
            #expect(steps.allSatisfy { $0 == 1 || $0 == 2 }, "slow: one frame skipped, never a jump")
            #expect(run.scheduler.skipped == corrections.count && run.scheduler.repeated == 0)
        }
        for (x, y) in zip(corrections, corrections.dropFirst()) { #expect(y - x > 900, "corrections \(x) and \(y) too close") }
        // The picture never drifts from the wall clock by more than one vsync.
        for v in run.vsyncs {
            let ideal = timeline.position(at: v.truth)
            let drift = abs((v.pick.pts - ideal.itemTime).seconds) + (v.pick.position.pass != ideal.pass ? 10 : 0)
            #expect(drift <= refresh.interval.seconds + 1e-9 || drift >= 10 - refresh.interval.seconds - 1e-9)
        }
    }

    @Test func aStalledNodeJoinsAtTheRightFrame() throws {
        let timeline = try WallTimeline(epoch: Self.epoch, durations: Self.durations)
        let refresh = RefreshRate(numerator: 60)
        let start = Self.epoch + 77_000_000_000
        let run = Node(start: start, phase: 0, clockOffset: 0, stalls: [(after: 300, nanoseconds: 730_000_000)])
            .run(timeline, frames: Self.frames, refresh: refresh, until: start + 10_000_000_000)
        #expect(run.scheduler.resyncs == 1)
        let rejoin = run.vsyncs[300]
        #expect(rejoin.pick.resync && rejoin.pick.advance == nil)
        let ideal = timeline.position(at: rejoin.truth + 8_333_333)
        #expect(rejoin.pick.position == ideal)
        #expect(run.vsyncs[301].pick.resync == false)
    }
}
