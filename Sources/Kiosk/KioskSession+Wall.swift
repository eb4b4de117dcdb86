import Foundation
import Playback
import Synchronization

extension KioskSession {
    // MARK: Followers and wall sync

    /// A session for another wall output of this node (`status.outputs[slot]`): the playlist of
    /// the region that output shows, on its own player, for its own output's thread. A node with
    /// several outputs plays by the clock (`KioskConfig.forWallOutput`), so all follow one
    /// timeline. Reloads and stops reach it through this one; other commands act on this session's
    /// player (under clock sync every output follows the clock).
    /// `output` is what that output said it can do as it opened (it opens before its session).
    public func makeFollower(slot: Int, output: OutputCapabilities, logger: Logger) -> KioskSession {
        makeFollower(slot: slot, regionRank: 0, output: output, logger: logger)
    }

    /// A session for the `regionRank`th region that output `slot` shows (a mosaic: the regions of
    /// one output draw through one layer, so they share its capabilities).
    func makeFollower(slot: Int, regionRank: Int, output: OutputCapabilities, logger: Logger) -> KioskSession {
        let follower = KioskSession(config: state.withLock { s in s.unselectedConfig }, configPath: nil, logger: logger, node: node,
                                    overrides: overrides, output: output,
                                    role: regionRank > 0 ? .region(slot: slot, rank: regionRank, reportsTo: status)
                                                         : .follower(slot: slot, reportsTo: status))
        state.withLock { s in s.followers.append(follower) }
        if isStopped { follower.stop() }
        return follower
    }

    /// Wall sync by the clock: probes every item for its length (the loop's timeline; an item
    /// whose first frame does not decode is left out, as every node leaves it out), starts the
    /// player at the clock's position of a moment half a second or more ahead (on a quarter-second
    /// grid shared by every output), and keeps it there frame by frame.
    func startClockSync(_ config: KioskConfig, epoch: WallTime, clock: any VsyncClock, at shared: WallTime? = nil) throws {
        guard let plan = try clockPlan(config, epoch: epoch) else { return }
        followClock(plan, clock: clock, at: shared)
    }

    /// What playing `config` on the clock needs (`ClockPlan.make`); `beating`: on the
    /// presentation thread, which tells supervision it is alive between the probes.
    func clockPlan(_ config: KioskConfig, epoch: WallTime, beating: Bool = true) throws -> ClockPlan? {
        try ClockPlan.make(config, epoch: epoch, backend: backend, logger: logger,
                           beat: beating ? { [reporter] in reporter.beat(idle: "probing the playlist for the wall's timeline") } : nil)
    }

    /// Plays `plan` on the clock: from the clock's position at a moment a little ahead (`shared`
    /// where given), or, with `takingOverAt`, from that vsync, where the player already has the
    /// plan's playlist queued at the clock's position (a schedule's change); then keeps it there
    /// frame by frame. Presentation thread.
    func followClock(_ plan: ClockPlan, clock: any VsyncClock, at shared: WallTime? = nil, takingOverAt: Int64? = nil) {
        let follower = ClockFollower(plan: plan, clock: clock, driver: driver, reporter: reporter, logger: logger,
                                     lastCue: { [cueGate] in cueGate.lastCut })
        if let takingOverAt {
            follower.takeOver(at: takingOverAt)
        } else {
            follower.start(earliest: clock.earliestVsync(after: -1), shared: shared)
        }
        clockSyncCheck = follower.check
    }

    /// Switches to `plan` on vsync `vsync` behind the item playing (cut there when `cutAt` is
    /// given): `adopt` makes its playlist the session's, it is queued at the clock's position of
    /// that vsync (its first item sought there), and the clock is followed from that vsync on.
    /// False, with nothing changed: that vsync has no wall time yet, or the cut was refused.
    /// Presentation thread.
    func queueOnClock(_ plan: ClockPlan, clock: any VsyncClock, from vsync: Int64, cutAt: Int64?, adopt: () -> Void) -> Bool {
        // The wall time first: a cut made without it would queue nothing behind it.
        guard let wall = clock.wallTime(ofVsync: vsync) else { return false }
        if let cutAt, !player.endCurrentItem(atVsync: cutAt) { return false }
        adopt()
        let position = plan.sync.timeline.position(at: wall)
        driver.start(plan.playable, from: position.index, afterCurrentItem: true, replacingQueued: true)
        let offset = plan.starts[position.index] + position.itemTime
        if offset > .zero, let first = player.items().dropFirst().first {
            first.seek(to: offset) { _ in }
        }
        followClock(plan, clock: clock, takingOverAt: vsync)
        return true
    }
}
