/// Whether the audio writer's sound is in place on the picture's timeline, and what checks it
/// still owes: the writer's state machine (`PlayerAudioOutput`).
///
///     unplaced --didPlace--> settling --past `until`--> placed
///     settling --a measure off by more than `tolerance`--> unplaced (one try fewer)
///     settling, placed --lose (an underrun, a timeline shift, a realignment)--> unplaced
///
/// ALSA's delay reads 0 until the device starts and can read short just after, so the first
/// `settleTime` seconds after a placement are checked; afterwards the clock sync alone follows.
struct AudioPlacement: Equatable {
    enum Phase: Equatable {
        /// The next block is put in place to the sample. `triesLeft`: kept from the settle check
        /// that asked for it (nil: a fresh placement, which gets every try).
        case unplaced(triesLeft: Int?)
        /// In place; measures until timeline time `until` (set at the first measure the device
        /// plays for) are checked, and it may be put in place again `triesLeft` more times.
        case settling(until: Double?, triesLeft: Int)
        /// In place, settled: the clock sync follows it.
        case placed
    }

    /// What a measure while in place asks for.
    enum Check: Equatable {
        case keep
        /// Put the sound in place again (within the stream: the device keeps playing).
        case placeAgain
    }

    private(set) var phase = Phase.unplaced(triesLeft: nil)
    let tolerance: Double
    let settleTime: Double
    let tries: Int

    init(tolerance: Double, settleTime: Double, tries: Int) {
        self.tolerance = tolerance
        self.settleTime = settleTime
        self.tries = tries
    }

    var isPlaced: Bool {
        if case .unplaced = phase { return false }
        return true
    }

    /// The block was put in place.
    mutating func didPlace() {
        guard case .unplaced(let kept) = phase else { return }
        let left = kept ?? tries
        phase = left > 0 ? .settling(until: nil, triesLeft: left) : .placed
    }

    /// The sound is out of place; true when it was in place (a realignment to count).
    @discardableResult
    mutating func lose() -> Bool {
        guard isPlaced else { return false }
        phase = .unplaced(triesLeft: nil)
        return true
    }

    /// Everything in flight was forgotten: the next placement is a fresh one.
    mutating func reset() { phase = .unplaced(triesLeft: nil) }

    /// A measure while in place: at timeline time `now` the sound is heard `error` seconds late
    /// (early when negative); `delay` is the device's (0: not started, nothing to judge by).
    mutating func check(now: Double, error: Double, delay: Double) -> Check {
        guard case .settling(let start, let left) = phase, delay > 0 else { return .keep }
        let until = start ?? now + settleTime
        if now > until {
            phase = .placed
            return .keep
        }
        if abs(error) > tolerance {
            phase = .unplaced(triesLeft: left - 1)
            return .placeAgain
        }
        phase = .settling(until: until, triesLeft: left)
        return .keep
    }
}
