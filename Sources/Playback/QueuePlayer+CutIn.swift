import Foundation

/// Cutting items in on a cue (a visitor's button): the items are decoded ahead of the cue, so their
/// first frame is ready for the vsync after it, and the item they interrupt comes back after them.
extension QueuePlayer {
    /// What plays after cut-in items: the interrupted item from the frame after the last one shown
    /// (`resume`), from its start (`restart`), or the item that was queued after it (`next`).
    public enum CutInReturn: String, Sendable, CaseIterable {
        case resume, restart, next
    }

    /// Decodes `item`'s first frames now, while it is in no queue, so that `cutIn` can show its
    /// first frame on the next vsync. Its decoder stays open until the item plays or
    /// `discardPreroll` ends it. Does nothing for an item already queued or prerolled.
    public func preroll(_ item: PlayerItem) {
        withLock {
            guard item.preroll == nil, item.owner == nil, !queue.contains(where: { $0 === item }) else { return }
            item.preroll = makeFeeder(item, start: .zero, toleranceBefore: .zero, capacity: min(decodeAhead, Self.prerollAhead) + 1)
        }
    }

    /// Stops the decoder `preroll` started for an item that will not be played.
    public func discardPreroll(_ item: PlayerItem) {
        withLock {
            guard !queue.contains(where: { $0 === item }) else { return }
            item.preroll?.stop()
            item.preroll = nil
        }
    }

    /// Whether `item` has first frames decoded (or being decoded) ahead of its play.
    public func isPrerolled(_ item: PlayerItem) -> Bool { withLock { item.preroll != nil } }

    /// Waits up to `timeout` seconds for `item`'s preroll to have decoded its first frame (or its
    /// end); false when it has not by then, or `item` has no preroll.
    public func waitForPreroll(_ item: PlayerItem, timeout: Double) -> Bool {
        guard let feeder = withLock({ item.preroll }) else { return false }
        return feeder.queue.waitForElement(timeout: timeout)
    }

    /// Plays `items` now in place of the current item, then what `then` says. Returns the item
    /// made to bring the interrupted one back (nil with `next`, or when nothing played), or throws
    /// when an item is already queued or belongs to another player.
    @discardableResult
    public func cutIn(_ items: [PlayerItem], then: CutInReturn) throws -> PlayerItem? {
        try locked { outbox in
            for item in items {
                if queue.contains(where: { $0 === item }) { throw PlayerError.itemCannotBeInserted }
                if let owner = item.owner, owner !== self { throw PlayerError.itemInAnotherPlayer }
            }
            guard !items.isEmpty else { return nil }
            let current = queue.first
            var back: PlayerItem?
            if let current, then != .next {
                let item = PlayerItem(asset: current.asset)
                item.playlistIndex = current.playlistIndex
                item.transition = current.transition
                item.forwardPlaybackEndTime = current.forwardPlaybackEndTime
                if then == .resume, let time = resumeTimeLocked(current), time > .zero {
                    item.pendingStart = (time, .zero, nil)
                }
                back = item
            }
            let cut = items + (back.map { [$0] } ?? [])
            for (offset, item) in cut.enumerated() { insertLocked(item, at: (current == nil ? 0 : 1) + offset, &outbox) }
            if let current {
                removeLocked(current, &outbox)
                for looper in loopers { looper.looper?.itemLeftLocked(current, &outbox) }
            }
            return back
        }
    }

    /// Where `item` (the current one) goes on from: the time just past the frame last shown, so
    /// that no frame is shown twice or skipped; its time now when none was shown.
    func resumeTimeLocked(_ item: PlayerItem) -> MediaTime? {
        if let shown, shown.run === run, shown.item === item {
            return shown.frame.pts + shown.frame.duration
        }
        return itemTimeLocked()
    }
}
