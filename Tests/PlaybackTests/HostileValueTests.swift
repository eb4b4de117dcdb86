import Playback
import PlaybackTestSupport
import Testing

/// Refresh rates and modes from a config or `--mode`.
@Suite struct HostileModeTests {
    @Test func refreshRatesOutsideOneToAThousandHertzAreRefused() {
        for text in ["0.004", "0.0005", "0", "-60", "0.5", "1000.5", "1e300", "1e-300", "nan", "inf", "-inf", "0x3C",
                     "99999999999999999999", "1.99999999999999999999", "60.", ".5", "6 0", "", "+-60", "1e3"] {
            #expect(RefreshRate(parsing: text) == nil, "\(text)")
        }
        #expect(RefreshRate(parsing: "1") == RefreshRate(numerator: 1))
        #expect(RefreshRate(parsing: "1000") == RefreshRate(numerator: 1000))
        #expect(RefreshRate(parsing: "59.94") == RefreshRate(numerator: 60000, denominator: 1001))
        #expect(RefreshRate(parsing: "23.976") == RefreshRate(numerator: 24000, denominator: 1001))
        #expect(RefreshRate(parsing: "50") == RefreshRate(numerator: 50))
        #expect(RefreshRate(parsing: "75.5") == RefreshRate(numerator: 151, denominator: 2))
    }

    @Test func aRefreshRateThatIsNotPositiveIsNil() {
        #expect(RefreshRate(checkedNumerator: 0, denominator: 1) == nil)
        #expect(RefreshRate(checkedNumerator: 60, denominator: 0) == nil)
        #expect(RefreshRate(checkedNumerator: -60, denominator: -1) == nil)
        #expect(RefreshRate(checkedNumerator: 60, denominator: 1) == RefreshRate(numerator: 60))
    }

    @Test func modesParseOnlyWithinTheirLimits() {
        #expect(DisplayMode(parsing: "640x360@0.004") == nil)
        #expect(DisplayMode(parsing: "99999999999999999999x360") == nil)
        #expect(DisplayMode(parsing: "640x360@60")?.description == "640x360@60")
        #expect(DisplayMode(parsing: "16384x16384@1")?.description == "16384x16384@1")
        #expect(DisplayMode(parsing: "16385x100") == nil)
    }
}

/// Wall clock times from a config (the epoch) and from the system clock.
@Suite struct HostileWallTimeTests {
    @Test func timesPastWhatNanosecondsHoldAreNil() {
        for text in ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2262-04-12T00:00:00Z", "1677-09-21T00:00:00Z",
                     "2262-04-11T23:47:16.854775808Z", "0000-01-01T00:00:00+23:59"] {
            #expect(WallTime(iso8601: text) == nil, "\(text)")
        }
        #expect(WallTime(iso8601: "2262-04-11T23:47:16.854775807Z")?.nanoseconds == .max)
        #expect(WallTime(iso8601: "1677-09-21T00:12:43.145224192Z")?.nanoseconds == .min)
    }

    @Test func manyFractionDigitsAreTruncatedNotOverflowed() {
        #expect(WallTime(iso8601: "2026-01-01T00:00:00.99999999999999999999999999999Z")?.nanoseconds == 1_767_225_600_999_999_999)
    }

    @Test func unixSecondsAndArithmeticSaturate() {
        #expect(WallTime(unixSeconds: 1e300).nanoseconds == .max)
        #expect(WallTime(unixSeconds: -1e300).nanoseconds == .min)
        #expect(WallTime(unixSeconds: .nan).nanoseconds == 0)
        let latest = WallTime(nanoseconds: .max), earliest = WallTime(nanoseconds: .min)
        #expect(latest - earliest == .max)
        #expect(earliest - latest == .min)
        #expect((latest + 5).nanoseconds == .max)
        #expect((earliest + -5).nanoseconds == .min)
        #expect(latest.description == "2262-04-11T23:47:16.854775807Z")
        #expect(earliest.description == "1677-09-21T00:12:43.145224192Z")
    }

    @Test func aLoopTooLongForTheClockIsAnError() {
        let huge = MediaTime(value: .max, timescale: 1)
        #expect(throws: WallSyncError.self) { try WallTimeline(epoch: WallTime(nanoseconds: 0), durations: [huge, huge]) }
        #expect(throws: WallSyncError.self) { try WallTimeline(epoch: WallTime(nanoseconds: 0), durations: [MediaTime(value: 300_000_000_000_000, timescale: 1)]) }
    }

    @Test func positionsAndWallTimesAtTheClocksEdgesDoNotTrap() throws {
        let timeline = try WallTimeline(epoch: WallTime(nanoseconds: .max), durations: [MediaTime(value: 1, timescale: 30)])
        _ = timeline.position(at: WallTime(nanoseconds: .min))
        _ = timeline.wallTime(pass: .max, index: 0, itemTime: .positiveInfinity)
        _ = timeline.wallTime(pass: .min, index: 0, itemTime: .invalid)
        var scheduler = WallFrameScheduler(timeline: timeline, refresh: RefreshRate(numerator: 1000),
                                           frameDurations: [MediaTime(value: 1, timescale: Int32.max)])
        _ = scheduler.pick(vsyncAt: WallTime(nanoseconds: .min))
        _ = scheduler.pick(vsyncAt: WallTime(nanoseconds: .max))
    }
}

/// A transform from any numbers gives a rotation without a trap.
@Suite struct HostileTransformTests {
    @Test func aDegenerateMatrixHasRotationZero() {
        #expect(Transform2D(a: .nan, b: .nan, c: 0, d: 0).rotationDegrees == 0)
        #expect(Transform2D(a: 0, b: .infinity, c: 0, d: 0).rotationDegrees == 90)
        #expect(Transform2D(rotationDegrees: Int.min).rotationDegrees == Transform2D(rotationDegrees: Int.min % 360 + 360).rotationDegrees)
    }
}

/// A container's timestamps reach the cadence arithmetic: the furthest ones saturate, never trap.
@Suite struct HostileCadenceTests {
    @Test func theFurthestTimesGiveTheFurthestVsyncs() {
        let scheduler = CadenceScheduler(refresh: RefreshRate(numerator: 1000))
        #expect(scheduler.vsyncOffset(for: MediaTime(value: .max, timescale: 1)) == .max)
        #expect(scheduler.vsyncOffset(for: MediaTime(value: .min + 1, timescale: 1)) == .min)
        #expect(scheduler.vsyncOffset(for: MediaTime(value: 3, timescale: 2)) == 1500)
    }
}
