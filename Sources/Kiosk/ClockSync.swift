import Foundation
import Playback

/// Wall sync by the clock (`wall.sync.mode: "clock"`): playback is a pure function of the
/// synchronized system clock, so every output of every node shows the frame at position
/// (T - epoch) modulo the loop's length at wall time T.
///
/// It starts the player at the position of a vsync a little ahead, then checks each new frame
/// against the wall time of the vsync it was shown on. A frame more than half a vsync early or
/// late is corrected by one vsync (one repeated or one skipped frame, never a jump); a frame more
/// than half a second off (a stall, a node that slept) restarts at the right position.
final class ClockSync {
    let timeline: WallTimeline
    /// Config playlist index of each timeline item (items that cannot be played are left out, the
    /// same on every node).
    let playlistIndices: [Int]
    /// Where each timeline item starts in its file (`start` trims).
    let fileStarts: [MediaTime]
    private let logger: Logger
    private var lastCorrection: Int64?
    private(set) var repeated = 0
    private(set) var skipped = 0
    private(set) var resyncs = 0
    /// How far the last frame checked was from its place on the timeline, seconds (positive: late).
    private(set) var lastError: Double?

    init(timeline: WallTimeline, playlistIndices: [Int], fileStarts: [MediaTime], logger: Logger) {
        self.timeline = timeline
        self.playlistIndices = playlistIndices
        self.fileStarts = fileStarts
        self.logger = logger
    }

    /// Where a start (or restart) on the clock lands: `at` when given and still at least a few
    /// vsyncs ahead (the outputs of one process restarting together after a reload), else the
    /// first wall time on a grid of `grid` nanoseconds (the same grid on every output and node) at
    /// least `lead` vsyncs after `earliest`; and the vsync nearest it. Outputs that start on the
    /// same wall time hold the same frame (the one of that moment) while they wait, and start
    /// moving together.
    static func startPoint(earliest: Int64, at shared: WallTime? = nil, lead: Int64 = 30, grid: Int64 = 250_000_000,
                           interval: Double, wallTime: (Int64) -> WallTime?) -> (vsync: Int64, wall: WallTime) {
        let intervalNs = interval * 1e9
        func vsync(nearest target: WallTime, from n: Int64, at w: WallTime) -> Int64 {
            // Saturating: a clock stepped to a far year must not trap here.
            let steps = Int64(saturating: (Double(target - w) / intervalNs).rounded())
            let (sum, overflow) = n.addingReportingOverflow(steps)
            return overflow ? (steps > 0 ? .max : .min) : sum
        }
        let soonest = earliest + 4
        // A shared moment more than 10 s ahead is not a restart of outputs together (a reload
        // picks one under a second ahead): a clock stepped far away must not give a vsync numbers can't hold.
        if let shared, let w = wallTime(soonest), shared - w >= 0, shared - w <= 10_000_000_000 {
            return (vsync(nearest: shared, from: soonest, at: w), shared)
        }
        let first = earliest + lead
        let w0 = wallTime(first) ?? WallTime.now()
        let point = gridPoint(after: w0, grid: grid)
        return (vsync(nearest: point, from: first, at: w0), point)
    }

    /// The first point of a grid of `grid` nanoseconds at or after `time`.
    static func gridPoint(after time: WallTime, grid: Int64 = 250_000_000) -> WallTime {
        // Rounded up without forming time + grid (which overflows near Int64's end).
        let (quotient, remainder) = time.nanoseconds.quotientAndRemainder(dividingBy: grid)
        let down = WallTime(nanoseconds: quotient * grid)
        return remainder > 0 ? down + grid : down
    }

    enum Action: Equatable {
        case none
        /// Move the frames to come by this many vsyncs.
        case shift(Int64)
        /// Start again at the position of a later vsync.
        case restart
    }

    /// Checks the frame of timeline item `index` at item time `itemTime` shown on vsync `vsync`,
    /// whose wall time is `wall`.
    func check(vsync: Int64, wall: WallTime, index: Int, itemTime: MediaTime, refresh: RefreshRate) -> Action {
        let expected = timeline.position(at: wall)
        let length = timeline.length.seconds
        let interval = refresh.interval.seconds
        var error = (timeline.start(ofItem: index) + itemTime).seconds - (timeline.start(ofItem: expected.index) + expected.itemTime).seconds
        if error > length / 2 { error -= length }
        if error < -length / 2 { error += length }
        lastError = -error
        if abs(error) > 0.5 {
            resyncs += 1
            logger.warning("wall sync: off by more than 0.5 s; restarting at the clock's position",
                           ["error_ms": (error * 1000).formatted(decimals: 1), "vsync": "\(vsync)"])
            lastCorrection = vsync
            return .restart
        }
        // The frame due nearest this vsync is within half a vsync of its position; allow a little
        // more, and let a correction show before the next.
        if let last = lastCorrection, vsync - last < 4 { return .none }
        if error >= interval * 0.55 {
            repeated += 1
            lastCorrection = vsync
            return .shift(1)
        }
        if error < -interval * 0.55 {
            skipped += 1
            lastCorrection = vsync
            return .shift(-1)
        }
        return .none
    }
}
