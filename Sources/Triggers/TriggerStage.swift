import Playback
import Synchronization

/// The player side of triggers: each playing rule's target kept prerolled (its first frame decoded,
/// waiting), cut in on a press, and the loop brought back after it.
public final class TriggerStage: @unchecked Sendable {
    // @unchecked: `state` is a Mutex; the player is thread-safe; `makeItems` is immutable.
    public let player: QueuePlayer
    /// Fresh items for a rule's target (each play needs new ones: an item plays once).
    let makeItems: @Sendable (Int) -> [PlayerItem]

    struct State {
        /// Per rule, the items ready to cut in (the first one prerolled).
        var ready: [Int: [PlayerItem]] = [:]
        /// The items cut in that have not left the queue yet. Held, not named by `ObjectIdentifier`:
        /// a freed item's address is soon another item's (a loop's next pass taken for a film).
        var triggered: [PlayerItem] = []
    }
    let state = Mutex(State())

    public init(player: QueuePlayer, makeItems: @escaping @Sendable (Int) -> [PlayerItem]) {
        self.player = player
        self.makeItems = makeItems
    }

    /// Prerolls the targets of `rules` (those not ready yet).
    public func prepare(rules: [Int]) {
        for rule in rules where state.withLock({ $0.ready[rule] == nil }) {
            let items = makeItems(rule)
            guard let first = items.first else { continue }
            player.preroll(first)
            state.withLock { $0.ready[rule] = items }
        }
    }

    /// Whether rule `rule`'s target has its first frame decoded now.
    public func isReady(_ rule: Int) -> Bool { waitUntilReady(rule, timeout: 0) }

    /// Waits up to `timeout` seconds for rule `rule`'s target to have its first frame decoded.
    public func waitUntilReady(_ rule: Int, timeout: Double) -> Bool {
        guard let first = state.withLock({ $0.ready[rule]?.first }) else { return false }
        return player.waitForPreroll(first, timeout: timeout)
    }

    /// Cuts rule `rule`'s target in now; with `prerollAgain` a new set is prerolled for its next
    /// press at once (else `prepare` does it later). False when the target has no items or the
    /// player refused them.
    @discardableResult
    public func play(rule: Int, then: QueuePlayer.CutInReturn, prerollAgain: Bool = true) -> Bool {
        let items = state.withLock { $0.ready.removeValue(forKey: rule) } ?? makeItems(rule)
        guard !items.isEmpty else { return false }
        // Cut from one triggered item to another: the loop item comes back once, not twice.
        let current = player.currentItem
        let replacing = isTriggered(current)
        if replacing { leaveTriggered(advancing: false) }
        // Marked before the cut: the player's report of the new current item finds it triggered.
        state.withLock { s in s.triggered = items + (replacing ? current.map { [$0] } ?? [] : []) }
        do {
            try player.cutIn(items, then: replacing ? .next : then)
        } catch {
            state.withLock { $0.triggered = [] }
            return false
        }
        state.withLock { $0.triggered = items }
        if prerollAgain { prepare(rules: [rule]) }
        return true
    }

    /// Whether `item` is one cut in by a trigger.
    public func isTriggered(_ item: PlayerItem?) -> Bool {
        guard let item else { return false }
        return state.withLock { $0.triggered.contains { $0 === item } }
    }

    /// Leaves the triggered items for what follows them (an idle timeout, a cut to another target).
    public func leave() { leaveTriggered(advancing: true) }

    func leaveTriggered(advancing: Bool) {
        let triggered = state.withLock { s in
            defer { s.triggered = [] }
            return s.triggered
        }
        let queued = player.items()
        for item in queued where triggered.contains(where: { $0 === item }) && item !== queued.first { player.remove(item) }
        if advancing, let first = queued.first, triggered.contains(where: { $0 === first }) { player.advanceToNextItem() }
    }

    /// Stops the prerolls (the session ends, or the rules change).
    public func discardAll() {
        let ready = state.withLock { s in
            defer { s.ready = [:] }
            return s.ready
        }
        for item in ready.values.compactMap(\.first) { player.discardPreroll(item) }
    }
}
