import Foundation
import Playback
import Synchronization

/// The schedule on one output, stepped on its presentation thread: at each vsync's wall time (the
/// virtual clock's: `config.virtualClockStart` + n / refresh), and on the system clock while the
/// display is in standby, it switches the playlist (through a `SchedulePlayback`), darkens the
/// output for a display-off entry and takes a reloaded schedule.
final class ScheduleStep {
    private let runner: ScheduleRunner
    private let playback: SchedulePlayback
    private let clock: any VsyncClock
    private let virtualStart: WallTime
    private let state: SessionState
    private let power: OutputPower
    /// The vsync a display-off entry darkens the output on (its change's), once its switch is made.
    private var pendingOff: Int64?

    /// `onStatus`: where the entry playing is reported (the node's status; nil: nowhere).
    init(schedule: Schedule, active entry: Int?, config: KioskConfig, clock: any VsyncClock, playback: SchedulePlayback,
         state: SessionState, power: OutputPower, trace: TraceWriter?, outputName: String, logger: Logger,
         onStatus: ((KioskStatus.ScheduleState?) -> Void)?) {
        let runner = ScheduleRunner(schedule: schedule, active: entry, refresh: clock.refresh)
        self.runner = runner
        self.playback = playback
        self.clock = clock
        virtualStart = config.virtualClockStart ?? WallTime.now()
        self.state = state
        self.power = power
        runner.onClockStep = { n, off in
            logger.warning("schedule: the system clock jumped; planning again from the new time",
                           ["vsync": "\(n)", "jump_s": (Double(off) / 1e9).formatted(decimals: 3)])
        }
        runner.onSwitch = { [weak self] change in
            let schedule = runner.schedule
            if let entry = change.to, schedule.entries.indices.contains(entry), schedule.entries[entry].display == .off {
                self?.pendingOff = change.vsync ?? change.decidedOn
            }
            logger.info("schedule: playlist changes", ["from": schedule.name(of: change.from), "to": schedule.name(of: change.to),
                                                       "switch": change.mode.rawValue, "vsync": change.vsync.map { "\($0)" } ?? "-",
                                                       "moment": schedule.localDescription(change.moment)])
            let entryJSON = change.to.map { "\($0)" } ?? "null"
            trace?.event("{\"type\":\"event\",\"event\":\"schedule\",\"output\":\(jsonStringLiteral(outputName)),\"entry\":\(entryJSON),\"name\":\(jsonStringLiteral(schedule.name(of: change.to))),\"switch\":\"\(change.mode.rawValue)\",\"vsync\":\(change.vsync.map { "\($0)" } ?? "null"),\"decided\":\(change.decidedOn),\"moment\":\(change.moment.unixSeconds.formatted(decimals: 3))}")
            onStatus?(Self.status(schedule, entry: change.to))
        }
    }

    /// Vsync `n` is presented.
    func vsync(_ n: Int64) {
        let wall = clock.wallTime(ofVsync: n) ?? virtualStart + Int64(saturating: clock.time(ofVsync: n).seconds * 1e9)
        power.vsync = n
        let (reloaded, scheduled) = state.withLock { s -> ((Schedule?, Int?)?, Bool) in
            s.scheduleWallTime = wall
            defer { s.scheduleReloaded = false }
            return (s.scheduleReloaded ? (s.unselectedConfig.schedule, s.scheduleEntry) : nil, s.unselectedConfig.schedule != nil)
        }
        if let reloaded {
            guard let schedule = reloaded.0 else { return }
            runner.replace(schedule: schedule, active: reloaded.1)
        }
        guard scheduled else { return }
        runner.vsync(n, wall: wall, playback: playback)
        if let at = pendingOff, n >= at {
            pendingOff = nil
            power.set(false, by: .schedule, vsync: n)
        }
    }

    /// No vsyncs come (no display, or in standby): while the display is in standby, the schedule
    /// follows the system clock.
    func idle() {
        guard power.state != .on else { return }
        power.vsync = nil
        runner.idle(wall: WallTime.now(), playback: playback)
    }

    /// What the status says of `schedule` playing `entry` (nil without a schedule).
    static func status(_ schedule: Schedule?, entry: Int?, next: (time: WallTime, entry: Int?)? = nil) -> KioskStatus.ScheduleState? {
        guard let schedule else { return nil }
        let display = entry.map { schedule.entries.indices.contains($0) ? schedule.entries[$0].display.rawValue : "on" } ?? "on"
        return .init(entry: entry, name: schedule.name(of: entry), display: display,
                     next: next.map { "\(schedule.name(of: $0.entry)) at \(schedule.localDescription($0.time))" })
    }
}
