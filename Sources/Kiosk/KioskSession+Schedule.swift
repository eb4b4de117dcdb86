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
            guard regionRank == 0 else { return nil }
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
            if outputSlot == 0 && regionRank == 0 {
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
            s.config = Self.entryConfig(s.unselectedConfig, entry: entry, slot: outputSlot, node: node, regionRank: regionRank)
            s.scheduleEntry = entry
            s.loggedErrors.removeAll()
            return s.config
        }
        status.update {
            $0.replaceItems(Self.statusItems(newConfig))
            $0.playlistProblem = Self.emptyPlaylistProblem(newConfig)
        }
        return newConfig
    }

    static func entryConfig(_ unselected: KioskConfig, entry: Int?, slot: Int, node: String, regionRank: Int) -> KioskConfig {
        unselected.playing(entry: entry).forWallOutput(slot, node: node, regionRank: regionRank)
    }

    /// Plays schedule entry `entry`'s playlist after the item playing now (cut on `cutAt`). Out of
    /// a display-off entry: the display wakes and the new playlist starts at once.
    func switchSchedule(to entry: Int?, cutAt: Int64?) -> Bool {
        if state.withLock({ $0.displayOff == "off (scheduled)" }) {
            startPlaylist(adoptScheduleEntry(entry), afterCurrentItem: false)
            setDisplayPower(true, reason: "on (scheduled)", power: scheduledPower, vsync: scheduleVsync)
            return true
        }
        if let cutAt, !player.endCurrentItem(atVsync: cutAt) { return false }
        startPlaylist(adoptScheduleEntry(entry), afterCurrentItem: true, replacingQueued: true)
        return true
    }
}

/// Under wall sync by the clock: the new entry's playlist goes on the clock's timeline (the
/// wall's epoch), so every node, and a node started later, plays the same frame at the same wall
/// time. Its items are probed for their lengths on a thread of its own, ahead of the change; the
/// item playing is cut on the vsync of the change (exact) or ends there (item), the new playlist
/// is queued behind it at the clock's position of that vsync, and wall sync checks the new
/// timeline from that vsync on. Every node computes that vsync from the same moment (the
/// schedule's, or the item boundary of the shared timeline), so all switch on the same vsync.
final class WallSchedulePlayback: SchedulePlayback {
    private unowned let session: KioskSession
    private let clock: any VsyncClock
    private let epoch: WallTime
    /// The entry being probed, and its plan once probed (nil: nothing can be played of it).
    private var probing: (entry: Int?, plan: Latch<ClockPlan?>)?

    init(session: KioskSession, clock: any VsyncClock, epoch: WallTime) {
        self.session = session
        self.clock = clock
        self.epoch = epoch
    }

    func currentItemEnd() -> Player.ItemEnd { session.player.currentItemEnd() }

    func prepare(entry: Int?) {
        if probing == nil || probing?.entry != entry {
            let latch = Latch<ClockPlan?>()
            let config = session.state.withLock { s in
                KioskSession.entryConfig(s.unselectedConfig, entry: entry, slot: session.outputSlot, node: session.node,
                                         regionRank: session.regionRank)
            }
            let (prober, epoch) = (session, epoch)
            startThread(named: "marquee-schedule") {
                latch.set((try? prober.clockPlan(config, epoch: epoch, beating: false)) ?? nil)
            }
            probing = (entry, latch)
        }
    }

    func switchPlaylist(to entry: Int?, cutAt: Int64?) -> Bool {
        prepare(entry: entry)
        guard let probing, let probed = probing.plan.wait(timeout: 0) else { return false }  // not probed yet
        self.probing = nil
        let player = session.player
        let vsync: Int64
        if let cutAt { vsync = cutAt } else if case .atVsync(let end) = player.currentItemEnd() { vsync = end } else { return false }
        guard let plan = probed, let wall = clock.wallTime(ofVsync: vsync) else {
            // Nothing of it can be played (logged): the entry's playlist is queued as it is.
            return session.switchSchedule(to: entry, cutAt: cutAt)
        }
        if let cutAt, !player.endCurrentItem(atVsync: cutAt) { return false }
        _ = session.adoptScheduleEntry(entry)
        let position = plan.sync.timeline.position(at: wall)
        session.startPlaylist(plan.playable, from: position.index, afterCurrentItem: true, replacingQueued: true)
        let offset = plan.starts[position.index] + position.itemTime
        if offset > .zero, let first = player.items().dropFirst().first {
            first.seek(to: offset) { _ in }
        }
        session.followClock(plan, clock: clock, takingOverAt: vsync)
        return true
    }
}

/// The session's player as the schedule runner drives it.
final class SessionSchedulePlayback: SchedulePlayback {
    private unowned let session: KioskSession
    init(session: KioskSession) { self.session = session }
    func currentItemEnd() -> Player.ItemEnd { session.player.currentItemEnd() }
    func switchPlaylist(to entry: Int?, cutAt: Int64?) -> Bool { session.switchSchedule(to: entry, cutAt: cutAt) }
}
