import Foundation
import Media
import Playback
import Synchronization

/// Queues a config's playlist on a player: looped by a `PlayerLooper` (its items made when due),
/// or once; a new playlist takes over at once or at the next item boundary.
final class PlaylistDriver: Sendable {
    let player: QueuePlayer
    let backend: any MediaBackend
    /// `network.cache`: told the remote files of each playlist queued (nil: none cached).
    let cache: RemoteMediaCache?
    /// The looper of the playlist queued last (nil: it plays once, or none was queued).
    private let looper = Mutex<PlayerLooper?>(nil)

    init(player: QueuePlayer, backend: any MediaBackend, cache: RemoteMediaCache? = nil) {
        self.player = player
        self.backend = backend
        self.cache = cache
    }

    /// How many times the looped playlist came round (0 without a looper).
    var loopCount: Int { looper.withLock { $0 }?.loopCount ?? 0 }

    /// The player item of `config`'s playlist entry `index`.
    static func makeItem(_ config: KioskConfig, _ index: Int, backend: any MediaBackend) -> PlayerItem {
        let entry = config.playlist[index]
        let item = PlayerItem(asset: Asset(url: KioskConfig.mediaURL(entry.path), backend: backend))
        item.playlistIndex = index
        item.transition = config.transition(into: entry)
        if let end = entry.end ?? entry.liveDuration { item.forwardPlaybackEndTime = MediaTime(seconds: end, preferredTimescale: 90_000) }
        if let start = entry.start, start > 0 {
            item.seek(to: MediaTime(seconds: start, preferredTimescale: 90_000)) { _ in }
        }
        return item
    }

    /// The playlist from entry `first` round to the one before it (shuffled when it says), or the
    /// entries in `range`, as template items made when due: a million-entry list costs the looper
    /// no item and no asset per entry. In order, positions are counted rather than listed.
    func templates(_ config: KioskConfig, from first: Int = 0, range: Range<Int>? = nil) -> PlayerLooper.TemplateSource {
        let backend = backend
        if let range {
            return PlayerLooper.TemplateSource(count: range.count) { Self.makeItem(config, range.lowerBound + $0, backend: backend) }
        }
        if config.shuffle {
            let order = Self.playOrder(config, from: first)
            return PlayerLooper.TemplateSource(count: order.count) { Self.makeItem(config, order[$0], backend: backend) }
        }
        let count = config.playlist.count
        return PlayerLooper.TemplateSource(count: count) { Self.makeItem(config, (first + $0) % count, backend: backend) }
    }

    /// The playlist's positions from `first` round to the one before it, shuffled when it says.
    static func playOrder(_ config: KioskConfig, from first: Int) -> [Int] {
        let count = config.playlist.count
        var order = Array(first..<count) + Array(0..<min(first, count))
        if config.shuffle { order.shuffle() }
        return order
    }

    /// Queues `config`'s playlist from item `first`: looped, or once. With `afterCurrentItem` the
    /// item playing now finishes first (a reload takes over at the next item boundary).
    /// `replacingQueued`: items queued without a looper (a playlist without loop) behind the
    /// current one leave the queue first (a schedule's change of playlist).
    func start(_ config: KioskConfig, from first: Int = 0, afterCurrentItem: Bool, replacingQueued: Bool = false) {
        cache?.want(config.cachedRemoteURLs)
        let old = looper.withLock { looper -> PlayerLooper? in
            defer { looper = nil }
            return looper
        }
        old?.disableLooping()
        if config.loop {
            let newLooper = PlayerLooper(player: player, templates: templates(config, from: first), afterCurrentItem: afterCurrentItem)
            looper.withLock { $0 = newLooper }
        } else {
            var after = afterCurrentItem ? player.currentItem : nil
            if !afterCurrentItem { player.removeAllItems() }
            if replacingQueued, afterCurrentItem {
                for item in player.items().dropFirst() { player.remove(item) }
            }
            for item in Self.playOrder(config, from: first).map({ Self.makeItem(config, $0, backend: backend) }) {
                try? player.insert(item, after: after)
                after = item
            }
        }
    }

    /// Entries `range` of `config` join the end of the looped playlist, where one loops; false
    /// (nothing changed) where none does.
    func appendLooped(_ config: KioskConfig, range: Range<Int>) -> Bool {
        guard let looper = looper.withLock({ $0 }) else { return false }
        cache?.want(config.cachedRemoteURLs)
        looper.append(templates: templates(config, range: range))
        return true
    }

    /// `steps` items on (back when negative) in `config`'s playlist: one step on keeps the next
    /// item's preroll; any other step queues the playlist from the target item, so the skipped
    /// items open no decoder.
    func skip(_ steps: Int, in config: KioskConfig) {
        guard steps != 0 else { return }
        if steps == 1 { return player.advanceToNextItem() }
        let count = config.playlist.count
        guard count > 0 else { return }
        let current = player.currentItem?.playlistIndex ?? 0
        let target = ((current + steps % count) % count + count) % count
        start(config, from: target, afterCurrentItem: true)
        player.advanceToNextItem()
    }

    /// Cached files' new copies (first ones, or changed) are taken at the next item boundary:
    /// the playlist is queued again from the item after the current one, with new assets (an
    /// asset keeps the file it opened).
    func takeNewCopies(_ config: KioskConfig) {
        let count = config.playlist.count
        guard count > 0 else { return }
        let next = player.currentItem?.playlistIndex.map { ($0 + 1) % count } ?? 0
        start(config, from: next, afterCurrentItem: true)
    }
}
