/// Where the vsync pull's timeline stands with the frames it waits for: the pull's state machine
/// (`Player.pullLocked`). Pure values: the player looks at its frame queue and applies what this
/// decides (anchors, stats, notifications).
///
///     playing --no frame, the picture on screen has had its time--> starving
///     starving --`stallTimeout` in vsyncs or in time waited--> stalled
///     starving --a frame decoded--> playing
///     stalled --a frame shown--> playing
///     any --playback starts without a host time--> holdingStart(over: it)
///     holdingStart --a frame decoded for its vsync--> what it held over
///     holdingStart --a host time to start at instead--> what it held over
///
/// A hold keeps what it interrupted (a stall before a pause stays one, and a start at a host time
/// given while held goes on from there); it is never nested.
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
    }

    /// A stall that began: where the timeline holds, and after how long without a frame.
    struct Stall: Equatable {
        let at: MediaTime
        let seconds: Double
    }

    private(set) var phase: Phase

    init(phase: Phase = .playing) { self.phase = phase }

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
    /// (asked only while the start is held: a decoded one ends the hold on this vsync).
    mutating func anchoring(frameReady: () -> Bool) -> Anchoring {
        switch phase {
        case .holdingStart(let over):
            if frameReady() { phase = over }
            return .startsHere
        case .stalled(let at):
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
    /// vsyncs; a stall stays until a frame is shown.
    mutating func detach() {
        switch phase {
        case .stalled(let at), .holdingStart(over: .stalled(let at)): phase = .stalled(at: at)
        default: phase = .playing
        }
    }
}
