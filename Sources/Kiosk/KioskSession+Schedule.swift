import Foundation
import Playback
import Synchronization

extension KioskSession {
    // MARK: Schedule

    /// The schedule entry `config` plays at `time` (nil: none, or no schedule).
    static func scheduledEntry(_ config: KioskConfig, at time: WallTime) -> Int? {
        config.schedule?.entry(at: time)
    }

    /// The system-clock time schedules follow now: the real clock's, or with the virtual clock the
    /// time of the vsync last presented.
    func scheduleWallTimeNow() -> WallTime {
        state.withLock { $0.scheduleWallTime } ?? WallTime.now()
    }

    /// The per-vsync step of the schedule on this output (nil without a schedule, or under wall
    /// sync by the clock, whose timeline the schedule does not drive yet). Runs on the
    /// presentation thread. `clock`: the output's; with the virtual clock vsync `n` is at
    /// `config.virtualClockStart` (else the moment presentation started) + n / refresh.
    func makeScheduleStep(clock: any VsyncClock, trace: TraceWriter?, outputName: String) -> ScheduleStep? {
        let (config, entry) = state.withLock { s in (s.config, s.scheduleEntry) }
        guard let schedule = config.schedule else { return nil }
        let playback: SchedulePlayback
        if let sync = config.wall?.sync, sync.mode == .clock {
            // A mosaic's further regions follow their output's session.
            guard role.reportsOutput else { return nil }
            playback = WallSchedulePlayback(session: self, clock: clock, epoch: sync.epoch)
        } else {
            playback = SessionSchedulePlayback(session: self)
        }
        return ScheduleStep(schedule: schedule, active: entry, config: config, clock: clock, playback: playback, state: state,
                            power: outputPower, trace: trace, outputName: outputName, logger: logger,
                            onStatus: role.isLeader ? { [status] schedule in status.update { $0.schedule = schedule } } : nil)
    }

    /// The config of schedule entry `entry` for this session's output, now the one playing.
    func adoptScheduleEntry(_ entry: Int?) -> KioskConfig {
        let newConfig = state.withLock { s -> KioskConfig in
            s.config = role.config(s.unselectedConfig, entry: entry, node: node)
            s.scheduleEntry = entry
            return s.config
        }
        reporter.forgetFailures()
        status.update {
            $0.replaceItems(PlaybackReporter.statusItems(newConfig))
            $0.playlistProblem = PlaybackReporter.emptyPlaylistProblem(newConfig)
        }
        return newConfig
    }

    /// Plays schedule entry `entry`'s playlist after the item playing now (cut on `cutAt`). Out of
    /// a display-off entry: the display wakes and the new playlist starts at once.
    func switchSchedule(to entry: Int?, cutAt: Int64?) -> Bool {
        if outputPower.state == .off(.schedule) {
            driver.start(adoptScheduleEntry(entry), afterCurrentItem: false)
            outputPower.set(true, by: .schedule, vsync: outputPower.vsync)
            return true
        }
        if let cutAt, !player.endCurrentItem(atVsync: cutAt) { return false }
        driver.start(adoptScheduleEntry(entry), afterCurrentItem: true, replacingQueued: true)
        return true
    }
}
