import Foundation
import Media
import Playback
import Synchronization

extension KioskSession {
    // MARK: What the player says

    func watchPlayer() {
        player.consumeEvents(onThread: "marquee-item-events") { [weak self] event in
            guard let self else { return }
            reporter.itemEvent(event, loop: driver.loopCount)
        }
        player.consumeChanges(onThread: "marquee-player-changes") { [weak self] change in self?.playerChange(change) }
        // Time observations come on the player's callback thread, which should not wait here: the
        // latest one is handed to a status thread (one it has not read yet is superseded).
        let observed = Monitor<MediaTime?>(nil)
        _ = try? player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 4)) { time in
            observed.update { $0 = time }
        }
        startThread(named: "marquee-status") { [weak self] in
            var lastRead: ContinuousClock.Instant?
            while true {
                if let self, lastRead.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                    // A playlist with nothing in it (an empty folder, an M3U not there yet) is read
                    // again every second; a folder once at start, to log what it leaves out.
                    let first = lastRead == nil
                    lastRead = .now
                    let config = state.withLock { s in s.config }
                    if case .directory = config.playlistOrigin, first { rescanPlaylist() }
                    else if config.playlistUnread, !rescanning.load(ordering: .relaxed) {
                        // A config's M3U left for now (a million lines take seconds): read on a
                        // thread of its own, so this one goes on updating the status.
                        startThread(named: "marquee-load") { [weak self] in self?.rescanPlaylist() }
                    } else if config.playlistOrigin != .list && config.playlist.isEmpty { rescanPlaylist() }
                }
                // The next observation, in slices of a second, until the session goes away.
                let time = observed.wait(until: { $0 != nil }, timeout: 1) { time, _ in
                    defer { time = nil }
                    return time
                }
                guard let self else { return }
                if let time {
                    reporter.timeObserved(time, item: player.currentItem, paused: player.rate == 0, stats: player.stats)
                }
            }
        }
    }

    func playerChange(_ change: Player.Change) {
        guard case .currentItem(let item) = change else { return }
        let loop = driver.loopCount
        if reporter.beginsLoopPass(loop) { rescanPlaylist() }
        reporter.itemChanged(to: item, loop: loop)
    }

    /// A playlist read from a folder or an M3U file is read again at every loop pass; when it has
    /// changed, the new list takes over at the next item boundary.
    func rescanPlaylist() {
        // One reader at a time: the other one's result is as new.
        guard rescanning.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { rescanning.store(false, ordering: .releasing) }
        var current = state.withLock { s in s.config }
        guard current.playlistOrigin != .list else { return }
        // A long list not read yet: its first entries play while the rest is read.
        if current.playlistUnread, let head = playHead(of: current) { current = head }
        let items: [KioskConfig.Item]
        var skipped: [SkippedEntry] = []
        do {
            items = try expandPlaylist(current.playlistOrigin, skipped: &skipped)
            reporter.reportSkipped(skipped, origin: current.playlistOrigin)
        } catch {
            // Logged once per reason: an empty folder is read every second until files come.
            let message = error.message
            let first = state.withLock { s -> Bool in
                defer { s.loggedPlaylistProblem = message }
                return s.loggedPlaylistProblem != message
            }
            if current.playlist.isEmpty {
                status.update { $0.playlistProblem = message }
                if first { logger.warning("nothing to play: the playlist cannot be read; it is read again every second", ["error": message]) }
            } else if first {
                logger.warning("cannot read the playlist again; the old one keeps playing", ["error": message])
            }
            return
        }
        state.withLock { s in s.loggedPlaylistProblem = nil }
        guard current.playlistUnread || items.map(\.path) != current.playlist.map(\.path) else { return }
        var changed = current
        changed.playlist = items
        changed.playlistUnread = false
        let head = current.playlist.count
        if current.playlistUnread, head > 0, head < items.count, current.loop, !current.shuffle,
           items[..<head].map(\.path) == current.playlist.map(\.path) {
            // The head plays: the rest joins the end of the looped list, nothing queued changes.
            guard state.withLock({ s -> Bool in
                guard s.config.playlistUnread, s.config.playlist.count == head, s.config.playlistOrigin == current.playlistOrigin else { return false }
                s.config = changed
                return true
            }) else { return }
            // Numbered outside the status lock (the presenting thread takes it every vsync).
            var rest = PlaybackReporter.statusItems(changed, range: head..<items.count)
            var firstID = 0
            status.update { s in
                firstID = s.nextEntryID
                s.nextEntryID += rest.count
            }
            for i in rest.indices { rest[i].id = firstID + i }
            status.update { [rest] s in s.items.append(contentsOf: rest) }
            _ = driver.appendLooped(changed, range: head..<items.count)
            logger.info("playlist read", ["items": "\(items.count)"])
            return
        }
        // Only if no reload, command or schedule change replaced the playlist meanwhile.
        guard state.withLock({ s -> Bool in
            guard s.config.playlist.map(\.path) == current.playlist.map(\.path), s.config.playlistOrigin == current.playlistOrigin,
                  s.config.playlistUnread == current.playlistUnread else { return false }
            s.config = changed
            return true
        }) else { return }
        status.update {
            $0.replaceItems(PlaybackReporter.statusItems(changed))
            $0.playlistProblem = nil
        }
        driver.start(changed, afterCurrentItem: true)
        logger.info(current.playlist.isEmpty ? "playlist has items now; playing" : "playlist changed on disk; the new one starts at the next item boundary",
                    ["items": "\(items.count)"])
    }


    /// How many entries of a long list not read yet (`KioskConfig.playlistUnread`) play while the
    /// rest is read.
    static let playlistHead = 1000

    /// Reads the first `playlistHead` entries of `config`'s unread M3U and plays them (looped,
    /// in order; a shuffled or unlooped list waits for the whole). Returns the config they play
    /// as (still unread), or nil when nothing was started.
    func playHead(of config: KioskConfig) -> KioskConfig? {
        guard config.loop, !config.shuffle, config.playlist.isEmpty else { return nil }
        var skipped: [SkippedEntry] = []
        guard let head = try? expandPlaylist(config.playlistOrigin, skipped: &skipped, first: Self.playlistHead),
              !head.isEmpty else { return nil }
        var started = config
        started.playlist = head
        // Only if nothing replaced the playlist meanwhile.
        guard state.withLock({ s -> Bool in
            guard s.config.playlistUnread, s.config.playlist.isEmpty, s.config.playlistOrigin == config.playlistOrigin else { return false }
            s.config = started
            return true
        }) else { return nil }
        status.update {
            $0.replaceItems(PlaybackReporter.statusItems(started))
            $0.playlistProblem = nil
        }
        driver.start(started, afterCurrentItem: true)
        logger.info("playlist being read; its first entries play", ["items": "\(head.count)"])
        return started
    }
}
