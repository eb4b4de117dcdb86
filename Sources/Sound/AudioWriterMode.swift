/// What the audio writer is doing between blocks: the writer's other state machine, beside
/// `AudioPlacement` (whether its sound is in place).
///
///     following --the player ends with a loop's start primed--> coasting(0)
///     coasting(s) --a block of d seconds written--> coasting(s + d); past `grace`: no more
///     coasting, following --the player plays--> following
///     any --the device fails at t--> failed(until: t + backoff) --time passes `until`--> following
///
/// At an end that waits for its handlers (a seek back to zero may come), the sound already in place
/// plays on for at most `grace` seconds of it, so a late seek still finds the start's sound going on.
struct AudioWriterMode: Equatable {
    enum Phase: Equatable {
        case following
        /// Seconds of sound written since the end was seen.
        case coasting(written: Double)
        /// Seconds (on the caller's clock) until which the device is left alone.
        case failed(until: Double)
    }

    private(set) var phase = Phase.following
    let grace: Double
    let backoff: Double

    init(grace: Double, backoff: Double) {
        self.grace = grace
        self.backoff = backoff
    }

    /// False while a failure's back-off lasts at `now`; once past it the writer follows again.
    mutating func mayWrite(now: Double) -> Bool {
        guard case .failed(let until) = phase else { return true }
        guard now >= until else { return false }
        phase = .following
        return true
    }

    mutating func failed(now: Double) {
        phase = .failed(until: now + backoff)
    }

    /// Follows the player: playing ends any coasting; an end with a loop's start primed starts it
    /// (once per end: an end already coasted stays as it is).
    mutating func observe(playing: Bool, ended: Bool, loopPrimed: Bool) {
        switch phase {
        case .failed:
            return
        case .coasting where playing:
            phase = .following
        case .following where !playing && ended && loopPrimed:
            phase = .coasting(written: 0)
        default:
            return
        }
    }

    /// Whether sound still plays on past the end (the player not playing).
    var isCoasting: Bool {
        if case .coasting(let written) = phase { return written < grace }
        return false
    }

    mutating func wrote(seconds: Double) {
        if case .coasting(let written) = phase { phase = .coasting(written: written + seconds) }
    }
}
