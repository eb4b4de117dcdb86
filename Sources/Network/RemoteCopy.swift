/// The life of one remote file's local copy (`network.cache`), on a clock of seconds the caller
/// gives (monotonic, or virtual in tests): absent, downloading, verifying, ready; refreshed every
/// `refresh` seconds (downloading and verifying again while the copy plays on), stale while a
/// refresh fails, failed (no copy) with capped backoff. Pure: the caller downloads, verifies and
/// renames, and tells this what happened.
public struct RemoteCopy: Sendable, Equatable {
    public struct Policy: Sendable, Equatable {
        /// Seconds between checks of a ready copy against the server.
        public var refresh: Double
        /// The first wait after a failed download, doubled at each failure up to `maximumDelay`.
        public var initialDelay: Double
        public var maximumDelay: Double

        public init(refresh: Double = 300, initialDelay: Double = 1, maximumDelay: Double = 60) {
            self.refresh = refresh
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
        }
    }

    /// A complete, verified copy on disk: `version` counts the copies swapped in (1: the first),
    /// `confirmed` is when the server last gave it (downloaded or found unchanged).
    public struct Copy: Sendable, Equatable {
        public var version: Int
        public var confirmed: Double

        public init(version: Int, confirmed: Double) {
            (self.version, self.confirmed) = (version, confirmed)
        }
    }

    public enum State: Sendable, Equatable {
        /// No copy, no download yet.
        case absent
        /// A download under way into a temporary file; `copy`: the one that plays meanwhile.
        case downloading(since: Double, copy: Copy?)
        /// The download is complete: its length and its first frame are being checked.
        case verifying(since: Double, copy: Copy?)
        /// The copy plays; it is checked again at `checkAt`.
        case ready(Copy, checkAt: Double)
        /// A refresh failed: the copy plays on; tried again at `retryAt`.
        case stale(Copy, retryAt: Double, failures: Int, reason: String)
        /// No copy and the last download failed: tried again at `retryAt`.
        case failed(retryAt: Double, failures: Int, reason: String)
    }

    public let policy: Policy
    public private(set) var state: State = .absent

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// A complete copy left by an earlier run plays at once and is checked against its server
    /// first thing.
    public mutating func adopt(at now: Double) {
        state = .ready(Copy(version: 1, confirmed: now), checkAt: now)
    }

    /// The copy that plays now, if any.
    public var copy: Copy? {
        switch state {
        case .absent, .failed: nil
        case .downloading(_, let c), .verifying(_, let c): c
        case .ready(let c, _), .stale(let c, _, _, _): c
        }
    }

    /// What the caller must do now.
    public enum Action: Sendable, Equatable { case none, download }

    /// Since when a download has been due (nil: none is), and whether a copy plays meanwhile: the
    /// caller starts the first copies before the refreshes, the longest waiting first.
    public func due(at now: Double) -> (since: Double, hasCopy: Bool)? {
        switch state {
        case .absent: (-.infinity, false)
        case .ready(_, let at) where now >= at: (at, true)
        case .stale(_, let at, _, _) where now >= at: (at, true)
        case .failed(let at, _, _) where now >= at: (at, false)
        default: nil
        }
    }

    /// A download is due (the first, a retry, or a refresh): the state becomes `downloading`.
    public mutating func tick(at now: Double) -> Action {
        switch state {
        case .absent:
            state = .downloading(since: now, copy: nil)
        case .ready(let c, let at) where now >= at:
            state = .downloading(since: now, copy: c)
        case .stale(let c, let at, _, _) where now >= at:
            state = .downloading(since: now, copy: c)
        case .failed(let at, _, _) where now >= at:
            state = .downloading(since: now, copy: nil)
        default:
            return .none
        }
        return .download
    }

    /// A ready copy is checked at the next tick rather than a `refresh` later (a copy waiting for
    /// a retry keeps its backoff).
    public mutating func checkSoon() {
        if case .ready(let c, _) = state { state = .ready(c, checkAt: -.infinity) }
    }

    /// The body arrived whole (as long as the server said): it is checked next.
    public mutating func downloaded(at now: Double) {
        guard case .downloading(_, let c) = state else { return }
        state = .verifying(since: now, copy: c)
    }

    /// The download verified: `changed` when it differs from the copy (it was swapped in);
    /// returns the copy that plays from now on.
    @discardableResult
    public mutating func verified(at now: Double, changed: Bool) -> Copy {
        let old = copy
        let next = Copy(version: (old?.version ?? 0) + (changed || old == nil ? 1 : 0), confirmed: now)
        state = .ready(next, checkAt: now + policy.refresh)
        previousFailures = 0
        return next
    }

    /// The server said the copy is current (304, a conditional request): no body came, nothing
    /// to check; it is confirmed now and checked again a `refresh` later.
    public mutating func notModified(at now: Double) {
        guard case .downloading(_, .some) = state else { return }
        verified(at: now, changed: false)
    }

    /// The download or its check failed: the copy (if any) plays on, stale; tried again later.
    public mutating func failed(at now: Double, reason: String) {
        let failures: Int
        switch state {
        case .stale(_, _, let f, _), .failed(_, let f, _): failures = f + 1
        default: failures = previousFailures + 1
        }
        previousFailures = failures
        let retryAt = now + delay(afterFailures: failures)
        if let c = copy {
            state = .stale(c, retryAt: retryAt, failures: failures, reason: reason)
        } else {
            state = .failed(retryAt: retryAt, failures: failures, reason: reason)
        }
    }

    /// The copy was deleted to make room: downloaded again no sooner than `refresh` seconds on,
    /// so a playlist larger than the cache costs one download per file per refresh, not a loop.
    public mutating func evicted(at now: Double, reason: String) {
        previousFailures += 1
        state = .failed(retryAt: now + policy.refresh, failures: previousFailures, reason: reason)
    }

    /// Failures in a row, kept across the download that follows a `stale` or `failed`.
    public private(set) var previousFailures = 0

    /// The wait after `failures` failures in a row (1 and up): doubling up to `maximumDelay`, and
    /// never past `refresh` (a server that is away is asked no less often than one that answers,
    /// so a copy comes back within a refresh of its server's return).
    public func delay(afterFailures failures: Int) -> Double {
        let cap = max(policy.initialDelay, min(policy.maximumDelay, policy.refresh))
        var d = policy.initialDelay
        for _ in 1..<max(1, min(failures, 64)) where d < cap { d *= 2 }
        return min(d, cap)
    }

    /// Health's words for this file: nil while it is fresh (or its first download is under way
    /// with none failed).
    public func degradation(source: String, now: Double) -> String? {
        let failing = previousFailures > 0
        switch state {
        case .stale(let c, _, let failures, let reason):
            return "\(source): not refreshed for \(LiveSourceHealth.seconds(now - c.confirmed)) s (\(reason); \(failures) failed); its cached copy plays"
        case .failed(_, let failures, let reason):
            return "\(source): not cached (\(reason); \(failures) failed); passed over until it is"
        case .downloading(_, let c?), .verifying(_, let c?):
            return failing ? "\(source): not refreshed for \(LiveSourceHealth.seconds(now - c.confirmed)) s; its cached copy plays" : nil
        default:
            return nil
        }
    }
}
