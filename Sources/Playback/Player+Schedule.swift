import Foundation

/// Where the item playing now ends on the vsync grid, and ending it early on a given vsync: what a
/// schedule needs to change playlists at an item boundary or at an exact moment without a gap
/// (the next item in the queue decodes ahead, so its first frame is due on the vsync after).
extension Player {
    /// Where the current item ends.
    public enum ItemEnd: Sendable, Equatable {
        /// Nothing plays yet, or the current item has not shown its first frame: not known yet.
        case notStarted
        /// It plays, but its length is not known (or playback is not at rate 1).
        case unknown
        /// The vsync its successor's first frame is due on.
        case atVsync(Int64)
    }

    /// Where the item playing now ends (its length, or its `forwardPlaybackEndTime`).
    public func currentItemEnd() -> ItemEnd {
        withLock {
            guard let run, !run.ended, let origin = run.origin, run.shownFrames > 0, anchor != nil else { return .notStarted }
            guard _rate == 1 else { return .unknown }
            var end: MediaTime? = run.item.duration.isNumeric ? run.item.duration : nil
            let fpet = run.item.forwardPlaybackEndTime
            if fpet.isNumeric { end = min(end ?? fpet, fpet) }
            guard let end else { return .unknown }
            let length = end - origin
            return .atVsync(vsyncOf(run.start + (length > .zero ? length : .zero)))
        }
    }

    /// Ends the item playing now so that the next item's first frame is due on vsync `vsync`: its
    /// `forwardPlaybackEndTime` becomes its time there (a frame decoded past it is not shown).
    /// False, changing nothing, when that cannot be: nothing shown of the item yet, `vsync` not
    /// after the last vsync asked for, not at rate 1, or the item ends before then anyway.
    @discardableResult
    public func endCurrentItem(atVsync vsync: Int64) -> Bool {
        withLock {
            guard let run, !run.ended, let origin = run.origin, run.shownFrames > 0, anchor != nil, _rate == 1,
                  let lastVsync, vsync > lastVsync else { return false }
            let elapsed = position(atVsync: vsync) - run.start
            guard elapsed > .zero else { return false }
            let cut = origin + elapsed
            let fpet = run.item.forwardPlaybackEndTime
            if fpet.isNumeric && fpet <= cut { return false }
            if run.item.duration.isNumeric && run.item.duration <= cut { return false }
            run.item.forwardPlaybackEndTime = cut
            // A frame already taken from the decode thread past the cut is not shown: the run ends there.
            if case .frame(let frame, _)? = pending, frame.pts >= cut {
                pending = .end(at: endPosition(run), error: nil)
            }
            return true
        }
    }
}
