/// The vsync pull's state machine (`Player.pullLocked`): where the timeline stands with the frames
/// it waits for (`phase`), and which vsync may be asked again (`gate`). Pure values: the player
/// looks at its frame queue and applies what this decides (anchors, stats, notifications).
///
/// The phase:
///
///     playing --no frame, the picture on screen has had its time--> starving
///     starving --`stallTimeout` in vsyncs or in time waited--> stalled
///     starving --a frame decoded--> playing
///     stalled --a frame decoded later than where it holds--> stalled there
///     stalled --a frame shown--> playing
///     starving, stalled --the run awaited is gone (a seek, a new run, its end)--> playing
///     any --playback starts without a host time--> holdingStart(over: it)
///     holdingStart --a frame decoded for its vsync--> what it held over
///     holdingStart --a host time to start at instead--> what it held over
///
/// A hold keeps what it interrupted (a stall before a pause stays one, and a start at a host time
/// given while held goes on from there); it is never nested.
///
/// The gate, which vsyncs only go forward through:
///
///     answered --no frame decoded for the vsync yet--> waiting(vsync)
///     waiting(v) --v asked again, or a later vsync--> answered
///     answered --an item's end that handlers may seek back from--> seam(waiting)
///     seam(waiting) --a new picture on its vsync--> seam(not waiting)
///     seam(waiting) --its vsync asked again, the wait not over and nothing to play--> seam(waiting)
///     seam --another vsync, or its vsync once played or over--> answered
///     answered --nothing in the queue playable--> retry(at) --vsync `at` asked--> answered
struct PullState: Equatable {
    indirect enum Phase: Equatable {
        /// Frames come as they are due (or none is due yet): the timeline runs on its anchor.
        case playing
        /// The picture on screen has had its time and nothing is decoded: since vsync `since`,
        /// with `waited` seconds of waits for decoding counted.
        case starving(since: Int64, waited: Double)
        /// Nothing decoded for `stallTimeout`: the timeline holds at `at` (where the missing frame
        /// belongs) until a frame is shown.
        case stalled(at: MediaTime)
        /// Playback (re)started: the timeline starts on the vsync its first frame is decoded for
        /// (initial loading is not a stall).
        case holdingStart(over: Phase)
    }

    /// How the pull anchors the timeline on the vsync it is asked for, before it takes frames.
    enum Anchoring: Equatable {
        /// The anchor stays.
        case runs
        /// The anchor moves to this vsync, at its position: a frame shown now starts the timeline.
        case startsHere
        /// The anchor moves to this vsync at `at`: a stall holds the timeline.
        case holds(at: MediaTime)
        /// As `holds`, at the first frame decoded after a gap, later than where the stall held:
        /// the timeline jumps there.
        case movesOn(to: MediaTime)
    }

    /// A stall that began: where the timeline holds, and after how long without a frame.
    struct Stall: Equatable {
        let at: MediaTime
        let seconds: Double
    }

    /// An item's end whose vsync waits for the end's handlers to seek back.
    struct Seam: Equatable {
        /// The vsync the end was due on: the one a seek back shows its first frame on.
        let vsync: Int64
        let opened: ContinuousClock.Instant
        /// `Player.wakeCount` when the picture last said it waits.
        var seen: UInt64
    }

    enum Gate: Equatable {
        /// The last vsync asked is answered: it is not asked again.
        case answered
        /// The picture for `vsync` waits for a frame being decoded: it may be asked again.
        case waiting(vsync: Int64)
        /// An item's end is open (until another vsync is asked); `waiting`: the picture for its
        /// vsync waits for the end's handlers, and may be asked again.
        case seam(Seam, waiting: Bool)
        /// Nothing in the queue could be played: vsyncs before `at` show the background as it is.
        case retry(at: Int64)
    }

    /// What the pull does with a vsync asked for, before it looks at frames.
    enum Admission: Equatable {
        /// Asked already (or earlier than the last): the picture stays as it is.
        case asked
        /// The seam's vsync still waits for the end's handlers: the picture stays, and waits.
        case seamWaits
        case pull
    }

    private(set) var phase: Phase
    private(set) var gate: Gate

    init(phase: Phase = .playing, gate: Gate = .answered) {
        self.phase = phase
        self.gate = gate
    }

    /// True while stalled (held over a stall too: it ends only with a frame shown).
    var isStalled: Bool {
        switch phase {
        case .stalled, .holdingStart(over: .stalled): true
        default: false
        }
    }

    var isHoldingStart: Bool {
        if case .holdingStart = phase { return true }
        return false
    }

    /// Playback starts on the timeline (it had no anchor): `holds` when no host time says where,
    /// so the first frame decides; with one, a hold under way is given up.
    mutating func start(holds: Bool) {
        if holds {
            if !isHoldingStart { phase = .holdingStart(over: phase) }
        } else if case .holdingStart(let over) = phase {
            phase = over
        }
    }

    /// The anchoring on a vsync asked for; `frameReady` looks whether a frame or an end is decoded
    /// (asked only while the start is held: a decoded one ends the hold on this vsync);
    /// `nextFrameAt` where the next decoded frame starts on the timeline, if one is decoded (asked
    /// only while stalled).
    mutating func anchoring(frameReady: () -> Bool, nextFrameAt: () -> MediaTime? = { nil }) -> Anchoring {
        switch phase {
        case .holdingStart(let over):
            if frameReady() { phase = over }
            return .startsHere
        case .stalled(let at):
            // Frames after a gap in their times (a live source reopened, frames the decoder
            // skipped) start later than the missing frame's place: held there, the first of them
            // would never be due and the stall never end. The timeline moves on to it.
            if let next = nextFrameAt(), next > at {
                phase = .stalled(at: next)
                return .movesOn(to: next)
            }
            return .holds(at: at)
        case .playing, .starving:
            return .runs
        }
    }

    /// Something was decoded: frames come again (a stall ends only once one is shown).
    mutating func decoded() {
        switch phase {
        case .starving: phase = .playing
        case .holdingStart(over: .starving): phase = .holdingStart(over: .playing)
        default: break
        }
    }

    /// No frame for vsync `n` although the picture on screen has had its time (never asked while
    /// the start is held). Past `timeout`, counted in vsyncs at `hertz` or in `waited` seconds
    /// summed, it stalls at `stallPosition(since)`; returns the stall when it begins now.
    mutating func starve(vsync n: Int64, waited: Double, hertz: Double?, timeout: Double,
                         stallPosition: (_ since: Int64) -> MediaTime) -> Stall? {
        let since: Int64, total: Double
        switch phase {
        case .playing: (since, total) = (n, waited)
        case .starving(let s, let w): (since, total) = (s, w + waited)
        case .stalled, .holdingStart: return nil
        }
        phase = .starving(since: since, waited: total)
        guard let hertz else { return nil }
        let seconds = max(Double(n - since + 1) / hertz, total)
        guard seconds >= timeout else { return nil }
        let stall = Stall(at: stallPosition(since), seconds: seconds)
        phase = .stalled(at: stall.at)
        return stall
    }

    /// A frame was shown: the hold and any stall are over. True when it ends a stall.
    @discardableResult
    mutating func shown() -> Bool {
        let ended = isStalled
        phase = .playing
        return ended
    }

    /// Frames come again, or the run they were awaited for is gone (a seek, a new run, its end):
    /// no starving or stall is left. A hold stays (the timeline still starts with a frame).
    mutating func endStall() {
        phase = isHoldingStart ? .holdingStart(over: .playing) : .playing
    }

    /// The output let the player go: no hold, and starving counts again from the next output's
    /// vsyncs; a stall stays until a frame is shown. No vsync of the old output is asked again,
    /// and no retry waits for one (an open seam stays until the next vsync asked).
    mutating func detach() {
        switch phase {
        case .stalled(let at), .holdingStart(over: .stalled(let at)): phase = .stalled(at: at)
        default: phase = .playing
        }
        switch gate {
        case .seam(let seam, _): gate = .seam(seam, waiting: false)
        case .answered, .waiting, .retry: gate = .answered
        }
    }

    // MARK: The gate

    /// The open seam, if any (its vsync is the last asked, or the output changed since).
    var seam: Seam? {
        if case .seam(let seam, _) = gate { return seam }
        return nil
    }

    /// True when the picture for vsync `n` waits (for decoding, or for the end's handlers).
    func isWaiting(_ n: Int64) -> Bool {
        switch gate {
        case .waiting(let vsync): vsync == n
        case .seam(let seam, let waiting): waiting && seam.vsync == n
        case .answered, .retry: false
        }
    }

    /// The seam whose picture waits for the end's handlers (what a wait for decoding waits for).
    var waitingSeam: Seam? {
        if case .seam(let seam, true) = gate { return seam }
        return nil
    }

    /// Nothing changes by itself: no seam open, no retry pending.
    var isSettled: Bool {
        switch gate {
        case .answered, .waiting: true
        case .seam, .retry: false
        }
    }

    /// Vsync `n` is asked (`last`: the last one asked; nil before the first). A vsync is answered
    /// once, or again while its picture waits. At an open seam, `n` its vsync: it waits while
    /// `now` is within `limit` seconds of the end and nothing plays yet (`plays`: a new run, a
    /// seek or another item, at a rate or a host time); `wake` is noted for the wait.
    mutating func admit(_ n: Int64, last: Int64?, now: ContinuousClock.Instant, limit: Double,
                        plays: Bool, wake: UInt64) -> Admission {
        if let last, n < last || (n == last && !isWaiting(n)) { return .asked }
        switch gate {
        case .waiting: gate = .answered
        case .seam(var seam, _):
            guard seam.vsync == n, (now - seam.opened).seconds < limit, !plays else {
                gate = .answered
                return .pull
            }
            seam.seen = wake
            gate = .seam(seam, waiting: true)
            return .seamWaits
        case .answered, .retry: break
        }
        return .pull
    }

    /// True while vsync `n` comes before a pending retry (it shows the background as it is); the
    /// retry's vsync ends it.
    mutating func retryWaits(_ n: Int64) -> Bool {
        guard case .retry(let at) = gate else { return false }
        if n < at { return true }
        gate = .answered
        return false
    }

    /// The picture for vsync `n` waits for a frame being decoded.
    mutating func wait(_ n: Int64) {
        if case .seam(let seam, _) = gate, seam.vsync == n {
            gate = .seam(seam, waiting: true)
        } else {
            gate = .waiting(vsync: n)
        }
    }

    /// The pull of vsync `n` has a new picture: a seam opened with it does not wait.
    mutating func showsNew(_ n: Int64) {
        if case .seam(let seam, true) = gate, seam.vsync == n { gate = .seam(seam, waiting: false) }
    }

    /// An item ended on vsync `n` and stays: its vsync waits for the end's handlers.
    mutating func openSeam(_ n: Int64, now: ContinuousClock.Instant, wake: UInt64) {
        gate = .seam(Seam(vsync: n, opened: now, seen: wake), waiting: true)
    }

    /// Nothing in the queue could be played: the next try is on vsync `at`.
    mutating func retry(at vsync: Int64) { gate = .retry(at: vsync) }
}
