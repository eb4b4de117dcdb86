import Foundation
import Playback
import Synchronization

/// Reads a session's folder or M3U playlist again (at each loop pass, every second while it is
/// empty, a long list's first entries first) and has a changed list take over at the next item
/// boundary, unless a reload, command or schedule change replaced the playlist meanwhile.
final class PlaylistReader: Sendable {
    /// How many entries of a long list not read yet (`KioskConfig.playlistUnread`) play while the
    /// rest is read.
    static let headLength = 1000
    private let state: SessionState
    private let driver: PlaylistDriver
    private let reporter: PlaybackReporter
    private let logger: Logger
    /// The remote M3U the playlist comes from, if any.
    private let remote: RemotePlaylist?
    private var status: KioskStatus { reporter.status }
    /// A reader is at work (the status thread's or a loop pass's): the other one leaves it, so two
    /// never start the same playlist.
    private let reading = Atomic(false)
    /// Why the playlist could not be read, as last logged (logged once per reason).
    private let loggedProblem = Mutex<String?>(nil)

    init(state: SessionState, driver: PlaylistDriver, reporter: PlaybackReporter, logger: Logger, remote: RemotePlaylist? = nil) {
        (self.state, self.driver, self.reporter, self.logger, self.remote) = (state, driver, reporter, logger, remote)
    }

    var isReading: Bool { reading.load(ordering: .relaxed) }

    /// A playlist read from a folder or an M3U file is read again at every loop pass; when it has
    /// changed, the new list takes over at the next item boundary.
    func read() {
        // One reader at a time: the other one's result is as new.
        guard reading.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { reading.store(false, ordering: .releasing) }
        var current = state.withLock { s in s.config }
        guard current.playlistOrigin != .list else { return }
        // A long list not read yet: its first entries play while the rest is read.
        if current.playlistUnread, let head = playHead(of: current) { current = head }
        let items: [KioskConfig.Item]
        var skipped: [SkippedEntry] = []
        do throws(PlaylistError) {
            if case .remoteM3U(let url) = current.playlistOrigin {
                guard let remote else { throw PlaylistError(message: "the remote M3U \(url) is taken up at the next start") }
                // Another list named by a reload: the set playing plays on until the new one is taken.
                if remote.url != url { return }
                // A wall's agreement switches its sets, on the vsync every node switches on (`WallSets`).
                if remote.holdsSets { return }
                items = try remote.items()
            } else {
                items = try expandPlaylist(current.playlistOrigin, skipped: &skipped)
            }
            reporter.reportSkipped(skipped, origin: current.playlistOrigin)
        } catch {
            // Logged once per reason: an empty folder is read every second until files come.
            let message = error.message
            let first = loggedProblem.withLock { logged -> Bool in
                defer { logged = message }
                return logged != message
            }
            if current.playlist.isEmpty {
                status.update { $0.playlistProblem = message }
                if first { logger.warning("nothing to play: the playlist cannot be read; it is read again every second", ["error": message]) }
            } else if first {
                logger.warning("cannot read the playlist again; the old one keeps playing", ["error": message])
            }
            return
        }
        loggedProblem.withLock { $0 = nil }
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



    /// Reads the first `headLength` entries of `config`'s unread M3U and plays them (looped,
    /// in order; a shuffled or unlooped list waits for the whole). Returns the config they play
    /// as (still unread), or nil when nothing was started.
    func playHead(of config: KioskConfig) -> KioskConfig? {
        guard config.loop, !config.shuffle, config.playlist.isEmpty else { return nil }
        var skipped: [SkippedEntry] = []
        guard let head = try? expandPlaylist(config.playlistOrigin, skipped: &skipped, first: Self.headLength),
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
