import Foundation
import Playback
import Synchronization

/// What a session changes as it plays (commands, reloads, schedule changes, the player's
/// reports), behind one lock that the session's parts share. Never call into the player with it
/// locked: the presentation thread holds the player's lock while it waits for a decode thread,
/// and decode threads report here.
final class SessionState: Sendable {
    struct Fields {
        var config: KioskConfig
        /// `config` before the choice of this output's region (what followers start from).
        var unselectedConfig: KioskConfig
        /// The name of the output presenting now (nil before `present`).
        var outputName: String?
        /// The sessions presenting this node's other wall outputs, and the further regions of a
        /// mosaic output.
        var followers: [KioskSession] = []
        /// The schedule entry whose playlist plays (or is queued to), nil: the top-level playlist.
        var scheduleEntry: Int?
        /// Set by a reload: the presentation thread's schedule runner takes the new schedule.
        var scheduleReloaded = false
        /// The system-clock time of the vsync last presented, as the schedule reads it (nil before).
        var scheduleWallTime: WallTime?
    }
    private let fields: Mutex<Fields>

    init(_ fields: Fields) { self.fields = Mutex(fields) }

    func withLock<Result>(_ body: (inout Fields) throws -> Result) rethrows -> Result {
        try fields.withLock { try body(&$0) }
    }
}
