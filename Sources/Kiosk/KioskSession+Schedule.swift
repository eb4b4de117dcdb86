import Foundation
import Playback
import Synchronization

extension KioskSession {
    // MARK: Schedule

    /// The schedule entry `config` plays at `time` (nil: none, or no schedule).
    static func scheduledEntry(_ config: KioskConfig, at time: WallTime) -> Int? {
        config.schedule?.entry(at: time)
    }

    static func scheduleStatus(_ schedule: Schedule?, entry: Int?, next: (time: WallTime, entry: Int?)? = nil) -> KioskStatus.ScheduleState? {
        guard let schedule else { return nil }
        let display = entry.map { schedule.entries.indices.contains($0) ? schedule.entries[$0].display.rawValue : "on" } ?? "on"
        return .init(entry: entry, name: schedule.name(of: entry), display: display,
                     next: next.map { "\(schedule.name(of: $0.entry)) at \(schedule.localDescription($0.time))" })
    }

    /// The system-clock time schedules follow now: the real clock's, or with the virtual clock the
    /// time of the vsync last presented.
    func scheduleWallTimeNow() -> WallTime {
        scheduleClock.withLock { $0 } ?? WallTime.now()
    }

    /// The per-vsync step of the schedule on this output (nil without a schedule, or under wall
    /// sync by the clock, whose timeline the schedule does not drive yet). Runs on the
    /// presentation thread. `clock`: the output's; with the virtual clock vsync `n` is at
    /// `config.virtualClockStart` (else the moment presentation started) + n / refresh.
    func makeScheduleStep(clock: any VsyncClock, trace: TraceWriter?, outputName: String,
                          power: DisplayPowerControl?) -> (vsync: (Int64) -> Void, idle: () -> Void)? {
        let (config, unselected, entry) = state.withLock { s in (s.config, s.unselectedConfig, s.scheduleEntry) }
        guard let schedule = config.schedule else { return nil }
        _ = unselected
        presentationTrace = trace
        let refresh = clock.refresh
        let virtualStart = config.virtualClockStart ?? WallTime.now()
        let runner = ScheduleRunner(schedule: schedule, active: entry, refresh: refresh)
        let playback: SchedulePlayback
        if let sync = config.wall?.sync, sync.mode == .clock {
            // A mosaic's further regions follow their output's session.
            guard role.reportsOutput else { return nil }
            playback = WallSchedulePlayback(session: self, clock: clock, epoch: sync.epoch)
        } else {
            playback = SessionSchedulePlayback(session: self)
        }
        runner.onClockStep = { [logger] n, off in
            logger.warning("schedule: the system clock jumped; planning again from the new time",
                           ["vsync": "\(n)", "jump_s": (Double(off) / 1e9).formatted(decimals: 3)])
        }
        // The vsync a display-off entry darkens the output on (its change's), once its switch is made.
        final class PendingOff { var vsync: Int64? }  // presentation thread only
        let pendingOff = PendingOff()
        runner.onSwitch = { [logger, status, self] change in
            let schedule = runner.schedule
            if let entry = change.to, schedule.entries.indices.contains(entry), schedule.entries[entry].display == .off {
                pendingOff.vsync = change.vsync ?? change.decidedOn
            }
            logger.info("schedule: playlist changes", ["from": schedule.name(of: change.from), "to": schedule.name(of: change.to),
                                                       "switch": change.mode.rawValue, "vsync": change.vsync.map { "\($0)" } ?? "-",
                                                       "moment": schedule.localDescription(change.moment)])
            let entryJSON = change.to.map { "\($0)" } ?? "null"
            trace?.event("{\"type\":\"event\",\"event\":\"schedule\",\"output\":\(jsonStringLiteral(outputName)),\"entry\":\(entryJSON),\"name\":\(jsonStringLiteral(schedule.name(of: change.to))),\"switch\":\"\(change.mode.rawValue)\",\"vsync\":\(change.vsync.map { "\($0)" } ?? "null"),\"decided\":\(change.decidedOn),\"moment\":\(change.moment.unixSeconds.formatted(decimals: 3))}")
            if role.isLeader {
                status.update { $0.schedule = Self.scheduleStatus(schedule, entry: change.to) }
            }
            _ = self
        }
        let vsyncStep = { [self] (n: Int64) in
            let wall = clock.wallTime(ofVsync: n)
                ?? virtualStart + Int64(saturating: clock.time(ofVsync: n).seconds * 1e9)
            scheduleClock.withLock { $0 = wall }
            scheduleVsync = n
            if let reloaded = state.withLock({ s -> (Schedule?, Int?)? in
                defer { s.scheduleReloaded = false }
                return s.scheduleReloaded ? (s.unselectedConfig.schedule, s.scheduleEntry) : nil
            }) {
                guard let schedule = reloaded.0 else { return }
                runner.replace(schedule: schedule, active: reloaded.1)
            }
            guard state.withLock({ $0.unselectedConfig.schedule != nil }) else { return }
            runner.vsync(n, wall: wall, playback: playback)
            if let at = pendingOff.vsync, n >= at {
                pendingOff.vsync = nil
                setDisplayPower(false, reason: "off (scheduled)", power: power, vsync: n)
            }
        }
        // While the display is in standby (no vsyncs on a real display): the schedule on the system clock.
        let idleStep = { [self] in
            guard state.withLock({ $0.displayOff != nil }) else { return }
            scheduleVsync = nil
            runner.idle(wall: WallTime.now(), playback: playback)
        }
        return (vsyncStep, idleStep)
    }

    /// Puts this session's output into standby (playback paused, so decoding stops) or wakes it.
    /// Presentation thread.
    func setDisplayPower(_ on: Bool, reason: String, power: DisplayPowerControl?, vsync: Int64? = nil) {
        do {
            if let power { try power.setDisplayPower(on) }
        } catch {
            logger.error("display power cannot be changed", ["state": on ? "on" : "off", "error": "\(error)"])
            return
        }
        if on { player.play() } else { player.pause() }
        state.withLock { $0.displayOff = on ? nil : reason }
        status.update { $0.displayOff = on ? nil : reason }
        logger.info("display power", ["state": on ? "on" : "off", "why": reason])
        let name = state.withLock { $0.outputName } ?? "-"
        presentationTrace?.event("{\"type\":\"event\",\"event\":\"display-power\",\"output\":\(jsonStringLiteral(name)),\"state\":\"\(on ? "on" : "off")\",\"why\":\(jsonStringLiteral(reason)),\"vsync\":\(vsync.map { "\($0)" } ?? "null")}")
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
        if state.withLock({ $0.displayOff == "off (scheduled)" }) {
            driver.start(adoptScheduleEntry(entry), afterCurrentItem: false)
            setDisplayPower(true, reason: "on (scheduled)", power: scheduledPower, vsync: scheduleVsync)
            return true
        }
        if let cutAt, !player.endCurrentItem(atVsync: cutAt) { return false }
        driver.start(adoptScheduleEntry(entry), afterCurrentItem: true, replacingQueued: true)
        return true
    }
}
