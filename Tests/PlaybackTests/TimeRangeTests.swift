import Testing
import Playback
import PlaybackTestSupport

/// Shorthand for a numeric time.
private func t(_ value: Int64, _ timescale: Int32 = 1) -> MediaTime {
    MediaTime(value: value, timescale: timescale)
}

/// Shorthand for the range `[start, end)` in whole seconds.
private func r(_ start: Int64, _ end: Int64) -> TimeRange {
    TimeRange(start: t(start), end: t(end))
}

@Suite("TimeRange")
struct TimeRangeTests {
    @Test func startAndDuration() {
        let range = TimeRange(start: t(2), duration: t(3))
        #expect(range.start == t(2))
        #expect(range.duration == t(3))
        #expect(range.end == t(5))
        #expect(range.isValid && !range.isEmpty)
    }

    @Test func startAndEnd() {
        let range = TimeRange(start: t(1, 4), end: t(1, 6))
        #expect(range.isValid == false)       // end before start
        let forward = TimeRange(start: t(1, 6), end: t(1, 4))
        #expect(forward.duration == t(1, 12))
        #expect(forward.end == t(1, 4))
    }

    @Test func constants() {
        #expect(TimeRange.zero.start == .zero && TimeRange.zero.duration == .zero)
        #expect(TimeRange.zero.isValid && TimeRange.zero.isEmpty)
        #expect(!TimeRange.invalid.isValid)
        #expect(!TimeRange.invalid.start.isValid && !TimeRange.invalid.duration.isValid)
    }

    @Test func validity() {
        #expect(TimeRange(start: t(-5), duration: t(1)).isValid)
        #expect(TimeRange(start: t(5), duration: .zero).isValid)
        #expect(!TimeRange(start: t(5), duration: t(-1)).isValid)
        #expect(!TimeRange(start: .invalid, duration: t(1)).isValid)
        #expect(!TimeRange(start: t(0), duration: .invalid).isValid)
        #expect(!TimeRange(start: t(0), duration: .indefinite).isValid)
        #expect(!TimeRange(start: t(0), duration: .positiveInfinity).isValid)
        #expect(!TimeRange(start: t(0), duration: .negativeInfinity).isValid)
        #expect(TimeRange(start: .indefinite, duration: t(1)).isValid)    // start need only be valid
    }

    @Test func endOfInvalidRangeIsInvalid() {
        #expect(!TimeRange.invalid.end.isValid)
        #expect(!TimeRange(start: t(5), duration: t(-1)).end.isValid)
    }

    @Test func containsStartButNeverEnd() {
        let range = r(1, 3)
        #expect(range.containsTime(t(1)))
        #expect(range.containsTime(t(2)))
        #expect(range.containsTime(t(2_999, 1_000)))
        #expect(!range.containsTime(t(3)))
        #expect(!range.containsTime(t(3_000, 1_000)))
        #expect(!range.containsTime(t(999, 1_000)))
        #expect(!range.containsTime(t(4)))
    }

    @Test func containsTimeWithSpecialValues() {
        let range = r(0, 10)
        #expect(!range.containsTime(.invalid))
        #expect(!range.containsTime(.indefinite))
        #expect(!range.containsTime(.positiveInfinity))
        #expect(!range.containsTime(.negativeInfinity))
        #expect(!TimeRange.invalid.containsTime(t(0)))
    }

    @Test func emptyRangeContainsNothing() {
        let empty = TimeRange(start: t(4), duration: .zero)
        #expect(empty.isEmpty)
        #expect(!empty.containsTime(t(4)))
        #expect(!TimeRange.zero.containsTime(.zero))
    }

    @Test func containsTimeRange() {
        let outer = r(0, 10)
        #expect(outer.containsTimeRange(r(2, 5)))
        #expect(outer.containsTimeRange(outer))
        #expect(outer.containsTimeRange(r(0, 10)))
        #expect(outer.containsTimeRange(TimeRange(start: t(1, 3), end: t(29, 3))))
        #expect(!outer.containsTimeRange(r(5, 11)))
        #expect(!outer.containsTimeRange(r(-1, 5)))
        #expect(!outer.containsTimeRange(r(20, 30)))
        #expect(!r(2, 5).containsTimeRange(outer))
        #expect(outer.containsTimeRange(TimeRange(start: t(10), duration: .zero)))
        #expect(!outer.containsTimeRange(.invalid))
        #expect(!TimeRange.invalid.containsTimeRange(r(1, 2)))
    }

    @Test func union() {
        #expect(r(0, 5).union(r(3, 8)) == r(0, 8))
        #expect(r(3, 8).union(r(0, 5)) == r(0, 8))
        #expect(r(0, 10).union(r(2, 3)) == r(0, 10))
        #expect(r(0, 1).union(r(5, 6)) == r(0, 6))              // covers the gap
        let mixed = TimeRange(start: t(1, 2), duration: t(1, 2)).union(TimeRange(start: t(1, 3), duration: t(1, 3)))
        #expect(mixed == TimeRange(start: t(1, 3), end: t(1)))
        #expect(!r(0, 1).union(.invalid).isValid)
        #expect(!TimeRange.invalid.union(r(0, 1)).isValid)
    }

    @Test func intersection() {
        #expect(r(0, 5).intersection(r(3, 8)) == r(3, 5))
        #expect(r(3, 8).intersection(r(0, 5)) == r(3, 5))
        #expect(r(0, 10).intersection(r(2, 3)) == r(2, 3))
        #expect(r(0, 10).intersection(r(0, 10)) == r(0, 10))
        let mixed = TimeRange(start: t(1, 4), duration: t(1, 2)).intersection(TimeRange(start: t(1, 3), duration: t(1)))
        #expect(mixed == TimeRange(start: t(1, 3), end: t(3, 4)))
        #expect(mixed.duration == t(5, 12))
        #expect(!r(0, 1).intersection(.invalid).isValid)
        #expect(!TimeRange.invalid.intersection(r(0, 1)).isValid)
    }

    @Test func emptyIntersectionIsZeroDuration() {
        let disjoint = r(0, 1).intersection(r(5, 6))
        #expect(disjoint.isValid && disjoint.isEmpty)
        #expect(disjoint.duration == .zero)
        #expect(disjoint.start == t(5))
        let touching = r(0, 1).intersection(r(1, 2))          // the end is not part of [0, 1)
        #expect(touching.isEmpty && touching.start == t(1))
        let timescaled = TimeRange(start: t(0, 600), duration: t(300, 600))
            .intersection(TimeRange(start: t(900, 600), duration: t(1, 600)))
        #expect(timescaled.duration.timescale == 600 && timescaled.duration == .zero)
    }

    @Test func equality() {
        #expect(TimeRange(start: t(1, 2), duration: t(1)) == TimeRange(start: t(2, 4), duration: t(600, 600)))
        #expect(r(0, 1) != r(0, 2))
        #expect(r(0, 1) != r(1, 2))
        #expect(TimeRange.invalid == TimeRange(start: .invalid, duration: .invalid))
        let set: Set<TimeRange> = [r(0, 1), TimeRange(start: t(0, 3), duration: t(3, 3)), r(1, 2)]
        #expect(set.count == 2)
    }

    @Test func description() {
        #expect(TimeRange(start: t(0), duration: t(10)).description == "{{0/1 = 0.000}, {10/1 = 10.000}}")
        #expect(TimeRange.invalid.description == "{{INVALID}, {INVALID}}")
    }
}
