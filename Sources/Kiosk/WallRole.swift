/// Which part of a node's wall a session plays, and so where it reports: one value for what was
/// told apart by an output slot, a region rank and the status written to.
enum WallRole {
    /// The node's first output (the session `runKiosk` makes): its status is the node's, and it
    /// leads the sessions of the node's other outputs where it has any.
    case leader
    /// Another wall output of this node (`slot` > 0): it reports its output in `reportsTo`
    /// (its leader's status); its own playlist state stays private.
    case follower(slot: Int, reportsTo: KioskStatus)
    /// A further region (`rank` > 0) of a mosaic output `slot`: the session of that output
    /// presents it and reports the output once.
    case region(slot: Int, rank: Int, reportsTo: KioskStatus)

    /// The node's wall output this session plays (`status.outputs[slot]`).
    var slot: Int {
        switch self {
        case .leader: 0
        case .follower(let slot, _), .region(let slot, _, _): slot
        }
    }

    /// Which of its output's regions it plays (0 but on a mosaic output's further regions).
    var regionRank: Int {
        if case .region(_, let rank, _) = self { return rank }
        return 0
    }

    /// Whether it reports its output (a mosaic's further regions leave that to their output's session).
    var reportsOutput: Bool { regionRank == 0 }

    /// Whether its status is the node's (the playlist, schedule and overlays the socket reports).
    var isLeader: Bool {
        if case .leader = self { return true }
        return false
    }

    /// `unselected` (a whole config) playing schedule entry `entry` (nil: the top-level
    /// playlist), narrowed to what this role's output and region show on `node`.
    func config(_ unselected: KioskConfig, entry: Int?, node: String) -> KioskConfig {
        unselected.playing(entry: entry).forWallOutput(slot, node: node, regionRank: regionRank)
    }

    /// Where its output reports: `own` (the session's status) for the leader, the status it was
    /// given otherwise.
    func outputStatus(own: KioskStatus) -> KioskStatus {
        switch self {
        case .leader: own
        case .follower(_, let status), .region(_, _, let status): status
        }
    }
}
