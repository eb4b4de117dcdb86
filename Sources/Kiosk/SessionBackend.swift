import Foundation
import Media
import Playback
import Render

extension ReportingBackend {
    /// The backend of a session whose output has opened (`output`: what it can do): FFmpeg (under
    /// `mediaLayer` where given), whose decoders know from their first frame what to give it, and
    /// whose openings, conversions, failures and slow reads `reporter` reports. `preroll` is
    /// raised when a reader has its first frames, reached its end, or a file failed.
    static func session(config: KioskConfig, output: OutputCapabilities, reporter: PlaybackReporter, preroll: Preroll,
                        slowLimit: Double, mediaLayer: ((any MediaBackend) -> any MediaBackend)?,
                        cache: RemoteMediaCache? = nil) -> ReportingBackend {
        let (logger, status) = (reporter.logger, reporter.status)
        var ffmpeg = FFmpegBackend(hardware: config.hardwareDecoding, output: output,
                                   interop: DMABufInterop(support: output.dmabuf)) { uri, info, path in
            reporter.decoderOpened(uri: uri, info: info, path: path)
        }
        ffmpeg.limits = config.network.limits
        ffmpeg.liveLagBound = config.network.liveLatency
        // An item's `live` options, found as its still duration is (the list is searched outside the lock).
        ffmpeg.sourceOptions = { url in reporter.playlist().first { $0.path == url }?.live }
        // A wall's output shows part of a larger picture: its own height would choose too small a
        // variant, so a wall plays the tallest (or the item's maxHeight).
        ffmpeg.outputHeight = config.wall == nil ? config.display.mode.height : .max
        ffmpeg.onLiveChange = { uri, change in
            switch change {
            case .down(let reason): reporter.liveSourceChanged(uri: uri, reason: reason)
            case .back: reporter.liveSourceChanged(uri: uri, reason: nil)
            case .closedWhileDown: reporter.liveSourceClosed(uri: uri)
            case .lag(let seconds): reporter.liveLag(uri: uri, seconds: seconds)
            }
        }
        ffmpeg.onDownscale = { uri, from, to in
            guard reporter.firstTime("downscale|\(uri)") else { return }
            logger.warning("picture larger than the output's largest texture; scaled down with swscale",
                           ["uri": uri, "from": from, "to": to])
        }
        ffmpeg.stillDuration = { path in
            // Searched outside the lock (the presenting thread takes it every vsync): a copy of
            // the list is a reference, and a million entries take a while to search.
            reporter.playlist().first { $0.path == path }?.duration ?? defaultStillDuration
        }
        ffmpeg.onConversion = { uri, from, to in
            guard reporter.firstTime("convert|\(uri)") else { return }
            // Drawn correctly, at the cost of a CPU conversion per frame.
            logger.info("pixel format converted with swscale once per frame", ["uri": uri, "from": from, "to": to])
            status.update { $0.conversions[uri] = "\(from) -> \(to)" }
        }
        // A cached remote item opens its local copy (RemoteMediaCache.swift).
        let base: any MediaBackend = cache.map { CachedBackend(inner: ffmpeg, cache: $0) } ?? ffmpeg
        return ReportingBackend(inner: mediaLayer?(base) ?? base, slowLimit: slowLimit, onFailure: { url, error in
            preroll.raise()
            reporter.logFailure(uri: url.mediaLocation, reason: "\(error)")
        }, onSlow: { url, operation, seconds in
            // A network source's waits are its health's (live sources) or its download's, not storage.
            guard url.isFileURL else { return }
            reporter.slowStorage(uri: url.path, operation: operation, seconds: seconds, limit: slowLimit)
        }, onFramesReady: {
            preroll.raise()
        })
    }
}
