import Foundation
import HTTPServer
import Playback

/// What a node of a clock-synced wall tells the others about its remote M3U's sets, every
/// second over the wall's cue socket: the set it plays (and the wall time it took over, its
/// epoch), and the new set it has whole, if any (and since when). One short ASCII datagram:
/// `marquee-set 1 SENT PLAYING SINCE READY READY_AT` (set ids: 64 hex digits, or `-`; times:
/// Unix nanoseconds, 0 for none).
struct WallSetMessage: Sendable, Equatable {
    var sent: WallTime
    /// The set played (nil: none yet), and when it took over (nil: it plays on the config's epoch).
    var playing: String?
    var since: WallTime?
    /// A new set whole here (every entry cached and verified), and since when.
    var ready: String?
    var readyAt: WallTime?

    static let magic = "marquee-set"
    static let version = "1"
    /// Longer datagrams are not set messages (the longest is about 190 bytes).
    static let largestPacket = 256

    var encoded: [UInt8] {
        let fields = [Self.magic, Self.version, "\(sent.nanoseconds)", playing ?? "-", "\(since?.nanoseconds ?? 0)",
                      ready ?? "-", "\(readyAt?.nanoseconds ?? 0)"]
        return Array(fields.joined(separator: " ").utf8)
    }

    /// A set's id: the SHA-256 of its list's bytes, 64 lowercase hex digits.
    static func isSetID<S: StringProtocol>(_ text: S) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    static func setID(of bytes: Data) -> String { hexString(sha256(Array(bytes))) }

    /// Parses a datagram; nil for anything that is not a set message of this version (numbers are
    /// range-checked by their parsers: nothing here can trap).
    static func parse(_ bytes: [UInt8]) -> WallSetMessage? {
        guard bytes.count <= largestPacket, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 7, fields[0] == magic, fields[1] == version,
              let sent = Int64(fields[2]), sent > 0, let since = Int64(fields[4]), since >= 0,
              let readyAt = Int64(fields[6]), readyAt >= 0 else { return nil }
        func id(_ field: Substring) -> String?? {
            if field == "-" { return .some(nil) }
            return isSetID(field) ? .some(String(field)) : nil
        }
        guard let playing = id(fields[3]), let ready = id(fields[5]) else { return nil }
        // A ready set has its time; none has none.
        guard (ready == nil) == (readyAt == 0), playing != nil || since == 0 else { return nil }
        return WallSetMessage(sent: WallTime(nanoseconds: sent), playing: playing, since: since > 0 ? WallTime(nanoseconds: since) : nil,
                              ready: ready, readyAt: readyAt > 0 ? WallTime(nanoseconds: readyAt) : nil)
    }

    /// Whether a datagram is meant as one (to tell it from a trigger cue on the same socket).
    static func looksLikeOne(_ bytes: [UInt8]) -> Bool { bytes.starts(with: Array((magic + " ").utf8)) }
}

/// When a clock-synced wall's nodes switch to a new set of their remote M3U: no node switches on
/// its own. Each says which new set it has whole (`WallSetMessage`, every second: UDP may lose
/// some); once every node of the wall has the same one, each works out the switch time from what
/// all of them know alike, the latest of their ready times plus `margin`, rounded up to a whole
/// second, and all switch on the vsync of that time; the new set plays with it as its epoch. A
/// node that hears another already plays the set it has whole (it restarted, or was late) takes
/// that switch time. A value driven by the caller's wall times, so tests run it on virtual ones.
struct WallSetAgreement: Sendable {
    struct Agreed: Sendable, Equatable {
        let id: String
        let at: WallTime
    }
    enum Reception: Sendable, Equatable {
        case taken, malformed, stranger, farOff
    }
    struct Counters: Sendable, Equatable {
        var sent = 0, received = 0, malformed = 0, strangers = 0, farOff = 0
    }

    /// This node, and the wall's others.
    let node: String
    let peers: [String]
    /// The config's epoch: where a set plays that took over with no agreement (`since` nil).
    let epoch: WallTime
    /// Time from the last node's readiness to the switch: repeats lost in the meantime (one a
    /// second) still reach everyone, and every node has the new set probed and queued.
    static let margin: Int64 = 3_000_000_000
    /// How often a node says where it stands.
    static let every: Int64 = 1_000_000_000
    /// A message sent further than this from the clock here is refused (the clocks disagree, or
    /// it is stale), as are set times more than this after its sending.
    static let tolerance: Int64 = 1_000_000_000

    private(set) var playing: String?
    private(set) var since: WallTime?
    private(set) var ready: (id: String, at: WallTime)?
    /// The last message heard from each peer.
    private(set) var heard: [String: WallSetMessage] = [:]
    private(set) var agreed: Agreed?
    private(set) var counters = Counters()
    private var lastSent: WallTime?

    init(node: String, nodes: [String], epoch: WallTime, playing: String?, since: WallTime?) {
        self.node = node
        self.epoch = epoch
        peers = nodes.filter { $0 != node }
        (self.playing, self.since) = (playing, since)
    }

    /// The switch time for sets whose last node had it at `lastReady`.
    static func switchTime(lastReady: WallTime) -> WallTime {
        ClockSync.gridPoint(after: lastReady + margin, grid: 1_000_000_000)
    }

    /// The new set this node has whole now (nil: none); its ready time is the first `now` it was told.
    mutating func haveSet(_ id: String?, now: WallTime) {
        // The set playing is no new set (a copy kept, or a switch the playlist could not record).
        guard id != ready?.id, id != playing else { return }
        // A set agreed on stays: the others switch to it at its time (the playlist keeps it).
        if let agreed, id != agreed.id { return }
        ready = id.map { ($0, now) }
    }

    /// A datagram from `peer` (a name; one not of the wall is a stranger). Never traps.
    @discardableResult
    mutating func received(_ bytes: [UInt8], from peer: String, now: WallTime) -> Reception {
        guard peers.contains(peer) else {
            counters.strangers += 1
            return .stranger
        }
        guard let message = WallSetMessage.parse(bytes) else {
            counters.malformed += 1
            return .malformed
        }
        let sentBy = message.sent + Self.tolerance
        guard abs(message.sent - now) <= Self.tolerance, (message.since.map { $0 <= sentBy } ?? true),
              (message.readyAt.map { $0 <= sentBy } ?? true) else {
            counters.farOff += 1
            return .farOff
        }
        // An older message than one heard (reordered) says nothing new.
        if let last = heard[peer], last.sent > message.sent { return .taken }
        counters.received += 1
        heard[peer] = message
        return .taken
    }

    /// The switch agreed on, once there is one (the same on every node).
    mutating func decide() -> Agreed? {
        if let agreed { return agreed }
        guard let ready else { return nil }
        // Another node plays it already (this one restarted, or was late): its switch time, or the
        // config's epoch where it plays the set with no agreement (a copy without its record). The
        // latest of them where several do: the same on every node, whatever order they were heard in.
        let playingIt = peers.compactMap { heard[$0] }.filter { $0.playing == ready.id }.map { $0.since ?? epoch }
        if let since = playingIt.max() {
            agreed = Agreed(id: ready.id, at: since)
            return agreed
        }
        var last = ready.at
        for peer in peers {
            guard let message = heard[peer], message.ready == ready.id, let at = message.readyAt else { return nil }
            last = max(last, at)
        }
        agreed = Agreed(id: ready.id, at: Self.switchTime(lastReady: last))
        return agreed
    }

    /// This node now plays `id` from `at`.
    mutating func switched(to id: String, at: WallTime) {
        (playing, since) = (id, at)
        ready = nil
        agreed = nil
    }

    /// Gives up an agreement the playlist can no longer keep (its set was replaced): logged by the caller.
    mutating func forget() {
        agreed = nil
        ready = nil
    }

    /// The message to send now, or nil when one went out within `every`.
    mutating func due(now: WallTime) -> WallSetMessage? {
        if let lastSent, now - lastSent < Self.every, now >= lastSent { return nil }
        lastSent = now
        counters.sent += 1
        return WallSetMessage(sent: now, playing: playing, since: since, ready: ready?.id, readyAt: ready?.at)
    }
}
