import Foundation
import Media
import Playback

/// A media backend that reports every failure to probe or open a file as soon as it happens, and
/// every probe, open or read that takes longer than `slowLimit` seconds (slow storage).
struct ReportingBackend: MediaBackend {
    let inner: any MediaBackend
    let slowLimit: Double
    let onFailure: @Sendable (URL, any Error) -> Void
    let onSlow: @Sendable (URL, String, Double) -> Void
    /// Told when a reader has handed out its first `Preroll.frames` frames, or its end.
    var onFramesReady: @Sendable () -> Void = {}

    func probe(_ url: URL) throws -> AssetDescription { try reporting(url, "probe") { try inner.probe(url) } }

    func openReader(_ url: URL) throws -> any FrameReader {
        TimedReader(inner: try reporting(url, "open") { try inner.openReader(url) }, url: url, slowLimit: slowLimit, onSlow: onSlow,
                           onFramesReady: onFramesReady)
    }

    func openPrerollReader(_ url: URL) throws -> any FrameReader {
        TimedReader(inner: try reporting(url, "open") { try inner.openPrerollReader(url) }, url: url, slowLimit: slowLimit,
                    onSlow: onSlow, onFramesReady: onFramesReady)
    }

    func checkFirstFrame(_ url: URL) throws { try reporting(url, "first frame") { try inner.checkFirstFrame(url) } }

    /// Sound that cannot be decoded is not the item's failure (it plays in silence): not reported.
    func openAudioReader(_ url: URL) throws -> (any AudioReader)? { try inner.openAudioReader(url) }

    func opensOneAtATime(_ url: URL) -> Bool { inner.opensOneAtATime(url) }

    /// The file opened once for its asset (`MediaSource`), its probe and readers reported as above.
    func openSource(_ url: URL) throws -> any MediaSource {
        ReportingSource(inner: try reporting(url, "open") { try inner.openSource(url) }, url: url, backend: self)
    }

    fileprivate func reporting<T>(_ url: URL, _ operation: String, _ body: () throws -> T) throws -> T {
        let start = ContinuousClock.now
        defer {
            let took = (ContinuousClock.now - start).seconds
            if took > slowLimit { onSlow(url, operation, took) }
        }
        do { return try body() } catch {
            onFailure(url, error)
            throw error
        }
    }
}

/// `ReportingBackend`'s view of an opened file.
final class ReportingSource: MediaSource {
    let inner: any MediaSource
    let url: URL
    let backend: ReportingBackend

    init(inner: any MediaSource, url: URL, backend: ReportingBackend) {
        self.inner = inner
        self.url = url
        self.backend = backend
    }

    func describe() throws -> AssetDescription { try backend.reporting(url, "probe") { try inner.describe() } }

    func openReader() throws -> any FrameReader {
        TimedReader(inner: try backend.reporting(url, "open") { try inner.openReader() }, url: url, slowLimit: backend.slowLimit,
                    onSlow: backend.onSlow, onFramesReady: backend.onFramesReady)
    }

    func openPrerollReader() throws -> any FrameReader {
        TimedReader(inner: try backend.reporting(url, "open") { try inner.openPrerollReader() }, url: url, slowLimit: backend.slowLimit,
                    onSlow: backend.onSlow, onFramesReady: backend.onFramesReady)
    }

    /// Sound that cannot be decoded is not the item's failure (it plays in silence): not reported.
    func openAudioReader() throws -> (any AudioReader)? { try inner.openAudioReader() }

    var isUsable: Bool { inner.isUsable }
    var holdsFile: Bool { inner.holdsFile }
}

/// A reader that reports a read or seek taking longer than `slowLimit` seconds, and when it has
/// handed out its first `Preroll.frames` frames (or its end, or an error).
final class TimedReader: FrameReader {
    let inner: any FrameReader
    let url: URL
    let slowLimit: Double
    let onSlow: @Sendable (URL, String, Double) -> Void
    private var onFramesReady: (@Sendable () -> Void)?
    private var handedOut = 0

    init(inner: any FrameReader, url: URL, slowLimit: Double, onSlow: @escaping @Sendable (URL, String, Double) -> Void,
         onFramesReady: (@Sendable () -> Void)? = nil) {
        self.inner = inner
        self.url = url
        self.slowLimit = slowLimit
        self.onSlow = onSlow
        self.onFramesReady = onFramesReady
    }

    func nextFrame() throws -> (any PresentableFrame)? {
        let start = ContinuousClock.now
        defer { timed("read", since: start) }
        do {
            let frame = try inner.nextFrame()
            handedOut += 1
            if frame == nil || handedOut >= Preroll.frames { framesReady() }
            return frame
        } catch {
            framesReady()
            throw error
        }
    }

    private func framesReady() {
        onFramesReady?()
        onFramesReady = nil
    }

    func seek(to time: MediaTime) throws {
        let start = ContinuousClock.now
        defer { timed("seek", since: start) }
        try inner.seek(to: time)
    }

    var canceller: (@Sendable () -> Void)? { inner.canceller }

    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
        inner.setFrameDrop(drop, discardingFramesEndingBy: clock)
    }

    func follow(clock: @escaping @Sendable () -> MediaTime?, dropped: @escaping @Sendable (Int) -> Void) {
        inner.follow(clock: clock, dropped: dropped)
    }

    private func timed(_ operation: String, since start: ContinuousClock.Instant) {
        let took = (ContinuousClock.now - start).seconds
        if took > slowLimit { onSlow(url, operation, took) }
    }
}
