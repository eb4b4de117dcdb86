import Display
import Foundation
import Playback
import Render
import Synchronization

extension KioskSession {
    // MARK: Presentation

    /// Presents on `output` until stopped, `exitAfter` passes, `shouldContinue` says no, or a
    /// playlist without loop has played out. Runs on the output's thread.
    /// `trace` gets a line per picture change (shared by the outputs of a node).
    public func present<Output: KioskOutput>(on output: Output, options: RunOptions, trace: TraceWriter?,
                                             shouldContinue: @escaping () -> Bool,
                                             onVsync: ((Int64) -> Void)? = nil) throws -> PresentationStats {
        let layer = output.pictureLayer
        // A mosaic output shows several regions: a session of its own plays each further one.
        let regions = (1..<max(1, layer.mosaicRegions.count)).map { rank in
            makeFollower(slot: role.slot, regionRank: rank, output: self.output, logger: logger.with(["region": "\(rank)"]))
        }
        defer { for region in regions { region.player.removeAllItems() } }  // ends their decode threads
        let presenter = try PlayerPresenter(players: [player] + regions.map(\.player), output: output, trace: trace, logger: logger,
                                            exitAfter: options.exitAfter.map { MediaTime(seconds: $0, preferredTimescale: 1_000_000) })
        let context = PresentationContext(name: output.name, width: output.bounds.width, height: output.bounds.height,
                                          screenshots: output.screenshots, clock: output.clock)
        state.withLock { s in s.outputName = output.name }
        startAudio(clock: output.clock)
        defer { audio.stop() }
        let report = OutputReport(reporter: reporter, logger: logger)
        report.opened(name: output.name, width: output.bounds.width, height: output.bounds.height, refresh: output.clock.refresh,
                      scanout: output.scanout)
        // Supervision: the players this output shows, idle only when all of them are.
        let shownPlayers = [player] + regions.map(\.player)
        var lastItem: ObjectIdentifier?
        presenter.willPresent = { [unowned self] lane, item in
            // The item's own gravity, else the display's: looked up when the item changes (a
            // mosaic's regions have theirs).
            guard lane == 0, regions.isEmpty, ObjectIdentifier(item) != lastItem else { return }
            lastItem = ObjectIdentifier(item)
            let index = item.playlistIndex ?? -1
            let config = state.withLock { $0.config }
            layer.gravity = config.playlist.indices.contains(index) ? config.playlist[index].gravity ?? config.display.gravity
                                                                    : config.display.gravity
        }
        var shownCount = 0
        presenter.didPresent = { [self] lane, shown, picture in
            if report.shown(frameDuration: picture.frame?.duration, main: lane == 0, isNew: picture.isNew, itemTime: picture.itemTime,
                            itemDuration: picture.item?.duration) {
                onPicture?()
            }
            guard lane == 0 else { return regions[lane - 1].clockSyncCheck?(shown, picture) ?? () }
            shownCount += 1
            clockSyncCheck?(shown, picture)
        }
        let power = output.displayPower
        (outputPower.control, outputPower.trace, outputPower.outputName) = (power, trace, output.name)
        let schedule = makeScheduleStep(clock: output.clock, trace: trace, outputName: output.name)
        // A mosaic's further regions: their output's session draws the overlays.
        presenter.needsRedraw = !role.reportsOutput ? nil : OverlayStep(
            output: output, config: state.withLock { $0.config }, trace: trace, logger: logger,
            onStatus: role.isLeader ? { [status] list in status.update { $0.overlays = list } } : nil,
            current: { [self] in state.withLock { ($0.config.overlays, $0.config.timeZone) } }).step
        presenter.onIdle = { [presentationTasks, self] in
            // No vsyncs (no display, or in standby): commands and the schedule still run.
            presentationTasks.drain(context)
            if outputPower.state != .on { reporter.beat(idle: "display off") }
            schedule?.idle()
        }
        presenter.onVsync = { [presentationTasks, self] n in
            presentationTasks.drain(context)
            schedule?.vsync(n)
            report.vsync(n, idle: shownPlayers.allSatisfy { $0.rate == 0 } ? "paused"
                                : shownPlayers.allSatisfy { $0.currentItem == nil } ? "nothing to play" : nil,
                         refresh: output.clock.refresh, videoRect: layer.videoRect, notDrawn: layer.framesNotDrawn, audio: audio)
            onVsync?(n)
        }
        let (loop, current) = state.withLock { s in (s.config.loop, s.config) }
        if current.wall?.sync.mode != .clock {
            // The players started decoding when they were made, just now (after the output had
            // opened): the first pictures are decoded before the first vsync is asked for.
            // (Under wall sync the start is a moment on the clock, half a second or more ahead.)
            Preroll.wait(for: ([self] + regions).map(\.preroll), output: output.name, logger: logger)
        }
        if let sync = current.wall?.sync, sync.mode == .clock {
            try startClockSync(current, epoch: sync.epoch, clock: output.clock)
            for region in regions {
                try region.startClockSync(region.state.withLock { $0.config }, epoch: sync.epoch, clock: output.clock)
            }
            if role.isLeader { watchClockQuality(into: status, logger: logger, until: stopRequested) }
        }
        return try presenter.run(stopWhenEmpty: !loop) { [self] in
            !isStopped && shouldContinue() && shownCount < options.exitAfterFrames ?? .max
        }
    }
}
