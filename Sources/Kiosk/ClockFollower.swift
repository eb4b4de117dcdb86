import Foundation
import Playback

/// Keeps a player on a wall's clock timeline (a `ClockPlan`): starts it at the clock's position of
/// a vsync, then checks each picture shown against the clock, shifts or restarts the player when
/// it is off, and reports how far off it is. Presentation thread.
final class ClockFollower {
    private let plan: ClockPlan
    private let clock: any VsyncClock
    /// The clock's refresh as the plan started (what the checks count vsyncs in).
    private let refresh: RefreshRate
    private let driver: PlaylistDriver
    private let reporter: PlaybackReporter
    private let logger: Logger
    /// The vsync playback starts moving on; until then the frame of that moment is held, and is
    /// not checked against the clock.
    private(set) var startVsync: Int64 = 0
    /// A trigger's film (cut in: no place in the playlist) is on screen, since this vsync: it is
    /// off the timeline.
    private var cutInSince: Int64?
    /// The wall time the last wall cue cut on (nil: none), the same on every node.
    private let lastCue: () -> WallTime?

    init(plan: ClockPlan, clock: any VsyncClock, driver: PlaylistDriver, reporter: PlaybackReporter, logger: Logger,
         lastCue: @escaping () -> WallTime? = { nil }) {
        (self.plan, self.clock, self.driver, self.reporter, self.logger, self.lastCue) = (plan, clock, driver, reporter, logger, lastCue)
        refresh = clock.refresh
    }

    /// Starts the plan's playlist at the clock's position of the first vsync from `earliest` on
    /// (at `shared` where given: a wall time shared by every output, which all hold the frame of
    /// that moment while they wait for it).
    func start(earliest: Int64, shared: WallTime?) {
        let (sync, starts, player) = (plan.sync, plan.starts, driver.player)
        let (vsync, wall) = ClockSync.startPoint(earliest: earliest, at: shared, interval: refresh.interval.seconds,
                                                 wallTime: clock.wallTime(ofVsync:))
        startVsync = vsync
        let position = sync.timeline.position(at: wall)
        driver.start(plan.playable, from: position.index, afterCurrentItem: false)
        player.automaticallyWaitsToMinimizeStalling = false
        try? player.setRate(1, time: starts[position.index] + position.itemTime, atHostTime: clock.time(ofVsync: vsync))
        logger.info("wall sync: starting on the clock's position", ["position": "\(position)", "vsync": "\(vsync)",
                                                                    "loop_s": sync.timeline.length.seconds.formatted(decimals: 3)])
    }

    /// Where the loop rejoins the clock after a wall cue's film: a point on the quarter-second grid
    /// half a second or more past the film, worked out from what every node has alike (the cue's
    /// time and the film's length in vsyncs), so that all restart on the same moment. nil without
    /// a cue: the next grid point from here.
    static func rejoinPoint(cue: WallTime?, filmVsyncs: Int64, interval: Double) -> WallTime? {
        guard let cue, filmVsyncs >= 0, filmVsyncs < 1 << 32 else { return nil }
        return ClockSync.gridPoint(after: cue + Int64((Double(filmVsyncs) * interval + 0.5) * 1e9))
    }

    /// The player already has the plan's playlist queued at the clock's position of `vsync` (a
    /// schedule's change): it is checked from that vsync on.
    func takeOver(at vsync: Int64) {
        startVsync = vsync
    }

    /// `picture` was shown on vsync `shown`.
    func check(shown: Int64, picture: Player.Picture) {
        let (sync, starts) = (plan.sync, plan.starts)
        // After a trigger's film the loop rejoins the clock's position (the same on every node)
        // rather than where it was left, which the clock has passed.
        if let item = picture.item, item.playlistIndex == nil {
            if cutInSince == nil { cutInSince = shown }
            return
        }
        if let since = cutInSince, picture.item != nil {
            cutInSince = nil
            logger.info("wall sync: back from a triggered item; rejoining the clock's position")
            return start(earliest: shown, shared: Self.rejoinPoint(cue: lastCue(), filmVsyncs: shown - since, interval: refresh.interval.seconds))
        }
        // The timeline against the clock where the picture was asked for: one the output showed
        // late (a busy machine) says nothing about the timeline.
        let asked = picture.askedVsync ?? shown
        guard asked >= startVsync, let item = picture.item, let index = item.playlistIndex, index < starts.count,
              let wall = clock.wallTime(ofVsync: asked) else { return }
        let action = sync.check(vsync: asked, wall: wall, index: index, itemTime: picture.itemTime - starts[index], refresh: refresh)
        switch action {
        case .none: break
        case .shift(let vsyncs): driver.player.shiftTimeline(byVsyncs: vsyncs)
        case .restart: start(earliest: shown, shared: nil)
        }
        reporter.updateOutput { o in
            o.syncErrorMs = sync.lastError.map { $0 * 1000 }
            o.syncRepeated = sync.repeated
            o.syncSkipped = sync.skipped
            o.syncRestarts = sync.resyncs
        }
    }
}
