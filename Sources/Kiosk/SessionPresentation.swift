import Display
import Foundation
import Playback
import Render
import Synchronization

/// Presents a session on its output: wires the presenter (`PlayerPresenter`) to the session's parts:
/// what each picture and vsync reports (`OutputReport`), the schedule, the overlays, the display's
/// power, commands for the presentation thread, a mosaic's further regions, and wall sync's start.
struct SessionPresentation {
    let session: KioskSession

    func run<Output: KioskOutput>(on output: Output, options: RunOptions, trace: TraceWriter?,
                                  shouldContinue: @escaping () -> Bool, onVsync: ((Int64) -> Void)?) throws -> PresentationStats {
        let layer = output.pictureLayer
        // A mosaic output shows several regions: a session of its own plays each further one.
        let regions = (1..<max(1, layer.mosaicRegions.count)).map { rank in
            session.makeFollower(slot: session.role.slot, regionRank: rank, output: session.output, logger: session.logger.with(["region": "\(rank)"]))
        }
        defer { for region in regions { region.player.removeAllItems() } }  // ends their decode threads
        let presenter = try PlayerPresenter(players: [session.player] + regions.map(\.player), output: output, trace: trace, logger: session.logger,
                                            exitAfter: options.exitAfter.map { MediaTime(seconds: $0, preferredTimescale: 1_000_000) })
        let context = PresentationContext(name: output.name, width: output.bounds.width, height: output.bounds.height,
                                          screenshots: output.screenshots, clock: output.clock)
        session.state.withLock { s in s.outputName = output.name }
        session.startAudio(clock: output.clock)
        defer { session.audio.stop() }
        let report = OutputReport(reporter: session.reporter, logger: session.logger)
        report.opened(name: output.name, width: output.bounds.width, height: output.bounds.height, refresh: output.clock.refresh,
                      scanout: output.scanout)
        // Supervision: the players this output shows, idle only when all of them are.
        let shownPlayers = [session.player] + regions.map(\.player)
        weak var lastItem: PlayerItem?  // weak: a later item at a freed one's address is another item
        presenter.willPresent = { [unowned session] lane, item in
            // The item's own gravity, else the display's: looked up when the item changes (a
            // mosaic's regions have theirs).
            guard lane == 0, regions.isEmpty, item !== lastItem else { return }
            lastItem = item
            let index = item.playlistIndex ?? -1
            let config = session.state.withLock { $0.config }
            layer.gravity = config.playlist.indices.contains(index) ? config.playlist[index].gravity ?? config.display.gravity
                                                                    : config.display.gravity
        }
        var shownCount = 0
        presenter.didPresent = { [session] lane, shown, picture in
            if report.shown(frameDuration: picture.frame?.duration, main: lane == 0, isNew: picture.isNew, itemTime: picture.itemTime,
                            itemDuration: picture.item?.duration) {
                session.onPicture?()
            }
            guard lane == 0 else { return regions[lane - 1].clockSyncCheck?(shown, picture) ?? () }
            shownCount += 1
            session.clockSyncCheck?(shown, picture)
        }
        let power = output.displayPower
        (session.outputPower.control, session.outputPower.trace, session.outputPower.outputName) = (power, trace, output.name)
        let schedule = session.makeScheduleStep(clock: output.clock, trace: trace, outputName: output.name)
        // A mosaic's further regions: their output's session draws the overlays.
        presenter.needsRedraw = !session.role.reportsOutput ? nil : OverlayStep(
            output: output, config: session.state.withLock { $0.config }, trace: trace, logger: session.logger,
            onStatus: session.role.isLeader ? { [status = session.status] list in status.update { $0.overlays = list } } : nil,
            current: { [session] in session.state.withLock { ($0.config.overlays, $0.config.timeZone) } }).step
        presenter.onIdle = { [presentationTasks = session.presentationTasks, session] in
            // No vsyncs (no display, or in standby): commands and the schedule still run.
            session.presentationTasks.drain(context)
            if session.outputPower.state != .on { session.reporter.beat(idle: "display off") }
            schedule?.idle()
        }
        presenter.onVsync = { [presentationTasks = session.presentationTasks, session] n in
            session.presentationTasks.drain(context)
            session.cueGate.vsync(n, clock: output.clock)
            session.wallSets?.vsync(n, clock: output.clock)
            schedule?.vsync(n)
            report.vsync(n, idle: shownPlayers.allSatisfy { $0.rate == 0 } ? "paused"
                                : shownPlayers.allSatisfy { $0.currentItem == nil } ? "nothing to play" : nil,
                         refresh: output.clock.refresh, videoRect: layer.videoRect, notDrawn: layer.framesNotDrawn, audio: session.audio)
            onVsync?(n)
        }
        let (loop, current) = session.state.withLock { s in (s.config.loop, s.config) }
        if current.wall?.sync.mode != .clock {
            // The players started decoding when they were made, just now (after the output had
            // opened): the first pictures are decoded before the first vsync is asked for.
            // (Under wall sync the start is a moment on the clock, half a second or more ahead.)
            Preroll.wait(for: ([session] + regions).map(\.preroll), output: output.name, logger: session.logger)
            StartupMarks.mark("prerolled")
        }
        if let sync = current.wall?.sync, sync.mode == .clock {
            try session.startClockSync(current, epoch: session.clockEpoch(sync.epoch), clock: output.clock)
            for region in regions {
                try region.startClockSync(region.state.withLock { $0.config }, epoch: sync.epoch, clock: output.clock)
            }
            if session.role.isLeader { watchClockQuality(into: session.status, logger: session.logger, until: session.stopRequested) }
        }
        return try presenter.run(stopWhenEmpty: !loop) { [session] in
            !session.isStopped && shouldContinue() && shownCount < options.exitAfterFrames ?? .max
        }
    }
}
