import Foundation
import Playback

extension KioskSession {
    /// `network.cache`'s downloads for `config`'s remote files, under way (nil: no cache, or its
    /// folder cannot be made: logged, and those items stream as uncached ones do).
    static func startCache(_ config: KioskConfig, reporter: PlaybackReporter, logger: Logger) -> RemoteMediaCache? {
        let cache: RemoteMediaCache?
        do {
            cache = try RemoteMediaCache.make(config, logger: logger)
        } catch {
            logger.error("network.cache cannot be used; remote files stream", ["error": "\(error)"])
            return nil
        }
        guard let cache else { return nil }
        cache.onHealth.withLock { $0 = { url, reason in reporter.remoteFileHealth(uri: url, reason: reason) } }
        return cache
    }

    /// Cached files' new copies (first ones, or changed) are taken at the next item boundary:
    /// the playlist is queued again from the item after the current one, with new assets (an
    /// asset keeps the file it opened).
    func cachedCopySwapped() {
        let config = state.withLock { $0.config }
        let count = config.playlist.count
        guard count > 0, !isStopped else { return }
        let next = player.currentItem?.playlistIndex.map { ($0 + 1) % count } ?? 0
        driver.start(config, from: next, afterCurrentItem: true)
    }
}
