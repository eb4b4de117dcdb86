import Foundation
import Playback
import Synchronization

extension KioskSession {
    // MARK: Reload

    /// Reads the config file again. A broken one is refused (the old playlist keeps playing and
    /// health says why); a good one takes over at the next item boundary.
    public func reload() -> KioskCommandResult {
        guard let configPath else { return .failed("no config file to reload (started with the embedded default)") }
        var loaded: KioskConfig
        do {
            loaded = try KioskConfig.load(path: configPath)
            overrides(&loaded)
        } catch {
            status.update { $0.reloadError = "\(error)" }
            logger.error("reload refused; the old config keeps playing", ["config": configPath, "error": "\(error)"])
            return .failed("\(error)")
        }
        if let why = RemotePlaylist.reloadRefusal(loaded, running: remotePlaylist?.url) {
            status.update { $0.reloadError = why }
            logger.error("reload refused; the old config keeps playing", ["config": configPath, "error": why])
            return .failed(why)
        }
        // Another remote M3U: its set is fetched and takes over once whole; this one plays until then.
        if case .remoteM3U(let url) = loaded.playlistOrigin { remotePlaylist?.retarget(url) }
        for warning in loaded.warnings {
            logger.warning("config: nothing to play there now; it is read again", ["config": configPath, "path": warning.path, "problem": warning.message])
        }
        let old = state.withLock { s in s.config }
        // Every output of the node restarts on the same moment of the new timeline.
        let newConfig = adopt(loaded, restartAt: ClockSync.gridPoint(after: WallTime.now() + 600_000_000))
        audio.reapply(old: old.audio, new: newConfig.audio, player: player, logger: logger) { startAudio(clock: $0) }
        if old.display.mode != newConfig.display.mode || old.display.output != newConfig.display.output {
            logger.warning("display settings change at the next start; the playlist changes now", ["config": configPath])
        }
        logger.info(newConfig.wall?.sync.mode == .clock ? "reloaded; the new playlist's timeline starts now, on the clock"
                                                        : "reloaded; the new playlist starts at the next item boundary",
                    ["config": configPath, "items": "\(newConfig.playlist.count)"])
        return .done
    }

    /// Plays a reloaded config's playlist (the one of this session's wall output), and has its
    /// followers do the same. Returns this session's part of the config.
    @discardableResult
    func adopt(_ loaded: KioskConfig, restartAt: WallTime) -> KioskConfig {
        let entry = Self.scheduledEntry(loaded, at: loaded.virtualClockStart == nil ? WallTime.now() : scheduleWallTimeNow())
        var newConfig = role.config(loaded, entry: entry, node: node)
        // A remote M3U: the set playing plays on (a config read leaves it empty); another list's
        // set takes over once whole (`RemotePlaylist.retarget`).
        if case .remoteM3U = newConfig.playlistOrigin, let items = try? remotePlaylist?.items() {
            newConfig.playlist = items
        }
        state.withLock { s in
            s.config = newConfig
            s.unselectedConfig = loaded
            s.scheduleEntry = entry
            s.scheduleReloaded = true
        }
        status.update { $0.schedule = ScheduleStep.status(loaded.schedule, entry: entry) }
        status.update {
            $0.reloadError = nil
            $0.replaceItems(PlaybackReporter.statusItems(newConfig))
            $0.playlistProblem = PlaybackReporter.emptyPlaylistProblem(newConfig)
        }
        reporter.forgetFailures()
        for follower in state.withLock({ s in s.followers }) { follower.adopt(loaded, restartAt: restartAt) }
        if let sync = newConfig.wall?.sync, sync.mode == .clock {
            // A mosaic's further regions are restarted by the session of their output.
            guard role.reportsOutput else { return newConfig }
            // A new playlist is a new timeline: every node restarts at the clock's position on it
            // (on the presentation thread, which owns the wall sync).
            let restarted = presentationTasks.run(timeout: 4) { [self] context -> KioskCommandResult in
                do {
                    try startClockSync(newConfig, epoch: clockEpoch(sync.epoch), clock: context.clock, at: restartAt)
                    // This output's further regions (a mosaic).
                    for region in state.withLock({ s in s.followers }) where !region.role.reportsOutput {
                        try region.startClockSync(region.state.withLock { $0.config }, epoch: sync.epoch, clock: context.clock,
                                                  at: restartAt)
                    }
                    return .done
                } catch {
                    logger.error("wall sync: cannot restart on the reloaded playlist", ["error": "\(error)"])
                    return .failed("\(error)")
                }
            }
            if restarted == nil {
                logger.warning("wall sync: the output did not restart on the reloaded playlist within 4 s", ["output": state.withLock { $0.outputName } ?? "-"])
            }
        } else {
            driver.start(newConfig, afterCurrentItem: true)
        }
        return newConfig
    }
}
