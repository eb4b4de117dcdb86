import Foundation

/// Error raised when a wait expires; every wait in Marquee has a timeout and says what it waited for.
public struct WaitTimeout: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { description }
    public let waitingFor: String
    public let seconds: Double
    public init(waitingFor: String, seconds: Double) {
        self.waitingFor = waitingFor
        self.seconds = seconds
    }
    public var description: String { "timed out after \(seconds.formatted(decimals: 3)) s waiting for \(waitingFor)" }
}

/// The clock of an output: vsync `n` happens at `time(ofVsync: n)` on the presentation timeline,
/// where vsync 0 is the moment the output started.
public protocol VsyncClock: Sendable {
    var refresh: RefreshRate { get }
    /// The first vsync strictly after `vsync` that a frame finished now can still be shown on.
    func earliestVsync(after vsync: Int64) -> Int64
    /// How long from now until vsync `n` happens (negative when it is past), for clocks that run in
    /// real time; nil for a virtual clock. Maps vsyncs to the system clock (wall sync, traces).
    func timeUntilVsync(_ n: Int64) -> Duration?
    /// True for a clock whose time moves only as the presentation goes (tests, runs as fast as
    /// decode allows): a picture still decoding is waited for by real time alone (at most the
    /// loop's limit), not up to its vsync.
    var isVirtual: Bool { get }
}

extension VsyncClock {
    public func timeUntilVsync(_ n: Int64) -> Duration? { nil }
    public var isVirtual: Bool { false }

    /// The system-clock (Unix) time of vsync `n`, for clocks that run in real time.
    public func wallTime(ofVsync n: Int64) -> WallTime? {
        timeUntilVsync(n).map { WallTime.now() + Int64(saturating: $0.seconds * 1e9) }
    }
}

extension VsyncClock {
    /// Time of vsync `n`, exactly `n / refresh` seconds after the output started.
    public func time(ofVsync n: Int64) -> MediaTime {
        MediaTime(value: n * refresh.denominator, timescale: Int32(clamping: refresh.numerator))
    }
}

/// Vsyncs advance as soon as the next frame is ready; nothing waits for them. Timestamps are simulated
/// (`t = vsync / refresh`), so timing is exact and a run is as fast as decode and draw allow.
public struct VirtualVsyncClock: VsyncClock {
    public let refresh: RefreshRate
    public init(refresh: RefreshRate) { self.refresh = refresh }
    public func earliestVsync(after vsync: Int64) -> Int64 { vsync + 1 }
    public var isVirtual: Bool { true }
}

/// Vsyncs at wall-clock times: vsync `n` at `start + n / refresh` on the monotonic clock, paced like a
/// display that has no page-flip events of its own (the headless output).
public struct RealVsyncClock: VsyncClock {
    public let refresh: RefreshRate
    private let start: ContinuousClock.Instant

    public init(refresh: RefreshRate, start: ContinuousClock.Instant = .now) {
        self.refresh = refresh
        self.start = start
    }

    /// The index of the last vsync that has already happened.
    public var currentVsync: Int64 {
        let elapsed = ContinuousClock.now - start
        let (s, atto) = elapsed.components
        let nanos = Int128(s) * 1_000_000_000 + Int128(atto / 1_000_000_000)
        let n = nanos * Int128(refresh.numerator) / (Int128(refresh.denominator) * 1_000_000_000)
        return Int64(n)
    }

    public func earliestVsync(after vsync: Int64) -> Int64 { max(vsync + 1, currentVsync + 1) }

    /// When vsync `n` happens on the monotonic clock.
    private func instant(ofVsync n: Int64) -> ContinuousClock.Instant {
        start + .nanoseconds(Int64(Int128(n) * Int128(refresh.denominator) * 1_000_000_000 / Int128(refresh.numerator)))
    }

    public func timeUntilVsync(_ n: Int64) -> Duration? { instant(ofVsync: n) - ContinuousClock.now }
}

extension Duration {
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
