import Foundation

/// A player of a queue of items (`AVQueuePlayer`): the current item is the first; with
/// `.advance` (the default) a finished item leaves the queue and the next one starts on the vsync
/// right after it, with no gap.
public final class QueuePlayer: Player, @unchecked Sendable {
    public init(items: [PlayerItem] = [], logger: Logger = Logger(level: .error), decodeAhead: Int = 6) {
        super.init(isQueuePlayer: true, logger: logger, decodeAhead: decodeAhead)
        for item in items { try? insert(item, after: nil) }
    }

    /// The queue, current item first.
    public func items() -> [PlayerItem] { withLock { queue } }

    /// False when `item` is already queued (or in another player), or `after` is not queued.
    public func canInsert(_ item: PlayerItem, after: PlayerItem?) -> Bool {
        withLock { canInsertLocked(item, after: after) }
    }

    private func canInsertLocked(_ item: PlayerItem, after: PlayerItem?) -> Bool {
        if queue.contains(where: { $0 === item }) { return false }
        if let owner = item.owner, owner !== self { return false }
        if let after, !queue.contains(where: { $0 === after }) { return false }
        return true
    }

    /// Puts `item` right behind `after` (nil: at the end). The current item does not change unless
    /// the queue was empty.
    public func insert(_ item: PlayerItem, after: PlayerItem?) throws {
        try locked { outbox in
            guard canInsertLocked(item, after: after) else { throw PlayerError.itemCannotBeInserted }
            insertLocked(item, at: after.flatMap { a in queue.firstIndex { $0 === a }.map { $0 + 1 } } ?? queue.count, &outbox)
        }
    }

    func insertLocked(_ item: PlayerItem, at index: Int, _ outbox: inout Outbox) {
        let wasEmpty = queue.isEmpty
        queue.insert(item, at: index)
        item.owner = self
        item.attached(to: self)
        if wasEmpty || index == 0 { currentItemChangedLocked(&outbox) }
    }

    /// Removes `item`; removing the current item is `advanceToNextItem()`.
    public func remove(_ item: PlayerItem) {
        locked { outbox in removeLocked(item, &outbox) }
    }

    func removeLocked(_ item: PlayerItem, _ outbox: inout Outbox) {
        guard let index = queue.firstIndex(where: { $0 === item }) else { return }
        if index == 0 { stopCurrentRunLocked(reason: "stop", &outbox) }
        queue.remove(at: index)
        item.owner = nil
        item.preroll?.stop()
        item.preroll = nil
        if index == 0 { currentItemChangedLocked(&outbox) }
    }

    /// Ends the current item now and plays the next one.
    public func advanceToNextItem() {
        locked { outbox in
            guard let current = queue.first else { return }
            removeLocked(current, &outbox)
            // A looper replaces the replica that left, as at its end.
            for looper in loopers { looper.looper?.itemLeftLocked(current, &outbox) }
        }
    }

    /// Empties the queue and stops playback.
    public func removeAllItems() {
        locked { outbox in
            while let item = queue.last { removeLocked(item, &outbox) }
        }
        pause()
    }
}
