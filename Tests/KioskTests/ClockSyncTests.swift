@testable import Kiosk
import Playback
import Testing

@Suite struct ClockSyncTests {
    let refresh = RefreshRate(numerator: 60)
    let epoch = WallTime(unixSeconds: 1_800_000_000)

    func sync() throws -> ClockSync {
        let timeline = try WallTimeline(epoch: epoch, durations: [MediaTime(value: 2, timescale: 1), MediaTime(value: 1, timescale: 1)])
        return ClockSync(timeline: timeline, playlistIndices: [0, 1], fileStarts: [.zero, .zero], logger: Logger(level: .error, sink: { _ in }))
    }

    /// The wall time of `seconds` into loop pass `pass`.
    func wall(_ seconds: Double, pass: Double = 10) -> WallTime { WallTime(unixSeconds: epoch.unixSeconds + pass * 3 + seconds) }

    @Test func aFrameOnItsVsyncIsLeftAlone() throws {
        let s = try sync()
        // Item 1 at 0.5 s is loop position 2.5 s; shown on the vsync at that wall time, or a third of
        // a vsync either side.
        for offset in [0.0, 0.3 / 60, -0.3 / 60] {
            #expect(s.check(vsync: 100, wall: wall(2.5 + offset), index: 1, itemTime: MediaTime(value: 1, timescale: 2), refresh: refresh) == .none)
        }
    }

    @Test func oneVsyncEarlyOrLateIsCorrectedByOneVsync() throws {
        let s = try sync()
        let half = MediaTime(value: 1, timescale: 2)
        // Shown a vsync before its time: the frames to come move one vsync later (one repeat).
        #expect(s.check(vsync: 100, wall: wall(2.5 - 1.0 / 60), index: 1, itemTime: half, refresh: refresh) == .shift(1))
        // A correction shows before the next one.
        #expect(s.check(vsync: 101, wall: wall(2.5 - 1.0 / 60), index: 1, itemTime: half, refresh: refresh) == .none)
        // A vsync after its time: one vsync is skipped.
        #expect(s.check(vsync: 110, wall: wall(2.5 + 1.0 / 60), index: 1, itemTime: half, refresh: refresh) == .shift(-1))
        #expect(s.repeated == 1 && s.skipped == 1)
    }

    @Test func farOffRestartsAndTheLoopWrapsAround() throws {
        let s = try sync()
        #expect(s.check(vsync: 100, wall: wall(0.2), index: 1, itemTime: .zero, refresh: refresh) == .restart)
        #expect(s.resyncs == 1)
        // The last frame of a pass against the first moment of the next is a small error, not a loop.
        #expect(s.check(vsync: 200, wall: wall(0.0, pass: 11), index: 1, itemTime: MediaTime(value: 59, timescale: 60), refresh: refresh) == .shift(-1))
    }

    /// Outputs with different vsync phases that (re)start within the same quarter second land on
    /// one wall time of the shared grid, each on its vsync nearest it; given a shared moment (a
    /// reload), every output lands on that one.
    @Test func outputsStartingAtDifferentMomentsShareTheirStartingWallTime() {
        let interval = 1.0 / 60
        func clock(phase: Double) -> (Int64) -> WallTime? {
            { n in WallTime(unixSeconds: 1_800_000_000.03 + phase + Double(n) * interval) }
        }
        let a = ClockSync.startPoint(earliest: 10, interval: interval, wallTime: clock(phase: 0))
        let b = ClockSync.startPoint(earliest: 11, interval: interval, wallTime: clock(phase: 0.007))
        #expect(a.wall == b.wall)
        #expect(a.wall.nanoseconds % 250_000_000 == 0)
        let moment = WallTime(unixSeconds: 1_800_000_001.5)
        let c = ClockSync.startPoint(earliest: 10, at: moment, interval: interval, wallTime: clock(phase: 0))
        let d = ClockSync.startPoint(earliest: 40, at: moment, interval: interval, wallTime: clock(phase: 0.011))
        #expect(c.wall == moment && d.wall == moment)
        for (point, phase) in [(a, 0.0), (b, 0.007), (c, 0.0), (d, 0.011)] {
            let shown = clock(phase: phase)(point.vsync)!
            #expect(abs(shown - point.wall) <= Int64(interval / 2 * 1e9), "\(shown - point.wall) ns")
        }
        #expect(a.wall - clock(phase: 0)(10)! >= Int64(30 * interval * 1e9), "at least half a second of lead")
        // A shared moment already (nearly) past: the grid instead.
        let late = ClockSync.startPoint(earliest: 200, at: moment, interval: interval, wallTime: clock(phase: 0))
        #expect(late.wall > moment && late.wall.nanoseconds % 250_000_000 == 0)
    }
}

/// A system clock stepped to a far year, or a shared moment from one, gives a start point without a trap.
@Suite struct HostileClockSyncTests {
    @Test func sharedMomentsFarAwayAreIgnoredAndExtremeClocksDoNotTrap() {
        let interval = 1.0 / 60
        let clock = { (n: Int64) -> WallTime? in WallTime(unixSeconds: 1_800_000_000 + Double(n) * interval) }
        let far = WallTime(iso8601: "2199-12-31T23:59:59Z")!
        let point = ClockSync.startPoint(earliest: 10, at: far, interval: interval, wallTime: clock)
        #expect(point.wall < WallTime(unixSeconds: 1_800_000_001), "\(point.wall)")
        #expect(point.vsync < 200, "\(point.vsync)")
        for extreme in [WallTime(nanoseconds: .max), WallTime(nanoseconds: .min)] {
            _ = ClockSync.startPoint(earliest: .max - 100, at: extreme, interval: interval, wallTime: { _ in extreme })
            _ = ClockSync.startPoint(earliest: 0, at: nil, interval: 1e-300, wallTime: { _ in extreme })
            _ = ClockSync.gridPoint(after: extreme)
        }
        #expect(ClockSync.gridPoint(after: WallTime(nanoseconds: .max)) == WallTime(nanoseconds: .max))
        #expect(ClockSync.gridPoint(after: WallTime(nanoseconds: -5), grid: 4) == WallTime(nanoseconds: -4))
    }
}
