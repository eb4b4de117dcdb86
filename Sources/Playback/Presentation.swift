/// A decoded frame as the presentation scheduler sees it.
public protocol PresentableFrame: Sendable {
    /// Presentation time within its item (the first frame of an item is usually 0).
    var pts: MediaTime { get }
    /// How long the frame lasts; always numeric and positive.
    var duration: MediaTime { get }
}

/// A frame with its place in the playlist.
public struct PlaylistFrame<Frame: PresentableFrame>: Sendable {
    /// Playlist index of the item.
    public let item: Int
    public let uri: String
    /// Counts item starts: every time an item (re)starts, including the same item on a loop, this
    /// grows, so the scheduler can lay the new run end to end with the last one.
    public let run: Int
    public let frame: Frame

    public init(item: Int, uri: String, run: Int, frame: Frame) {
        self.item = item
        self.uri = uri
        self.run = run
        self.frame = frame
    }
}

public enum SourceEvent<Frame: PresentableFrame>: Sendable {
    case frame(PlaylistFrame<Frame>)
    /// No item of the playlist can be played right now (every one failed); the source keeps trying.
    case nothingPlayable
    /// A playlist without loop has played to its end.
    case ended
}

/// Where frames come from (the playlist decoder thread, or a test's script).
public protocol FrameSource: AnyObject {
    associatedtype Frame: PresentableFrame
    /// The next event, or nil when none came within `timeout` seconds.
    func next(timeout: Double) -> SourceEvent<Frame>?
}

/// Where frames go: draws a frame and shows it on a given vsync of its clock.
public protocol PresentationOutput: AnyObject {
    associatedtype Frame
    var name: String { get }
    var clock: any VsyncClock { get }
    /// Draws `frame` (nil: no video, only the background) and shows it on vsync `vsync`, or on the
    /// first vsync after it when drawing was late. Returns the vsync the picture was shown on.
    func present(_ frame: Frame?, atVsync vsync: Int64) throws -> Int64
}

/// Maps the presentation timeline to whole vsyncs. A frame at timeline time `t` is shown from vsync
/// `round(t * refresh)`; because the position is computed from the exact time rather than summed from
/// rounded intervals, the rounding error is carried forward (24 fps at 60 Hz: 3, 2, 3, 2, ...).
public struct CadenceScheduler: Sendable {
    public let refresh: RefreshRate
    public init(refresh: RefreshRate) { self.refresh = refresh }

    /// `round(t * refresh)`, halves rounded up, in exact integer arithmetic.
    public func vsyncOffset(for t: MediaTime) -> Int64 {
        precondition(t.isNumeric, "timeline times are numeric")
        // t * refresh = value * num / (timescale * den); floor((2 * value * num + d) / (2 * d)).
        let n = Int128(t.value) * Int128(refresh.numerator) * 2
        let d = Int128(t.timescale) * Int128(refresh.denominator) * 2
        let x = n + d / 2
        var q = x / d
        if x % d != 0 && x < 0 { q -= 1 }
        return Int64(q)
    }
}

/// Counters of what the presentation loop did; mpv's names in the comments.
public struct PresentationStats: Sendable, Equatable {
    public var presented = 0
    /// Frames never shown because a later frame owned their vsync (`frame-drop-count`).
    public var dropped = 0
    /// Frames shown later than planned (`vo-delayed-frame-count`).
    public var delayed = 0
    public var lastVsync: Int64 = -1
    public init() {}
}

/// The presenter: pulls frames from a source, lays every item's frames end to end on one timeline,
/// gives each frame its vsync, and shows it on the output. Item changes and loops are gapless: the
/// first frame of the next run is due on the vsync right after the last frame of this run has had
/// its time. Runs on the output's thread.
public final class PresentationLoop<Source: FrameSource, Output: PresentationOutput> where Output.Frame == Source.Frame {
    public typealias Frame = Source.Frame

    private let source: Source
    private let output: Output
    private let scheduler: CadenceScheduler
    private let trace: TraceWriter?
    private let logger: Logger
    private let exitAfter: MediaTime?

    public private(set) var stats = PresentationStats()

    // Timeline state.
    private var anchor: Int64?            // vsync of timeline time 0
    private var currentRun: Int?
    private var runStart = MediaTime.zero
    private var runFirstPts = MediaTime.zero
    private var timelineEnd = MediaTime.zero
    private var held: (frame: PlaylistFrame<Frame>, vsync: Int64)?
    private var showingBlank = false
    private var finished = false

    public init(source: Source, output: Output, trace: TraceWriter? = nil, logger: Logger,
                exitAfter: MediaTime? = nil) {
        self.source = source
        self.output = output
        self.scheduler = CadenceScheduler(refresh: output.clock.refresh)
        self.trace = trace
        self.logger = logger.with(["output": output.name])
        self.exitAfter = exitAfter
    }

    /// Presents until `shouldStop` says so, `exitAfter` of presentation time has passed, or a
    /// playlist without loop has ended.
    public func run(while shouldContinue: () -> Bool) throws {
        while !finished && shouldContinue() {
            guard let event = source.next(timeout: 0.25) else { continue }
            switch event {
            case .frame(let frame):
                try schedule(frame)
            case .nothingPlayable:
                try flushHeld()
                try showBlank()
            case .ended:
                try flushHeld()
                if !finished {
                    // Let the last frame have its time, then clear the screen.
                    let end = (anchor ?? 0) + scheduler.vsyncOffset(for: timelineEnd)
                    try showBlank(atLeast: end)
                }
                finished = true
            }
        }
        trace?.flush()
    }

    private func schedule(_ frame: PlaylistFrame<Frame>) throws {
        if frame.run != currentRun {
            currentRun = frame.run
            runStart = timelineEnd
            runFirstPts = frame.frame.pts
        }
        let t = runStart + (frame.frame.pts - runFirstPts)
        let end = t + frame.frame.duration
        if end > timelineEnd { timelineEnd = end }
        if anchor == nil {
            anchor = output.clock.earliestVsync(after: stats.lastVsync) - scheduler.vsyncOffset(for: t)
        }
        var vsync = anchor! + scheduler.vsyncOffset(for: t)
        if let h = held {
            if vsync <= max(h.vsync, stats.lastVsync + 1) {
                stats.dropped += 1
            } else {
                try show(h.frame, plannedVsync: h.vsync)
                vsync = anchor! + scheduler.vsyncOffset(for: t)  // showing late moves the anchor
            }
        }
        held = (frame, vsync)
    }

    private func flushHeld() throws {
        if let h = held {
            held = nil
            try show(h.frame, plannedVsync: h.vsync)
        }
    }

    /// True when vsync `v` is at or past `exitAfter`; ends the loop.
    private func reachedEnd(_ v: Int64) -> Bool {
        if let exitAfter, output.clock.time(ofVsync: v) >= exitAfter {
            finished = true
            return true
        }
        return false
    }

    private func show(_ frame: PlaylistFrame<Frame>, plannedVsync: Int64) throws {
        guard !finished else { return }
        let target = max(plannedVsync, output.clock.earliestVsync(after: stats.lastVsync))
        if reachedEnd(target) { return }
        let shown = try output.present(frame.frame, atVsync: target)
        if shown > plannedVsync {
            // Late (a slow draw, a slow file open, a busy machine): the timeline moves with the
            // picture, so that the next frames keep their cadence instead of all being late.
            let late = shown - plannedVsync
            stats.delayed += 1
            anchor = (anchor ?? 0) + late
            if late * output.clock.refresh.denominator * 4 > output.clock.refresh.numerator {
                logger.warning("presentation stalled; timeline moved", ["vsyncs": "\(late)", "item": "\(frame.item)"])
            }
        }
        stats.presented += 1
        stats.lastVsync = shown
        showingBlank = false
        trace?.frame(vsync: shown, t: output.clock.time(ofVsync: shown), output: output.name,
                     item: frame.item, uri: frame.uri, pts: frame.frame.pts)
    }

    private func showBlank(atLeast vsync: Int64 = .min) throws {
        let target = max(vsync, output.clock.earliestVsync(after: stats.lastVsync))
        if reachedEnd(target) { return }
        let shown = try output.present(nil, atVsync: target)
        stats.lastVsync = shown
        // The timeline restarts where the picture comes back.
        anchor = nil
        currentRun = nil
        timelineEnd = .zero
        if !showingBlank {
            showingBlank = true
            trace?.blank(vsync: shown, t: output.clock.time(ofVsync: shown), output: output.name)
        }
    }
}
