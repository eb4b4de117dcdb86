import Foundation
import Media
import Playback

/// A playlist on the clock's timeline: what `KioskSession.followClock` plays.
struct ClockPlan: @unchecked Sendable {
    // @unchecked: made on one thread and handed over whole (through a Latch) to the presentation thread.
    let sync: ClockSync
    let playable: KioskConfig
    let starts: [MediaTime]
}

extension ClockPlan {
    /// What playing `config` on the clock needs: its timeline (every item probed for its length;
    /// an item whose first frame does not decode is left out), the playlist of the items kept and
    /// where each starts in its file. nil (logged) when no item can be played. Blocks while it
    /// probes: any thread (`beat`, when given, is called between the probes: the presentation
    /// thread tells supervision it is alive).
    static func make(_ config: KioskConfig, epoch: WallTime, backend: any MediaBackend, logger: Logger,
                     beat: (() -> Void)? = nil) throws -> ClockPlan? {
        var playable = config
        playable.playlist = []
        var indices: [Int] = [], durations: [MediaTime] = [], starts: [MediaTime] = []
        for (index, item) in config.playlist.enumerated() {
            // Probing a long playlist takes a while: the presentation thread is alive meanwhile.
            if index > 0 { beat?() }
            let url = URL(fileURLWithPath: item.path)
            guard let length = try? backend.probe(url).duration, length.isNumeric, (try? backend.checkFirstFrame(url)) != nil else { continue }
            let start = MediaTime(seconds: item.start ?? 0, preferredTimescale: 90_000)
            let end = item.end.map { MediaTime(seconds: $0, preferredTimescale: 90_000) } ?? length
            guard end > start else { continue }
            playable.playlist.append(item)
            indices.append(index)
            durations.append(end - start)
            starts.append(start)
        }
        guard !durations.isEmpty else {
            logger.error("wall sync: no item of the playlist can be played")
            return nil
        }
        let sync = ClockSync(timeline: try WallTimeline(epoch: epoch, durations: durations), playlistIndices: indices,
                             fileStarts: starts, logger: logger)
        return ClockPlan(sync: sync, playable: playable, starts: starts)
    }
}
