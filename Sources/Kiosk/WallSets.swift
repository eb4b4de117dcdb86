import Foundation
import Playback
import Synchronization

/// A clock-synced wall's remote M3U on one node: its new sets switch on every node at one agreed
/// wall time (`WallSetAgreement`). A thread of its own (**marquee-wallset**) says where this node
/// stands over the wall's cue socket every second, decides, and probes the agreed set for its
/// timeline (epoch: the switch time); the presentation thread makes the switch on the vsync of
/// that time (`vsync`): the item playing is cut there and the new set's first frame is that
/// vsync's picture. The set is then kept as the last good copy with its switch time beside it,
/// so that a restart rejoins it at the same position.
final class WallSets: @unchecked Sendable {
    // @unchecked: what changes is behind the mutexes; the rest is immutable.
    private weak var session: KioskSession?
    private let remote: RemotePlaylist
    private let cues: WallCues
    private let logger: Logger
    private let agreement: Mutex<WallSetAgreement>
    private let stopped = Latch<Bool>()
    /// Kinds of refused messages logged (once each).
    private let logged = Mutex(Set<String>())

    /// An agreed switch, probed, for the presentation thread.
    struct Pending: @unchecked Sendable {
        // @unchecked: the plan is made on the agreement's thread and handed over whole.
        let agreed: WallSetAgreement.Agreed
        let plan: ClockPlan
        let config: KioskConfig
        /// The vsync it was made on (nil: not yet), and whether that was past its time.
        var madeOn: Int64?
        var late = false
    }
    private let pending = Mutex<Pending?>(nil)
    /// How far ahead of its vsync the switch is queued (seconds): the new set's first item is
    /// opened and prerolled behind the item playing.
    static let lead = 2.0

    init(session: KioskSession, remote: RemotePlaylist, cues: WallCues, logger: Logger) {
        self.session = session
        (self.remote, self.cues, self.logger) = (remote, cues, logger)
        let current = remote.currentSet
        let epoch = session.state.withLock { $0.config.wall?.sync.epoch } ?? WallTime(nanoseconds: 0)
        agreement = Mutex(WallSetAgreement(node: session.node, nodes: cues.settings.nodes.map(\.name), epoch: epoch,
                                           playing: current.id, since: current.since))
        cues.handlers.set.withLock { $0 = { [weak self] bytes, peer in self?.received(bytes, from: peer) } }
    }

    var counters: WallSetAgreement.Counters { agreement.withLock { $0.counters } }

    func start(tick: Double = 0.1) {
        startThread(named: "marquee-wallset") { [weak self] in
            while let self, self.stopped.wait(timeout: tick) == nil { self.step(now: WallTime.now()) }
        }
    }

    func stop() { _ = stopped.set(true) }

    private func received(_ bytes: [UInt8], from peer: String) {
        let reception = agreement.withLock { $0.received(bytes, from: peer, now: WallTime.now()) }
        let why: String
        switch reception {
        case .taken: return
        case .malformed: why = "wall set message malformed; ignored (further ones are not logged)"
        case .stranger: why = "wall set message from a node not of the wall; ignored (further ones are not logged)"
        case .farOff: why = "wall set message refused: its time is far from this node's clock (are the clocks in sync?); further ones are not logged"
        }
        if logged.withLock({ $0.insert(why).inserted }) { logger.warning(why, ["from": peer, "bytes": "\(bytes.count)"]) }
    }

    /// One look: this node's held set told, a message sent when due, an agreement probed, a switch made kept.
    func step(now: WallTime) {
        let held = remote.heldSet()
        let (message, ready) = agreement.withLock { a -> (WallSetMessage?, (id: String, at: WallTime)?) in
            let before = a.ready?.id
            a.haveSet(held?.id, now: now)
            return (a.due(now: now), a.ready?.id != before ? a.ready : nil)
        }
        if let ready {
            logger.info("wall set whole here; waiting for the wall's other nodes", ["set": String(ready.id.prefix(12)),
                                                                                  "ready_at": ready.at.unixSeconds.formatted(decimals: 6)])
        }
        if let message {
            for (peer, error) in cues.socket.sendToPeers(message.encoded) where logged.withLock({ $0.insert("send \(peer)").inserted }) {
                logger.warning("wall set message could not be sent (further failures are not logged)", ["to": "\(peer)", "error": "\(error)"])
            }
        }
        if let made = pending.withLock({ $0 }), let vsync = made.madeOn {
            let kept = remote.takeHeld(made.agreed.id, since: made.agreed.at)
            // The screen plays the set either way: the others are told so, and it is never agreed on again.
            agreement.withLock { $0.switched(to: made.agreed.id, at: made.agreed.at) }
            pending.withLock { $0 = nil }
            let (set, at, late) = (String(made.agreed.id.prefix(12)), made.agreed.at.unixSeconds.formatted(decimals: 6), made.late ? "yes" : "no")
            if kept {
                logger.info("wall set switched", ["set": set, "switch_at": at, "vsync": "\(vsync)", "late": late])
            } else {
                logger.error("wall set plays, but the remote playlist no longer holds it: not kept as the last good copy (a restart plays the old one)",
                             ["set": set, "switch_at": at, "vsync": "\(vsync)", "late": late])
            }
            return
        }
        guard pending.withLock({ $0 == nil }), let agreed = agreement.withLock({ $0.decide() }) else { return }
        guard let held, held.id == agreed.id, remote.pin(agreed.id), let session else {
            agreement.withLock { $0.forget() }
            logger.warning("wall set agreed on is no longer held here; this node waits for the next one", ["set": String(agreed.id.prefix(12))])
            return
        }
        logger.info("wall set agreed", ["set": String(agreed.id.prefix(12)), "switch_at": agreed.at.unixSeconds.formatted(decimals: 6),
                                        "ahead_s": (Double(agreed.at - now) / 1e9).formatted(decimals: 3), "items": "\(held.items.count)"])
        var config = session.state.withLock { $0.config }
        config.playlist = held.items
        config.playlistUnread = false
        // Probed here, ahead of the switch: the same lengths on every node (the same files).
        guard let plan = (try? session.clockPlan(config, epoch: agreed.at, beating: false)) ?? nil else {
            agreement.withLock { $0.forget() }
            logger.error("wall set agreed on cannot be played here (no item probes); the old set plays on", ["set": String(agreed.id.prefix(12))])
            return
        }
        pending.withLock { $0 = Pending(agreed: agreed, plan: plan, config: config) }
    }

    /// Presentation thread, once per vsync `n` before its picture is asked for: the switch made
    /// when its time is near (the item playing then cut on the vsync of the switch time), or at
    /// once at the clock's position when its time has passed (a node that was late).
    func vsync(_ n: Int64, clock: any VsyncClock) {
        guard let session, let switching = pending.withLock({ $0 }), switching.madeOn == nil,
              let wall = clock.wallTime(ofVsync: n) else { return }
        let player = session.player
        let step = Self.switchStep(on: n, wall: wall, at: switching.agreed.at, refresh: clock.refresh.interval.seconds,
                                   wallTime: { clock.wallTime(ofVsync: $0) }, playing: player.currentItem != nil,
                                   itemEnd: { player.currentItemEnd() })
        switch step {
        case .wait: return
        case .late:
            adopt(switching.config, session)
            session.followClock(switching.plan, clock: clock)
            return made(on: n, late: true)
        case .start(let cut):
            // Nothing plays yet (the wall's first set): it starts on the clock at that time.
            adopt(switching.config, session)
            session.followClock(switching.plan, clock: clock, at: switching.agreed.at)
            return made(on: cut, late: false)
        case .cut(let cut, let cutAt):
            // Not yet (that vsync has no wall time, or the cut was refused): again on the next vsync.
            guard session.queueOnClock(switching.plan, clock: clock, from: cut, cutAt: cutAt, adopt: { adopt(switching.config, session) }) else { return }
            made(on: cut, late: false)
        }
    }

    /// What vsync `n` (at wall time `wall`) does about a switch at `at`.
    enum SwitchStep: Equatable {
        /// Nothing yet: the switch is further off than `lead`, or the item playing has not started.
        case wait
        /// Its time has passed: at once, at the clock's position.
        case late
        /// Nothing plays yet: it starts on the clock at `at`, vsync `cut`.
        case start(Int64)
        /// Queued behind the item playing, which is cut on `cut` (`cutAt`), or ends there itself (`cutAt` nil).
        case cut(Int64, cutAt: Int64?)
    }

    /// The decision of `vsync`, apart from the player (tests run it on virtual wall times):
    /// `refresh` is the vsync interval in seconds, `wallTime` a vsync's wall time.
    static func switchStep(on n: Int64, wall: WallTime, at: WallTime, refresh: Double, wallTime: (Int64) -> WallTime?,
                           playing: Bool, itemEnd: () -> Player.ItemEnd) -> SwitchStep {
        if at <= wall { return .late }
        let interval = max(1, Int64(refresh * 1e9))
        // The first vsync at or after the switch time.
        var cut = n + (at - wall + interval - 1) / interval
        while cut > n + 1, let w = wallTime(cut - 1), w >= at { cut -= 1 }
        while let w = wallTime(cut), w < at { cut += 1 }
        guard Double(cut - n) * refresh <= lead else { return .wait }
        if !playing { return .start(cut) }
        switch itemEnd() {
        case .notStarted: return .wait
        case .atVsync(let end) where end < cut: return .wait  // an earlier item ends first: the one after it is cut
        case .atVsync(let end) where end == cut: return .cut(cut, cutAt: nil)  // it ends there itself
        default: return .cut(cut, cutAt: cut)
        }
    }

    private func made(on vsync: Int64, late: Bool) {
        pending.withLock {
            $0?.madeOn = vsync
            $0?.late = late
        }
    }

    /// The session's playlist is the new set's from now on (what status and the reader see).
    private func adopt(_ config: KioskConfig, _ session: KioskSession) {
        let now = session.state.withLock { s in
            s.config.playlist = config.playlist
            s.config.playlistUnread = false
            return s.config
        }
        session.status.update {
            $0.replaceItems(PlaybackReporter.statusItems(now))
            $0.playlistProblem = nil
        }
    }
}
