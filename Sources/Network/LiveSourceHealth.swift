/// The life of one live source (a stream with no end: RTSP, live HLS, UDP/RTP), on a clock of
/// seconds the caller gives (monotonic, or virtual in tests): opening, playing, stalled (no new
/// picture while one is due for `stallTimeout`), and down (waiting to reopen, with capped,
/// jittered backoff). Pure: the caller opens and reads, and tells this what happened.
public struct LiveSourceHealth: Sendable, Equatable {
    public struct Policy: Sendable, Equatable {
        /// No new picture for this long while one is due: the source is stalled (seconds).
        public var stallTimeout: Double
        /// The first wait before reopening, doubled at each failure up to `maximumDelay`. A
        /// refused or failed open costs the server next to nothing, and the wait past its return
        /// is picture lost, so the cap is short.
        public var initialDelay: Double
        public var maximumDelay: Double
        /// Each wait is scaled by a factor from 1 - jitter to 1 + jitter, so that sources that
        /// went down together do not come back in step.
        public var jitter: Double

        public init(stallTimeout: Double = 2, initialDelay: Double = 0.25, maximumDelay: Double = 1, jitter: Double = 0.2) {
            self.stallTimeout = stallTimeout
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.jitter = jitter
        }
    }

    public enum State: Sendable, Equatable {
        /// Opening; `downSince` is set when this is a reopen.
        case opening(since: Double, downSince: Double?)
        /// Pictures arriving; the last at `lastPicture`.
        case playing(lastPicture: Double)
        /// Waiting until `retryAt` to reopen after `failures` failures in a row.
        case down(since: Double, retryAt: Double, failures: Int, reason: String)
    }

    public let policy: Policy
    public private(set) var state: State

    public init(policy: Policy = Policy(), now: Double) {
        self.policy = policy
        state = .opening(since: now, downSince: nil)
    }

    /// The wait after `failures` failures in a row (1 and up), before jitter.
    public func delay(afterFailures failures: Int) -> Double {
        var d = policy.initialDelay
        for _ in 1..<max(1, min(failures, 64)) where d < policy.maximumDelay { d *= 2 }
        return min(d, policy.maximumDelay)
    }

    /// A picture arrived (the first after an open, or the next).
    public mutating func picture(at now: Double) {
        state = .playing(lastPicture: now)
        lastPicture = now
        consecutive = 0
    }

    /// When the last picture arrived, kept while the source is down; nil before the first.
    public private(set) var lastPicture: Double?

    /// How far past the last picture's end a reopened source's pictures go on the item's
    /// timeline: the time since that picture. The item's clock ran on meanwhile, and a live
    /// source sends no faster than real time, so pictures placed right after the last would be
    /// late by the outage for good (and dropped); this way they come as due as before it.
    public func timelineGap(at now: Double) -> Double {
        lastPicture.map { max(0, now - $0) } ?? 0
    }

    /// The open failed, the read failed, or the source ended: down until the next try.
    /// `random` in 0..<1 picks the jitter (the caller's generator, fixed in tests).
    public mutating func failed(at now: Double, reason: String, random: Double) {
        let failures: Int
        let since: Double
        switch state {
        case .down(let s, _, let f, _): (since, failures) = (s, f + 1)
        case .opening(let s, let down): (since, failures) = (down ?? s, down == nil ? 1 : consecutive + 1)
        case .playing: (since, failures) = (now, 1)
        }
        let spread = 1 + policy.jitter * (2 * min(max(random, 0), 1) - 1)
        state = .down(since: since, retryAt: now + delay(afterFailures: failures) * spread, failures: failures, reason: reason)
        consecutive = failures
    }

    /// Failures in a row, kept across the reopen that follows a `down`.
    public private(set) var consecutive = 0

    /// Checks the clock: a stall while playing turns into `down` at once (retry due now, as the
    /// caller closes the source); a due retry into `opening`. Returns what the caller must do.
    public enum Action: Sendable, Equatable { case none, close(reason: String), reopen }

    public mutating func tick(at now: Double) -> Action {
        switch state {
        case .playing(let last) where now - last >= policy.stallTimeout:
            let reason = "no picture for \(Self.seconds(now - last)) s"
            state = .down(since: last, retryAt: now, failures: consecutive, reason: reason)
            return .close(reason: reason)
        case .down(let since, let retryAt, _, _) where now >= retryAt:
            state = .opening(since: now, downSince: since)
            return .reopen
        default:
            return .none
        }
    }

    /// Whether pictures are arriving; `picture(at:)` after a reopen resets the failure count.
    public var isUp: Bool { if case .playing = state { true } else { false } }

    /// Since when the source has given no picture, while it is down or reopening.
    public var downSince: Double? {
        switch state {
        case .playing: nil
        case .opening(_, let down): down
        case .down(let since, _, _, _): since
        }
    }

    /// Health's words for this source: nil while up.
    public func degradation(source: String, now: Double) -> String? {
        guard let since = downSince else { return nil }
        var text = "\(source): down for \(Self.seconds(now - since)) s"
        if case .down(_, let retryAt, let failures, let reason) = state {
            text += " (\(reason); \(failures) failed, next try in \(Self.seconds(max(0, retryAt - now))) s)"
        }
        return text
    }

    static func seconds(_ s: Double) -> String {
        let tenths = (s * 10).rounded()
        return tenths.isFinite ? String(Double(Int(clamping: Int64(max(min(tenths, 1e15), -1e15)))) / 10) : "?"
    }
}
