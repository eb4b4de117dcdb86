/// Maps the presentation timeline to whole vsyncs. A frame at timeline time `t` is shown from vsync
/// `round(t * refresh)`; because the position is computed from the exact time rather than summed from
/// rounded intervals, the rounding error is carried forward (24 fps at 60 Hz: 3, 2, 3, 2, ...).
public struct CadenceScheduler: Sendable {
    public let refresh: RefreshRate
    public init(refresh: RefreshRate) { self.refresh = refresh }

    /// `round(t * refresh)`, halves rounded up, in exact integer arithmetic.
    public func vsyncOffset(for t: MediaTime) -> Int64 {
        precondition(t.isNumeric, "timeline times are numeric")
        // t * refresh = value * num / (timescale * den); floor((2 * value * num + d) / (2 * d)).
        let n = Int128(t.value) * Int128(refresh.numerator) * 2
        let d = Int128(t.timescale) * Int128(refresh.denominator) * 2
        let x = n + d / 2
        var q = x / d
        if x % d != 0 && x < 0 { q -= 1 }
        return Int64(clamping: q)
    }
}
