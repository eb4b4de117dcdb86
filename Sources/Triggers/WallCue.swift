import Playback

/// A wall's trigger cue: "rule `rule` plays from the first vsync at or after wall time `at`",
/// sent by the node that was pressed to the wall's other nodes (`wall.sync.cue`). One short
/// ASCII datagram: `marquee-cue 1 SEQ RULE AT_NS`.
public struct WallCue: Sendable, Equatable {
    /// The sender's count of cues, for telling a datagram sent twice from a new cue.
    public var sequence: UInt64
    public var rule: Int
    public var at: WallTime

    public init(sequence: UInt64, rule: Int, at: WallTime) {
        self.sequence = sequence
        self.rule = rule
        self.at = at
    }

    static let magic = "marquee-cue"
    static let version = "1"
    /// Longer datagrams are not cues.
    public static let largestPacket = 96

    public var encoded: [UInt8] { Array("\(Self.magic) \(Self.version) \(sequence) \(rule) \(at.nanoseconds)".utf8) }

    /// Parses a datagram; nil for anything that is not a cue of this version with a rule below
    /// `rules` (the numbers are range-checked by their parsers: nothing here can trap).
    public static func parse(_ bytes: [UInt8], rules: Int) -> WallCue? {
        guard bytes.count <= largestPacket, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0] == magic, fields[1] == version,
              let sequence = UInt64(fields[2]), let rule = Int(fields[3]), (0..<rules).contains(rule),
              let at = Int64(fields[4]), at > 0 else { return nil }
        return WallCue(sequence: sequence, rule: rule, at: WallTime(nanoseconds: at))
    }
}

/// Cuts waiting for their wall time: each is due on the first vsync whose wall time is at or
/// after its `at`, so that nodes whose vsyncs are out of phase still cut within the same one-vsync
/// window [at, at + one vsync). A cut whose vsync is past that window (the cue came too late, or
/// the output was behind) is still made at once, and marked late. Asked once per vsync, before its
/// picture is: a value driven by the caller's vsync wall times, so tests run it on virtual ones.
public struct CueSchedule<Payload>: Sendable where Payload: Sendable {
    public struct Cut: Sendable {
        public let at: WallTime
        public let payload: Payload
        /// Nanoseconds the vsync it lands on is past the end of its window (nil: on time).
        public let lateBy: Int64?
    }

    /// Cuts waiting, earliest first.
    public private(set) var waiting: [(at: WallTime, payload: Payload)] = []
    /// More than this many waiting is a flood: the newest are refused.
    public static var limit: Int { 16 }

    public init() {}

    /// Adds a cut at `at`; false (refused) when `limit` are waiting already.
    public mutating func add(at: WallTime, _ payload: Payload) -> Bool {
        guard waiting.count < Self.limit else { return false }
        let index = waiting.firstIndex { $0.at > at } ?? waiting.count
        waiting.insert((at, payload), at: index)
        return true
    }

    /// The cuts due on a vsync of wall time `wall` (nil: a clock with no wall time, where every
    /// waiting cut is due), in order of their `at`; `interval` is one vsync in nanoseconds.
    public mutating func due(vsyncAt wall: WallTime?, interval: Int64) -> [Cut] {
        var cuts: [Cut] = []
        while let first = waiting.first, wall.map({ $0 >= first.at }) ?? true {
            waiting.removeFirst()
            let past = wall.map { $0 - first.at } ?? 0
            cuts.append(Cut(at: first.at, payload: first.payload, lateBy: past >= interval ? past - interval + 1 : nil))
        }
        return cuts
    }
}

/// Which cues a node has taken already: a cue is sent twice (a lost datagram is the usual loss),
/// and the second copy is ignored. Remembers the last `capacity` (sender, sequence, time) triples.
public struct CueDeduplicator: Sendable {
    struct Key: Hashable { let sender: String; let sequence: UInt64; let at: WallTime }
    var recent: [Key] = []
    let capacity: Int

    public init(capacity: Int = 64) { self.capacity = capacity }

    /// True the first time `cue` from `sender` is seen (within the last `capacity`).
    public mutating func isNew(_ cue: WallCue, from sender: String) -> Bool {
        let key = Key(sender: sender, sequence: cue.sequence, at: cue.at)
        guard !recent.contains(key) else { return false }
        recent.append(key)
        if recent.count > capacity { recent.removeFirst(recent.count - capacity) }
        return true
    }
}
