import Foundation
import Playback
import Synchronization

/// Watches a session's player: hands its item events, item changes and time to the reporter, and
/// has the playlist read again when due (at each loop pass; every second while it is empty; a
/// folder once at start, to log what it leaves out; a config's long M3U on a thread of its own).
final class PlayerWatch: Sendable {
    private let state: SessionState
    private let driver: PlaylistDriver
    private let reporter: PlaybackReporter
    private let reader: PlaylistReader
    private var player: QueuePlayer { driver.player }

    init(state: SessionState, driver: PlaylistDriver, reporter: PlaybackReporter, reader: PlaylistReader) {
        (self.state, self.driver, self.reporter, self.reader) = (state, driver, reporter, reader)
    }

    /// Starts watching the player (its item events and changes on threads of its own, its time on
    /// the **marquee-status** thread), until this watch goes away.
    func start() {
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
                    if case .directory = config.playlistOrigin, first { reader.read() }
                    else if config.playlistUnread, !reader.isReading {
                        // A config's M3U left for now (a million lines take seconds): read on a
                        // thread of its own, so this one goes on updating the status.
                        startThread(named: "marquee-load") { [weak self] in self?.reader.read() }
                    } else if config.playlistOrigin != .list && config.playlist.isEmpty { reader.read() }
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
        if reporter.beginsLoopPass(loop) { reader.read() }
        reporter.itemChanged(to: item, loop: loop)
    }
}
