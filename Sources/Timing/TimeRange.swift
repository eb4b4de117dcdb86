/// A half-open span of time, `[start, start + duration)`: it contains its
/// start but never its end.
///
/// A range is valid when its start is a valid time and its duration is a
/// numeric time >= 0. Operations on invalid ranges give `false` or `.invalid`.
public struct TimeRange: Sendable, Hashable, CustomStringConvertible {
    /// The first time in the range.
    public var start: MediaTime
    /// The length of the range.
    public var duration: MediaTime

    /// The range `[start, start + duration)`.
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    /// The range `[start, end)`; invalid if `end < start`.
    public init(start: MediaTime, end: MediaTime) {
        self.init(start: start, duration: end - start)
    }

    /// The empty range at zero.
    public static let zero = TimeRange(start: .zero, duration: .zero)
    /// An invalid range.
    public static let invalid = TimeRange(start: .invalid, duration: .invalid)

    /// Whether the start is valid and the duration is numeric and >= 0.
    public var isValid: Bool {
        start.isValid && duration.isNumeric && duration >= .zero
    }

    /// Whether the range is valid with a zero duration (it contains no time).
    public var isEmpty: Bool {
        isValid && duration == .zero
    }

    /// The first time after the range, `start + duration`; invalid for an invalid range.
    public var end: MediaTime {
        isValid ? start + duration : .invalid
    }

    /// Whether `time` lies in `[start, end)`.
    public func containsTime(_ time: MediaTime) -> Bool {
        isValid && time.isValid && time >= start && time < end
    }

    /// Whether `range` lies within this range: `range.start >= start` and
    /// `range.end <= end` (so an empty range at `end` counts as contained).
    public func containsTimeRange(_ range: TimeRange) -> Bool {
        isValid && range.isValid && range.start >= start && range.end <= end
    }

    /// The smallest range covering both ranges (including any gap between them).
    public func union(_ other: TimeRange) -> TimeRange {
        guard isValid, other.isValid else { return .invalid }
        return TimeRange(start: min(start, other.start), end: max(end, other.end))
    }

    /// The time in both ranges; when they do not overlap, a zero-duration
    /// range at the later start.
    public func intersection(_ other: TimeRange) -> TimeRange {
        guard isValid, other.isValid else { return .invalid }
        let start = max(self.start, other.start)
        let end = min(self.end, other.end)
        if end > start { return TimeRange(start: start, end: end) }
        let zero = start.isNumeric ? MediaTime(value: 0, timescale: start.timescale) : .zero
        return TimeRange(start: start, duration: zero)
    }

    /// `{start, duration}`, e.g. `{{0/1 = 0.000}, {10/1 = 10.000}}`.
    public var description: String {
        "{\(start), \(duration)}"
    }
}
