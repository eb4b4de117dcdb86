/// How far behind its live edge a live source's picture runs, and the catch-up that bounds it.
/// The lag of a frame is its age when it leaves the decoder (how long since its data came, an
/// estimate: `opened`) plus how long it then waits to be shown (its place on the item's timeline
/// less where the item's clock is). Pure: the caller reads frames and gives the times (seconds;
/// virtual in tests).
///
/// Over the bound (its wait alone, or its age too where a newer frame follows at once: dropping
/// one that came at its pace would only hold the picture), frames are dropped and the frames
/// after them take their places on the timeline (`pullIn` grows by each dropped frame's length),
/// so each drop shows the picture one frame nearer the edge while the timeline goes on without a
/// gap or a step back. A backlog (a reopen's burst) then drains as fast as it decodes, until a
/// read waits for new data again.
///
/// Age: an open reads packets to learn the stream before any frame is decoded (FFmpeg's stream
/// probe, most of a second), and those frames are then the first played. The open says when its
/// packets began to come (`opened`): the stream's first timestamp is taken to have come then, and
/// a frame `t` later on the timeline `t` later, unless it left the decoder sooner than that (a
/// burst: an HLS window, a jump forward, a source clock running fast), which moves the estimate
/// to make it just come. The estimate may move later by `drift` of the time passed (a source
/// clock running slow), and starts again where the timeline steps back.
/// After an open, its backlog is dropped (decoded, not shown) while frames come out of the
/// decoder one right after the other (no read waits for data) and are older than
/// `catchUpTarget`: the first picture is a fresh one, without waiting for a key frame.
public struct LiveLatency: Sendable, Equatable {
    /// The largest lag kept (seconds).
    public let bound: Double
    /// The lag of the last frame kept while the item's clock ran; nil before.
    public private(set) var lag: Double?
    /// Frames dropped to catch up, all told.
    public private(set) var dropped = 0
    /// How much earlier than the decoder placed them the next frames go (seconds).
    public private(set) var pullIn = 0.0
    /// Where the last frame kept ends on the timeline; nil before one.
    public private(set) var keptUntil: Double?
    /// The age of the last frame given with its decoder-out time (seconds).
    public private(set) var age: Double?

    /// The arrival estimate: the timeline's zero (before `pullIn`) came at this monotonic time.
    private var anchor: Double?
    /// The last frame given with its decoder-out time: its time and when.
    private var lastTime: Double?
    private var lastNow = 0.0
    /// Dropping an open's backlog (`opened`), until the first frame kept.
    private var catchingUp = false
    /// When the last frame given with its decoder-out time left the decoder.
    private var lastOut: Double?

    /// How much later per second the arrival estimate may move (a source clock 0.02 % slow); a
    /// constant delay before the decoder is forgotten as fast.
    public static let drift = 0.0002
    /// An open's backlog is dropped down to this age (seconds); unbounded: kept. What is left
    /// of it is the decode-ahead queue's margin against a late frame (none: frames come just in
    /// time, and a slow one is shown late).
    public var catchUpTarget: Double { bound.isFinite ? min(bound / 4, 0.25) : .infinity }

    public init(bound: Double) { self.bound = bound }

    public enum Decision: Sendable, Equatable {
        /// Hand the frame out at `place` (its time less `pullIn`).
        case keep(place: Double)
        /// Drop it: it would be shown more than `bound` after it came.
        case drop
    }

    /// The source was opened (again): its packets began to come at monotonic `now`, the first at
    /// `time` on the timeline (before `pullIn`: where the decoder puts the stream's start).
    public mutating func opened(at now: Double, firstAt time: Double) {
        anchor = now - time
        lastTime = nil
        lastOut = nil
        catchingUp = true
    }

    /// A frame came out of the decoder at `time` on the item's timeline (before `pullIn`),
    /// `duration` long, while the item's clock stood at `clock` (nil: the item does not play yet,
    /// so only an open's backlog is dropped), at monotonic `now` (nil: not known; its age is 0).
    public mutating func frame(at time: Double, duration: Double, clock: Double?, now: Double? = nil) -> Decision {
        let place = time - pullIn
        let age = now.map { estimateAge(time: time, now: $0) } ?? 0
        self.age = age
        let wait = clock.map { max(0, place - $0) } ?? 0
        let framed = duration > 0 && duration.isFinite
        // Out right after the frame before (no read waited for data): a newer one follows at once,
        // so dropping this one for its age brings the picture nearer the edge. Otherwise dropping
        // would only leave the screen waiting: a source whose frames come this old (the decoder's
        // own delay, the network's) is shown as it comes, its lag over the bound.
        let draining = now.map { now in lastOut.map { now - $0 < duration / 2 } ?? catchingUp } ?? false
        lastOut = now
        if catchingUp {
            if framed, draining, age + wait > catchUpTarget {
                drop(place: place, duration: duration, clock: clock)
                return .drop
            }
            catchingUp = false
        }
        guard let clock else {
            keptUntil = place + duration
            return .keep(place: place)
        }
        if framed, wait > bound || (draining && age + wait > bound) {
            drop(place: place, duration: duration, clock: clock)
            return .drop
        }
        lag = age + wait
        keptUntil = place + duration
        return .keep(place: place)
    }

    private mutating func drop(place: Double, duration: Double, clock: Double?) {
        dropped += 1
        guard let clock, keptUntil.map({ $0 <= clock }) ?? true else {
            pullIn += duration
            return
        }
        // Nothing kept waits to be shown (a reopen after the screen ran dry, a timeline held by a
        // stall): the timeline jumps so that the next frame is due two frames (at most the bound)
        // from now, instead of the screen waiting for this one.
        pullIn += place - clock + duration - min(2 * duration, bound)
    }

    /// How long before `now` the frame at `time` came (never less than 0).
    private mutating func estimateAge(time: Double, now: Double) -> Double {
        defer { (lastTime, lastNow) = (time, now) }
        guard var anchor else {
            self.anchor = now - time
            return 0
        }
        if let lastTime {
            if time < lastTime - 1e-9 {
                // The timeline stepped back: nothing known about this frame's arrival.
                self.anchor = now - time
                return 0
            }
            anchor += max(0, now - lastNow) * Self.drift
        }
        anchor = min(anchor, now - time)
        self.anchor = anchor
        return now - time - anchor
    }
}
