import Foundation
import Playback
import Synchronization

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
                session.role.config(s.unselectedConfig, entry: entry, node: session.node)
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
        guard let plan = probed, clock.wallTime(ofVsync: vsync) != nil else {
            // Nothing of it can be played (logged): the entry's playlist is queued as it is.
            return session.switchSchedule(to: entry, cutAt: cutAt)
        }
        return session.queueOnClock(plan, clock: clock, from: vsync, cutAt: cutAt, adopt: { [session] in _ = session.adoptScheduleEntry(entry) })
    }
}

/// The session's player as the schedule runner drives it.
final class SessionSchedulePlayback: SchedulePlayback {
    private unowned let session: KioskSession
    init(session: KioskSession) { self.session = session }
    func currentItemEnd() -> Player.ItemEnd { session.player.currentItemEnd() }
    func switchPlaylist(to entry: Int?, cutAt: Int64?) -> Bool { session.switchSchedule(to: entry, cutAt: cutAt) }
}
