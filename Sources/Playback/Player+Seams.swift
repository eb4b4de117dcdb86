import Foundation

/// Seams and idleness: an item's end that the app may seek back from (the guide's loop:
/// `seek(to: .zero)` in the did-play-to-end handler), the item's start kept decoded for it, and
/// the wait of a presentation loop while nothing it shows can change.
///
/// Near the end of an item that does not leave the queue at its end (`.pause`, `.none`), a second
/// decode thread decodes the item's first frames (the item's `preroll`, as a queue's next item
/// has). At the end the end's vsync waits a little for the end's handlers (only when something listens: the player's or the item's events,
/// or a time observer): a seek to zero made there takes the primed frames and shows frame 0 on
/// that very vsync, where the next frame was due, so the loop has no extra vsync of the last frame.
/// The primed start stops when no seek came (`primerLinger` after the end): an item that can no
/// longer play keeps no decoder.
extension Player {
    /// At most this long (real time) an end's vsync waits for a handler to seek back; on a real
    /// clock the presentation loop's deadline for that vsync comes first.
    static let seamWaitLimit = 1.0

    /// The item's start is decoded again from this many seconds before its end.
    static let primeLead = 2.0

    /// The primed start stops this long after the end when no seek took it.
    static let primerLinger = 2.0

    /// An API call changed what the player shows (rate, seek, item): a waiting loop wakes.
    func wakeLocked() {
        wakeCount &+= 1
        lock.broadcast()
    }

    /// Whether the current item may be sought back at its end: it stays current there (with
    /// `.advance` it leaves the queue at its end, and the next item is prerolled instead).
    var mayLoopLocked: Bool { _actionAtItemEnd != .advance }

    /// Frames of the item's start the primer decodes (it does not park: the item keeps playing).
    static let primerAhead = 2

    /// Near the end of the current run, starts decoding the item's start (`primerAhead` frames,
    /// never parked: they must be ready at the end), kept as the item's `preroll` for a seek back
    /// to zero.
    func primeStartLocked() {
        guard mayLoopLocked, _rate != 0, let run, !run.ended, run.shownFrames > 0, run.item === queue.first,
              run.item.preroll == nil, run.item.status != .failed, !run.feeder.hasFailed,
              let now = itemTimeLocked() else { return }
        let item = run.item
        let fpet = item.forwardPlaybackEndTime
        let end = fpet.isNumeric ? fpet : item.duration
        guard end.isNumeric, (end - now).seconds <= Self.primeLead else { return }
        // Room for the probe's `ready` event as well as the frames: all of them wait decoded.
        item.preroll = makeFeeder(item, start: .zero, toleranceBefore: .zero, capacity: min(decodeAhead, Self.primerAhead) + 1)
        primerExpiry = nil
    }

    /// The current item's primed start, for a seek to `target` (zero only); nil when there is none.
    func takePrimerLocked(_ item: PlayerItem, target: MediaTime) -> ItemFeeder? {
        guard target == .zero, item === queue.first, let primer = item.preroll, primer.start == .zero,
              !primer.isStopped else { return nil }
        item.preroll = nil
        primerExpiry = nil
        primer.setAhead(decodeAhead)
        return primer
    }

    /// Stops the current item's primed start once it has lingered past the end unused.
    func expirePrimerLocked() {
        guard let expiry = primerExpiry, ContinuousClock.now >= expiry else { return }
        primerExpiry = nil
        guard let item = queue.first, let run, run.ended, run.item === item else { return }
        item.preroll?.stop()
        item.preroll = nil
    }

    /// The current run ended at vsync `n` and the item stays (`.pause`, `.none`): when anything
    /// listens for the end, vsync `n` waits for a seek back (`seamWaitLimit`).
    func openSeamLocked(_ n: Int64, item: PlayerItem) {
        primerExpiry = ContinuousClock.now + .milliseconds(Int64(Self.primerLinger * 1000))
        guard eventBroadcast.subscriberCount > 0 || item.hasEventSubscribers || !observers.isEmpty else { return }
        pullState.openSeam(n, now: .now, wake: wakeCount)
    }

    /// At an open seam: whether its vsync would have something to show now, a new run (a seek,
    /// another item) that plays.
    var seamPlaysLocked: Bool {
        let acted = run.map { !$0.ended } ?? (queue.first != nil)
        return acted && (_rate != 0 || hostStartTime != nil)
    }

    /// What `waitForDecodedFrame` waits for at a seam: the next API call (`wakeCount` past
    /// `seen`), at most until the seam's time is up (`left` seconds).
    func seamWaitLocked() -> (seen: UInt64, left: Double)? {
        guard let s = pullState.waitingSeam else { return nil }
        return (s.seen, Self.seamWaitLimit - (ContinuousClock.now - s.opened).seconds)
    }

    /// Waits up to `timeout` seconds for an API call after `seen`; true when one came.
    func waitForWake(after seen: UInt64, timeout: Double) -> Bool {
        lock.wait(until: { _ in self.wakeCount != seen }, timeout: timeout)
    }

    /// True while nothing the player shows can change until an API call: paused (or with nothing
    /// to play) with its picture shown, no seam open, no retry or timed start pending.
    var isSettledLocked: Bool {
        guard pullState.isSettled, hostStartTime == nil, hostStartVsync == nil else { return false }
        guard let run else { return queue.isEmpty && shown == nil }
        guard _rate == 0 else { return false }
        if run.shownFrames > 0 || run.ended { return true }
        if case .end? = pending { return true }
        return false
    }

    /// Marquee: waits up to `timeout` seconds while the player is settled (paused with its picture
    /// shown, or with nothing to play): what a presentation loop on a virtual clock does instead of
    /// asking for vsync after vsync. True when something changed (or it was not settled).
    func waitWhileSettled(timeout: Double) -> Bool {
        let seen = withLock { wakeCount }
        return lock.wait(until: { _ in !self.isSettledLocked || self.wakeCount != seen }, timeout: timeout)
    }

    /// Marquee: a presentation loop waiting while this player is settled looks again at once:
    /// something outside the player changed what it should do (a view was given another player).
    public func wakePresentation() {
        withLock { wakeLocked() }
    }

    /// Marquee: how many decode threads of this player's items are still running (an item that
    /// can no longer play keeps none).
    public var decodeThreadCount: Int { decodeThreads.value }

    /// Marquee: waits up to `timeout` seconds for this player's decode threads to fall to `limit`
    /// or fewer; returns how many run.
    public func waitForDecodeThreads(atMost limit: Int, timeout: Double) -> Int {
        decodeThreads.waitForAtMost(limit, timeout: timeout)
    }
}
