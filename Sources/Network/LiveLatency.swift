/// How far behind its live edge a live source's picture runs, and the catch-up that bounds it.
/// The lag of a frame is how long it waits, from the moment it leaves the decoder, before it is
/// shown: its place on the item's timeline less where the item's clock is then. Pure: the caller
/// reads frames and gives the times (seconds; virtual in tests).
///
/// Over the bound, frames are dropped and the frames after them take their places on the
/// timeline (`pullIn` grows by each dropped frame's length), so each drop shows the picture one
/// frame nearer the edge while the timeline goes on without a gap or a step back. A backlog
/// (a reopen's burst) then drains as fast as it decodes, until a read waits for new data again.
public struct LiveLatency: Sendable, Equatable {
    /// The largest lag kept (seconds).
    public let bound: Double
    /// The lag of the last frame kept while the item's clock ran; nil before.
    public private(set) var lag: Double?
    /// Frames dropped to catch up, all told.
    public private(set) var dropped = 0
    /// How much earlier than the decoder placed them the next frames go (seconds).
    public private(set) var pullIn = 0.0

    public init(bound: Double) { self.bound = bound }

    public enum Decision: Sendable, Equatable {
        /// Hand the frame out at `place` (its time less `pullIn`).
        case keep(place: Double)
        /// Drop it: it would be shown more than `bound` after it came.
        case drop
    }

    /// A frame came out of the decoder at `time` on the item's timeline, `duration` long, while
    /// the item's clock stood at `clock` (nil: the item does not play yet, so nothing is dropped).
    public mutating func frame(at time: Double, duration: Double, clock: Double?) -> Decision {
        let place = time - pullIn
        guard let clock else {
            keptUntil = place + duration
            return .keep(place: place)
        }
        let wait = max(0, place - clock)
        if wait > bound, duration > 0, duration.isFinite {
            dropped += 1
            if let until = keptUntil, until > clock {
                pullIn += duration
            } else {
                // Nothing kept waits to be shown (a reopen after the screen ran dry, a timeline
                // held by a stall): the timeline jumps so that the next frame is due two frames
                // (at most the bound) from now, instead of the screen waiting for this one.
                pullIn += place - clock + duration - min(2 * duration, bound)
            }
            return .drop
        }
        lag = wait
        keptUntil = place + duration
        return .keep(place: place)
    }

    /// Where the last frame kept ends on the timeline; nil before one.
    public private(set) var keptUntil: Double?
}
