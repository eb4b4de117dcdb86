import Display
import Foundation
import Playback
import Render

/// What an output's presentation tells the status and supervision: the output as it opened, each
/// picture shown, and each vsync (whether the output is idle and why; every 30th its rate, the
/// video's rectangle, the sound's health and the frames that could not be drawn). Presentation thread.
final class OutputReport {
    private let reporter: PlaybackReporter
    private let logger: Logger
    private var status: KioskStatus { reporter.status }
    /// Frames that could be neither imported nor copied, as last logged.
    private var reportedNotDrawn = 0

    init(reporter: PlaybackReporter, logger: Logger) {
        self.reporter = reporter
        self.logger = logger
    }

    /// The output `name` (`width`x`height` at `refresh`, through `scanout`) presents from `now` on.
    func opened(name: String, width: Int, height: Int, refresh: RefreshRate, scanout: ScanoutChoice?,
                now: ContinuousClock.Instant = .now) {
        reporter.updateOutput {
            $0 = .init(name: name, mode: "\(width)x\(height)@\(refresh)")
            $0.scanout = scanout?.kind.rawValue
            $0.scanoutReason = scanout?.reason
            $0.lastBeat = now
            $0.dueSince = now
        }
    }

    /// A picture was shown (what tells supervision that presentation progresses), of a frame that
    /// lasts `frameDuration`. Of the session's own player (`main`), a new picture at `itemTime`
    /// of an item of `itemDuration` moves time-pos, as mpv's: then it returns true.
    func shown(frameDuration: MediaTime?, main: Bool, isNew: Bool, itemTime: MediaTime, itemDuration: MediaTime?,
               now: ContinuousClock.Instant = .now) -> Bool {
        let lasts = frameDuration?.seconds ?? 0
        reporter.updateOutput { o in
            o.lastPicture = now
            o.pictureDuration = lasts.isFinite ? max(0, lasts) : 0
        }
        guard main, isNew, itemTime.isNumeric else { return false }
        let duration = itemDuration.flatMap { $0.isNumeric ? $0.seconds : nil }
        status.update {
            $0.timePos = itemTime.seconds
            if let duration { $0.duration = duration }
        }
        return true
    }

    /// Vsync `n` was presented; `idle`: why no new picture is due (nil: one is). Every 30th also
    /// reports the output's rate (`refresh`; jitter 0), the video's rectangle, `audio`'s health and
    /// how many frames could be neither imported nor copied (`notDrawn`; logged when it grows).
    func vsync(_ n: Int64, idle: String?, refresh: RefreshRate, videoRect: @autoclosure () -> PixelRect?,
               notDrawn: @autoclosure () -> Int, audio: SessionAudio) {
        reporter.beat(idle: idle)
        guard n % 30 == 0 else { return }
        // The clock's rate, jitter 0. The cast this replaced (`output.clock as? PageFlipClock`)
        // never matched: a KMS output's clock is its display link's, not a head's page-flip
        // clock. `output.pageFlips` has the measured figures; reporting them here would change
        // what status and health say (a behaviour change of its own, not made here).
        let rect = videoRect().map { [$0.x, $0.y, $0.width, $0.height] }
        if reporter.role.isLeader {
            status.update {
                $0.displayFPS = refresh.hertz
                $0.vsyncJitter = 0
            }
        }
        audio.report(into: reporter.outputStatus)
        let notDrawn = notDrawn()
        if notDrawn > reportedNotDrawn {
            logger.warning("hardware frames could be neither imported nor copied; shown as background", ["frames": "\(notDrawn)"])
            reportedNotDrawn = notDrawn
        }
        reporter.updateOutput { o in
            o.videoRect = rect
            o.framesNotDrawn = notDrawn
        }
    }
}
