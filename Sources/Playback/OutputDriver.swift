/// What an output reports while the presentation loop waits on it.
public enum OutputEvent: Sendable, Equatable {
    /// The picture queued last is on screen since vsync `vsync` of the output's clock.
    case flipped(vsync: Int64)
    /// The display went away (disconnected, its mode gone, a flip that never came, a failing
    /// commit): the picture queued last was not shown, and the output waits for a display again
    /// (`isReady` is false until one is there).
    case lost(reason: String)
    /// Nothing happened within the time asked for.
    case timedOut
}

/// An output as the presentation loop drives it (mpv's `vo_driver`, kmscube's `drm->run`): draw a
/// picture into the next buffer, queue it for a vsync, wait for events until a deadline. A driver
/// neither sleeps to pace pictures nor plans when to draw: the loop (`PlayerPresenter`) does both,
/// and only ever waits in `waitForEvent`.
///
/// Headless (virtual and real clock) and KMS (atomic and legacy) outputs implement it; tests use
/// scripted drivers on virtual time.
public protocol OutputDriver: AnyObject {
    associatedtype Frame
    var name: String { get }
    /// The output's vsyncs: read by the loop (which vsync comes next, how far away it is), never
    /// waited on.
    var clock: any VsyncClock { get }
    /// Whether there is a display to draw on now (false while a display output waits for one;
    /// `waitForEvent` then waits for it).
    var isReady: Bool { get }
    /// Draws one frame per region (one for an output without mosaic regions; nil: that region
    /// shows only the background) into the buffer shown next.
    func draw(_ frames: [Frame?]) throws
    /// As `draw(_:)`, during a transition: `mixes` has one entry per frame (nil: that frame
    /// alone). Outputs that cannot mix draw the frames alone (the default).
    func draw(_ frames: [Frame?], mixes: [FrameMix<Frame>?]) throws
    /// The render time of the last `draw` in nanoseconds, where the output measures it (the loop
    /// plans with it); nil otherwise.
    var lastRenderTime: Int64? { get }
    /// Queues the drawn buffer for vsync `vsync` (the output shows it there, or on the first vsync
    /// it can still make); returns at once: `waitForEvent` says when it is on screen.
    func queue(forVsync vsync: Int64) throws
    /// Waits at most `timeout` seconds for the next event (`.timedOut` when none came). The only
    /// place the loop waits, apart from a frame being decoded.
    func waitForEvent(timeout: Double) throws -> OutputEvent
    /// Counts a picture the loop planned `vsyncs` later than the clock allowed because its render
    /// time said the earlier vsync could not be made (rescheduled, not late).
    func noteRescheduled(by vsyncs: Int64)
}

extension OutputDriver {
    public var isReady: Bool { true }
    public var lastRenderTime: Int64? { nil }
    public func draw(_ frames: [Frame?], mixes: [FrameMix<Frame>?]) throws { try draw(frames) }
    public func noteRescheduled(by vsyncs: Int64) {}
}

/// The name callers knew: an output the presenter drives.
public typealias PresentationOutput = OutputDriver

/// When to draw a picture so that it makes its vsync, from the measured render times (pure: the
/// loop asks it and waits itself). Plans with the longest of the last `window` render times: the
/// first vsync from the earliest the clock allows whose commit deadline (`margin` of an interval
/// before it) rendering started now still meets, and the moment to start rendering: the estimate
/// before the flip's queue time (`commitPhase` into the interval before the planned vsync).
public struct FramePlanner: Sendable {
    /// How many render times the estimate looks back on.
    public var window = 16
    /// Time kept free between the end of rendering and the vsync, in intervals.
    public var margin = 0.1
    /// Where in the interval before the planned vsync the flip is queued (0: right after the vsync
    /// before it).
    public var commitPhase = 0.25
    /// Recent render times, nanoseconds, oldest first.
    public private(set) var renderTimes: [Int64] = []

    public init() {}

    public mutating func record(renderNanoseconds: Int64) {
        guard renderNanoseconds >= 0 else { return }
        renderTimes.append(renderNanoseconds)
        if renderTimes.count > window { renderTimes.removeFirst(renderTimes.count - window) }
    }

    /// Forgets the render times (a new display).
    public mutating func reset() { renderTimes = [] }

    /// The render time to plan with: the longest of the recent ones (nil before the first).
    public var estimate: Int64? { renderTimes.max() }

    public struct Plan: Sendable, Equatable {
        /// The vsync to draw for.
        public var vsync: Int64
        /// Nanoseconds from now until rendering should start (zero or less: at once).
        public var startIn: Int64
        public init(vsync: Int64, startIn: Int64) {
            self.vsync = vsync
            self.startIn = startIn
        }
    }

    /// Plans the picture for `earliest` (the first vsync the clock allows), given `nanosUntil(v)`,
    /// how far vsync `v` is from now (nil for a clock that does not run in real time). Nil
    /// without a render estimate or a real-time clock: draw for `earliest`, at once.
    public func plan(earliest: Int64, nanosUntil: (Int64) -> Int64?) -> Plan? {
        guard let estimate, let before = nanosUntil(earliest - 1), let first = nanosUntil(earliest) else { return nil }
        let interval = Double(first - before)
        guard interval > 0 else { return nil }
        var target = earliest
        var until = first
        while Double(until) - interval * margin < Double(estimate) && target - earliest < 1000 {
            target += 1
            until = nanosUntil(target) ?? until + Int64(interval)
        }
        let previous = nanosUntil(target - 1) ?? until - Int64(interval)
        return Plan(vsync: target, startIn: previous + Int64((interval * commitPhase).rounded()) - estimate)
    }
}

extension VsyncClock {
    /// Nanoseconds from now until vsync `n` (negative when past); nil for a virtual clock.
    func nanosUntilVsync(_ n: Int64) -> Int64? {
        timeUntilVsync(n).map { d in
            let (s, atto) = d.components
            return s.multipliedReportingOverflow(by: 1_000_000_000).overflow ? (s > 0 ? .max / 2 : .min / 2)
                : s * 1_000_000_000 + atto / 1_000_000_000
        }
    }
}
