import Foundation
import Playback

/// What the schedule asks of the playback it drives (the session's player; a fake in tests).
protocol SchedulePlayback: AnyObject {
    /// Where the item playing now ends.
    func currentItemEnd() -> Player.ItemEnd
    /// Plays `entry`'s playlist (nil: the top-level one) after the item playing now; with `cutAt`,
    /// that item ends so that the new playlist's first frame is due on that vsync. False when the
    /// cut cannot be made (nothing changed).
    func switchPlaylist(to entry: Int?, cutAt: Int64?) -> Bool
    /// The change to `entry` is coming (`ScheduleRunner.prepareLead` ahead): time to get ready
    /// (probe its items) without holding up presentation.
    func prepare(entry: Int?)
}

extension SchedulePlayback {
    func prepare(entry: Int?) {}
}

/// Follows a schedule on one output, vsync by vsync (on its presentation thread): it knows the
/// next change of entry and the vsync of its moment (from the wall time of the vsyncs), and a
/// little ahead of it queues the new playlist behind the item playing then, which the player
/// changes to without a gap:
/// - `switch: "item"`: once the item that plays at the moment is the current one, the new
///   playlist follows it (the first item boundary at or after the moment);
/// - `switch: "exact"`: that item is also cut on the vsync of the moment.
/// The wall time of each vsync is checked against the last one: a clock step or a jump (more than
/// a second off) plans again from the new time, and an entry that should play now (a step into
/// another entry, or the start) is switched to at once (exact: a quarter second ahead, so the new
/// item has decoded its first frames).
final class ScheduleRunner {
    struct Switch: Equatable {
        let from: Int?
        let to: Int?
        let mode: Schedule.SwitchMode
        /// The vsync the new playlist's first frame is due on, where known (the cut, or the end of
        /// the item playing).
        let vsync: Int64?
        /// The vsync it was decided on.
        let decidedOn: Int64
        /// The moment of the change (the schedule's, or the wall time it was noticed on).
        let moment: WallTime
    }

    private(set) var schedule: Schedule
    /// The entry playing (or queued to play), nil: the top-level playlist.
    private(set) var active: Int?
    private let intervalNs: Double
    /// How many vsyncs before the moment the switch is queued.
    let lead: Int64
    /// How far ahead a switch that is due at once is cut (vsyncs).
    let soonest: Int64
    /// How many vsyncs before the moment the playback is told to get ready.
    let prepareLead: Int64
    private var prepared = false
    private var next: (entry: Int?, moment: WallTime, vsync: Int64)?
    private var recheckAt: Int64?
    /// A switch queued ahead of its moment: the schedule is not looked at again before the
    /// moment (until then the entry it leaves is still the one the clock gives; the vsync nearest
    /// the moment may come a little before it).
    private var settledUntil: WallTime?
    private var last: (vsync: Int64, wall: WallTime)?
    /// Each switch made, as it is made.
    var onSwitch: ((Switch) -> Void)?
    /// A clock step noticed: vsync, how far (ns).
    var onClockStep: ((Int64, Int64) -> Void)?

    init(schedule: Schedule, active: Int?, refresh: RefreshRate, leadSeconds: Double = 2, soonestSeconds: Double = 0.25) {
        self.schedule = schedule
        self.active = active
        intervalNs = refresh.interval.seconds * 1e9
        lead = max(1, Int64((leadSeconds * refresh.hertz).rounded()))
        soonest = max(1, Int64((soonestSeconds * refresh.hertz).rounded()))
        prepareLead = max(lead, Int64((10 * refresh.hertz).rounded()))
    }

    /// A reloaded schedule, with the entry the reload chose to play.
    func replace(schedule: Schedule, active: Int?) {
        self.schedule = schedule
        self.active = active
        next = nil
        recheckAt = nil
        settledUntil = nil
    }

    /// The vsync `nanoseconds` after vsync `n` (saturating).
    private func vsync(after n: Int64, nanoseconds: Int64) -> Int64 {
        let steps = Int64(saturating: (Double(nanoseconds) / intervalNs).rounded())
        let (sum, overflow) = n.addingReportingOverflow(steps)
        return overflow ? (steps > 0 ? .max : .min) : sum
    }

    /// No vsyncs come (the display is in standby): the schedule follows the system clock, `wall`
    /// now; a change due is made at once (no cut: nothing is shown).
    func idle(wall: WallTime, playback: SchedulePlayback) {
        last = nil
        wasIdle = true
        if next == nil {
            let now = schedule.entry(at: wall)
            if now != active {
                next = (now, wall, 0)
            } else if let change = schedule.nextChange(after: wall) {
                next = (change.entry, change.time, 0)
            }
        }
        guard let change = next, wall >= change.moment, playback.switchPlaylist(to: change.entry, cutAt: nil) else { return }
        let made = Switch(from: active, to: change.entry, mode: schedule.switchMode(from: active, to: change.entry), vsync: nil,
                          decidedOn: 0, moment: change.moment)
        active = change.entry
        next = nil
        settledUntil = nil
        onSwitch?(made)
    }

    private var wasIdle = false

    /// Vsync `n` is about to be presented; `wall` is its system-clock time.
    func vsync(_ n: Int64, wall: WallTime, playback: SchedulePlayback) {
        if wasIdle {
            // Planned without vsyncs: plan again with them.
            wasIdle = false
            next = nil
            recheckAt = nil
        }
        if let last {
            let expected = last.wall + Int64(saturating: (Double(n - last.vsync) * intervalNs).rounded())
            let off = wall - expected
            if off > 1_000_000_000 || off < -1_000_000_000 {
                onClockStep?(n, off)
                next = nil
                recheckAt = nil
                settledUntil = nil
            }
        }
        last = (n, wall)
        if let settled = settledUntil {
            guard wall >= settled else { return }
            settledUntil = nil
        }
        if next == nil, recheckAt.map({ n >= $0 }) ?? true {
            recheckAt = nil
            let now = schedule.entry(at: wall)
            prepared = false
            if now != active {
                next = (now, wall, n)
            } else if let change = schedule.nextChange(after: wall) {
                next = (change.entry, change.time, vsync(after: n, nanoseconds: change.time - wall))
            } else {
                // Nothing changes within the horizon: look again in an hour.
                recheckAt = vsync(after: n, nanoseconds: 3_600_000_000_000)
            }
        }
        guard let change = next, n >= change.vsync - prepareLead else { return }
        if !prepared {
            prepared = true
            playback.prepare(entry: change.entry)
        }
        guard n >= change.vsync - lead else { return }
        let mode = schedule.switchMode(from: active, to: change.entry)
        let end = playback.currentItemEnd()
        let due = n >= change.vsync  // the moment has come (or passed)
        var at: Int64?
        switch (mode, end) {
        case (_, .notStarted) where !due:
            return  // the item playing at the moment is not known yet
        case (.item, .atVsync(let e)) where e < change.vsync && !due:
            return  // an earlier item ends before the moment: the one after it plays then
        case (.exact, .atVsync(let e)) where e < max(change.vsync, n + soonest) && !due:
            return
        case (.exact, .atVsync(let e)) where e == max(change.vsync, n + soonest):
            at = nil  // it ends on the moment itself: no cut needed
        case (.exact, .unknown), (.exact, .atVsync):
            at = max(change.vsync, n + soonest)
        default:
            at = nil
        }
        var cut = at
        if !playback.switchPlaylist(to: change.entry, cutAt: cut) {
            guard due else { return }  // try again on the next vsync
            cut = nil
            // Not ready for it yet (still probing): on the next vsync, at the end of the item.
            guard playback.switchPlaylist(to: change.entry, cutAt: nil) else { return }
        }
        let shownOn: Int64? = cut ?? { if case .atVsync(let e) = end { return e } else { return nil } }()
        let made = Switch(from: active, to: change.entry, mode: mode, vsync: shownOn, decidedOn: n, moment: change.moment)
        active = change.entry
        next = nil
        settledUntil = change.moment
        onSwitch?(made)
    }
}
