import Foundation
import Playback
import Synchronization

/// The control commands on a session's player and playlist: next, previous, skip, play, pause,
/// seek, and `loadfile` / `loadlist` (files become the playlist or join its end; the playlist is
/// then a list: a folder or M3U playlist is no longer read again).
final class PlaybackCommands: Sendable {
    private let state: SessionState
    private let driver: PlaylistDriver
    private let reporter: PlaybackReporter
    private let logger: Logger
    /// Whether the session stopped (a list read meanwhile is not loaded).
    private let isStopped: @Sendable () -> Bool
    private var status: KioskStatus { reporter.status }
    private var events: EventOrder { reporter.events }
    private var player: QueuePlayer { driver.player }
    /// A `loadlist` is being read and loaded (one at a time).
    private let loading = Atomic(false)

    init(state: SessionState, driver: PlaylistDriver, reporter: PlaybackReporter, logger: Logger,
         isStopped: @escaping @Sendable () -> Bool) {
        (self.state, self.driver, self.reporter, self.logger, self.isStopped) = (state, driver, reporter, logger, isStopped)
    }

    /// `steps` items on (back when negative); the item playing ends with reason `stop`.
    func skip(_ steps: Int) {
        events.stopping()
        if steps == 1 { return player.advanceToNextItem() }
        driver.skip(steps, in: state.withLock { s in s.config })
    }

    /// Plays playlist entry `index` (from 0) now.
    func play(_ index: Int) -> KioskCommandResult {
        let config = state.withLock { s in s.config }
        guard config.playlist.indices.contains(index) else { return .failed("no playlist entry \(index)") }
        events.stopping()
        driver.start(config, from: index, afterCurrentItem: true)
        player.advanceToNextItem()
        return .done
    }

    func pause(_ paused: Bool) {
        if paused { player.pause() } else { player.play() }
        status.update { $0.paused = paused }
    }

    /// Seeks to `seconds` into the item (from where it is, when `relative`).
    func seek(_ seconds: Double, relative: Bool) {
        let target = relative ? player.currentTime().seconds + seconds : seconds
        events.send(["event": "seek"], reporter.onEvent)
        player.seek(to: MediaTime(seconds: max(0, target), preferredTimescale: 90_000)) { [reporter] _ in
            reporter.events.send(["event": "playback-restart"], reporter.onEvent)
        }
    }

    /// `loadlist`: reads the M3U file at `path` and loads its entries on a **marquee-load** thread,
    /// one list at a time (another while one loads is refused: a burst of them cannot pile up
    /// lists in memory). Answers at once; the log and the `playlist` property tell the outcome.
    func loadList(_ path: String, append: Bool) -> KioskCommandResult {
        guard loading.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return .failed("a playlist is being loaded; try again once it is (see playlist-count)")
        }
        startThread(named: "marquee-load") { [self] in
            defer { loading.store(false, ordering: .releasing) }
            let started = ContinuousClock.now
            // A long list's first entries load first (a million lines take seconds to read); the
            // rest, read after, joins them. Only the paths are kept: the parsed entries go as soon
            // as they are mapped.
            var skipped: [SkippedEntry] = []
            var loaded = 0
            let paths: [String]
            do {
                let head = try expandPlaylist(.m3u(path), skipped: &skipped, first: PlaylistReader.headLength).map(\.path)
                guard !isStopped() else { return }
                if head.count < PlaylistReader.headLength {
                    paths = head  // the whole list
                } else {
                    _ = load(head, append: append)
                    loaded = head.count
                    paths = try expandPlaylist(.m3u(path)).map(\.path)
                }
            } catch {
                logger.error("loadlist: the list cannot be loaded", ["file": path, "error": "\(error)"])
                return
            }
            guard !isStopped() else { return }
            // A file rewritten between the two reads: its head as first read, the rest as then read.
            if loaded == 0 {
                _ = load(paths, append: append)
            } else if paths.count > loaded {
                _ = load(Array(paths[loaded...]), append: true)
            }
            logger.info("loadlist: loaded", ["file": path, "entries": "\(max(paths.count, loaded))",
                                             "seconds": (ContinuousClock.now - started).seconds.formatted(decimals: 2)])
        }
        return .done
    }

    /// `loadfile`/`loadlist`: `uris` (relative ones from the working folder, as mpv takes them)
    /// become the playlist, from now, or join its end. The playlist is then a list (a folder or
    /// M3U playlist is no longer read again). The new lists are built before any lock is taken:
    /// the presenting thread takes the same locks every vsync, and a million entries take a while.
    func load(_ uris: [String], append: Bool) -> KioskCommandResult {
        let folder = FileManager.default.currentDirectoryPath
        // Entry ids reserved under the lock, given outside it.
        var firstID = 0
        status.update { s in
            firstID = s.nextEntryID
            s.nextEntryID += uris.count
        }
        // The new config and status entries in one pass, each list made once (a million entries:
        // no copies of them between).
        var changed = state.withLock { s in s.config }
        if !append { changed.playlist = [] }
        changed.playlist.reserveCapacity(changed.playlist.count + uris.count)
        var entries: [KioskStatus.Item] = []
        entries.reserveCapacity(uris.count)
        for (offset, uri) in uris.enumerated() {
            let item = KioskConfig.Item(uri: uri, path: uri.hasPrefix("/") ? uri : (folder as NSString).appendingPathComponent(uri))
            changed.playlist.append(item)
            var entry = KioskStatus.Item(uri: item.uri, path: item.path)
            entry.id = firstID + offset
            entries.append(entry)
        }
        changed.playlistOrigin = .list
        changed.playlistUnread = false
        let replaced = changed
        state.withLock { s in
            // Only the playlist: a reload or a schedule change meanwhile keeps its other settings.
            s.config.playlist = replaced.playlist
            s.config.playlistOrigin = .list
            s.config.playlistUnread = false
        }
        status.update { [entries] s in
            s.playlistProblem = nil
            if append { s.items.append(contentsOf: entries) } else { s.items = entries }
        }
        let count = changed.playlist.count
        if append, changed.loop, !changed.shuffle, driver.appendLooped(changed, range: (count - uris.count)..<count) {
            // The looped list grows at its end; what is queued stays (no decoder, no probe per
            // append: a burst of 300 appends costs 300 templates, not 300 queues).
        } else if append {
            // The item playing goes on; the list, now longer, follows it.
            let current = player.currentItem?.playlistIndex ?? -1
            driver.start(changed, from: (current + 1) % count, afterCurrentItem: true)
        } else {
            events.stopping()
            driver.start(changed, from: 0, afterCurrentItem: true)
            player.advanceToNextItem()
        }
        logger.info(append ? "files appended to the playlist" : "playlist replaced", ["files": "\(uris.count)", "items": "\(count)"])
        return .loaded(entryID: firstID)
    }
}
