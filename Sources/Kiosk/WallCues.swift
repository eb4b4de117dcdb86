import Foundation
import Inputs
import Playback
import Synchronization
import Triggers

/// Cuts held for a wall time (`CueSchedule`), made by the presentation thread on the first vsync
/// whose wall time is at or after theirs, just before that vsync's picture is asked for: the
/// film's first frame (prerolled) is that vsync's picture.
final class CueGate: Sendable {
    /// A cut: run with how many nanoseconds past its one-vsync window it came (nil: on time), and
    /// the vsync (with its wall time, where the clock has one) whose picture it is.
    typealias Cut = @Sendable (_ lateBy: Int64?, _ vsync: Int64, _ wall: WallTime?) -> Void
    private let schedule = Mutex(CueSchedule<Cut>())
    private let lastCutAt = Mutex<WallTime?>(nil)

    /// The wall time of the last cut made (what every node of the wall cut on alike).
    var lastCut: WallTime? { lastCutAt.withLock { $0 } }

    /// False when too many cuts wait already (a flood): this one is not made.
    func add(at: WallTime, _ cut: @escaping Cut) -> Bool { schedule.withLock { $0.add(at: at, cut) } }

    /// Presentation thread, once per vsync `n` before its picture is asked for.
    func vsync(_ n: Int64, clock: any VsyncClock) {
        // Cheap when nothing waits: the wall time of a vsync is only worked out for a cut.
        guard schedule.withLock({ !$0.waiting.isEmpty }) else { return }
        let interval = Int64(clock.refresh.interval.seconds * 1e9)
        let wall = clock.wallTime(ofVsync: n)
        for cut in schedule.withLock({ $0.due(vsyncAt: wall, interval: interval) }) {
            lastCutAt.withLock { $0 = cut.at }
            cut.payload(cut.lateBy, n, wall)
        }
    }
}

/// A node's part in its wall's cues (`wall.sync.cue`): sends the cues of its own presses to the
/// other nodes and takes theirs. A cue is sent twice (a lost datagram is the usual loss); copies,
/// datagrams that are not cues, and cues whose time is far from this node's clock are counted and
/// logged once each, never acted on.
final class WallCues: @unchecked Sendable {
    // @unchecked: the socket is thread-safe; the rest is behind `state` or immutable.
    let settings: WallCueSettings
    let socket: CueSocket
    let logger: Logger
    struct State {
        var sequence: UInt64 = 0
        var seen = CueDeduplicator()
        var counters = Counters()
        var logged = Set<String>()
    }
    struct Counters: Equatable {
        var sent = 0, received = 0, duplicates = 0, malformed = 0, refused = 0, late = 0
    }
    /// A class, so that the socket's thread shares it.
    final class Shared: Sendable {
        let lock = Mutex(State())
        func withLock<R>(_ body: (inout State) -> R) -> R { lock.withLock { body(&$0) } }
    }
    let state = Shared()
    /// Who takes what the socket gets: a class, so that the socket's thread shares it.
    final class Handlers: Sendable {
        /// The trigger rules there are, and what takes their cues (a socket opened for the wall's
        /// sets first gets them when the triggers start).
        let cue: Mutex<(rules: Int, take: @Sendable (WallCue) -> Void)?>
        /// Set messages on the same socket (`WallSetMessage`), with the sending node's name:
        /// handed on unread (the wall's set agreement reads and counts them).
        let set = Mutex<(@Sendable ([UInt8], String) -> Void)?>(nil)
        init(cue: (rules: Int, take: @Sendable (WallCue) -> Void)?) { self.cue = Mutex(cue) }
    }
    let handlers: Handlers
    /// A cue is refused when its time is further than this from the clock here (seconds), past or
    /// beyond its lead: the nodes' clocks disagree, or it is a stale datagram.
    static let tolerance = 1.0

    /// Binds this node's cue socket (`node` in `settings`); `onCue` runs on the socket's thread
    /// with each new cue of a rule below `rules` from another node.
    convenience init(settings: WallCueSettings, node: String, rules: Int, logger: Logger,
                     onCue: @escaping @Sendable (WallCue) -> Void) throws {
        try self.init(settings: settings, node: node, logger: logger, onCue: (rules, onCue))
    }

    /// Binds this node's cue socket; cues are taken once `onCue` is given (here or later).
    init(settings: WallCueSettings, node: String, logger: Logger,
         onCue: (rules: Int, take: @Sendable (WallCue) -> Void)?) throws {
        guard let link = settings.link(forNode: node) else {
            throw WallCueError(message: "wall.sync.cue.nodes does not name this node \"\(node)\" (--node, else the host name)")
        }
        self.settings = settings
        self.logger = logger
        let state = state, lead = settings.lead
        let handlers = Handlers(cue: onCue)
        self.handlers = handlers
        var peerNames: [String] = []
        for peer in link.peers { peerNames.append(settings.nodes.first { $0.address == peer }?.name ?? "\(peer)") }
        let names = peerNames
        socket = try CueSocket(listen: link.listen, peers: link.peers, largest: max(WallCue.largestPacket, WallSetMessage.largestPacket),
                               logger: logger) { bytes, peer in
            if WallSetMessage.looksLikeOne(bytes), let take = handlers.set.withLock({ $0 }) {
                return take(bytes, names[peer])
            }
            guard let handler = handlers.cue.withLock({ $0 }), let cue = WallCue.parse(bytes, rules: handler.rules) else {
                Self.note(state, logger, \.malformed, once: "malformed", "datagram on the wall cue socket that is not a cue ignored (further ones are counted, not logged)",
                          ["from": names[peer], "bytes": "\(bytes.count)"])
                return
            }
            let now = WallTime.now()
            let ahead = Double(cue.at - now) / 1e9
            guard ahead >= -Self.tolerance, ahead <= lead + Self.tolerance else {
                Self.note(state, logger, \.refused, once: "refused", "wall cue refused: its time is far from this node's clock (are the clocks in sync?); further ones are counted, not logged",
                          ["from": names[peer], "ahead_s": ahead.formatted(decimals: 3)])
                return
            }
            guard state.withLock({ s in
                guard s.seen.isNew(cue, from: names[peer]) else {
                    s.counters.duplicates += 1
                    return false
                }
                s.counters.received += 1
                return true
            }) else { return }
            logger.info("wall cue", ["from": names[peer], "trigger": "\(cue.rule)", "sequence": "\(cue.sequence)",
                                     "cue_at": cue.at.unixSeconds.formatted(decimals: 6), "ahead_ms": (ahead * 1000).formatted(decimals: 2)])
            handler.take(cue)
        }
        logger.info("wall cues listening", ["address": "\(link.listen)", "port": "\(socket.boundPort)",
                                            "peers": names.joined(separator: ","), "lead_s": lead.formatted(decimals: 3)])
    }

    /// A cue for rule `rule` at the lead from now, sent to the other nodes; returns its time.
    func send(rule: Int) -> WallTime {
        let at = WallTime.now() + Int64(settings.lead * 1e9)
        let sequence = state.withLock { s in
            s.sequence &+= 1
            s.counters.sent += 1
            return s.sequence
        }
        let bytes = WallCue(sequence: sequence, rule: rule, at: at).encoded
        var failures = socket.sendToPeers(bytes)
        failures += socket.sendToPeers(bytes)
        for (peer, error) in failures {
            Self.note(state, logger, nil, once: "send \(peer)", "wall cue could not be sent (further failures are not logged)", ["error": "\(error)"])
        }
        logger.info("wall cue sent", ["trigger": "\(rule)", "sequence": "\(sequence)", "cue_at": at.unixSeconds.formatted(decimals: 6)])
        return at
    }

    /// A cut made past its one-vsync window (the cue came late, or the output was behind).
    func late(rule: Int, at: WallTime, by nanoseconds: Int64) {
        state.withLock { $0.counters.late += 1 }
        logger.warning("wall cue cut late", ["trigger": "\(rule)", "cue_at": at.unixSeconds.formatted(decimals: 6),
                                             "late_ms": (Double(nanoseconds) / 1e6).formatted(decimals: 2)])
    }

    var counters: Counters { state.withLock { $0.counters } }

    func stop() { socket.stop() }

    /// Counts (where `counter` is given) and logs `message` the first time `key` comes.
    static func note(_ state: Shared, _ logger: Logger, _ counter: WritableKeyPath<Counters, Int>?, once key: String,
                     _ message: String, _ fields: KeyValuePairs<String, String>) {
        let first = state.withLock { s in
            if let counter { s.counters[keyPath: counter] += 1 }
            return s.logged.insert(key).inserted
        }
        if first { logger.warning(message, fields) }
    }
}

struct WallCueError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
