import Foundation
import Media
import Playback
import Synchronization

/// Decodes the playlist on its own thread, item after item, into a bounded queue of frames.
///
/// Because the next item is opened and decoded while the presenter still shows the current one, the
/// presenter always has the next item's first frame in hand at an item change or a loop point.
/// A file that cannot be opened or decoded is logged (the file and FFmpeg's reason) and skipped;
/// the rest keeps playing. When no item can be played the presenter is told, and the source tries
/// again every `retryInterval` seconds.
public final class PlaylistSource: FrameSource, @unchecked Sendable {
    // @unchecked: the decode thread owns the decoders; the presenter touches only `queue` (itself
    // thread-safe) and `stopped` (atomic).
    public typealias Frame = VideoFrame

    private let items: [KioskConfig.Item]
    private let loop: Bool
    private let logger: Logger
    private let queue: FrameQueue<SourceEvent<VideoFrame>>
    private let stopped = Atomic(false)
    private let retryInterval: Double
    private let hardware: HardwareDecoding
    private var thread: Thread?

    public init(items: [KioskConfig.Item], loop: Bool, hardware: HardwareDecoding = .auto, logger: Logger,
                queueCapacity: Int = 6, retryInterval: Double = 1) {
        self.hardware = hardware
        self.items = items
        self.loop = loop
        self.logger = logger
        self.queue = FrameQueue(capacity: queueCapacity)
        self.retryInterval = retryInterval
    }

    /// Starts the decode thread.
    public func start() {
        let thread = Thread { [self] in decodeLoop() }
        thread.name = "marquee-decode"
        self.thread = thread
        thread.start()
    }

    /// Stops decoding; frames still queued are released.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.close()
    }

    deinit { stop() }

    public func next(timeout: Double) -> SourceEvent<VideoFrame>? {
        switch queue.pop(timeout: timeout) {
        case .element(let event): return event
        case .timedOut, .closed: return nil
        }
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Hands an event to the presenter, waiting while the queue is full. False once stopped.
    private func send(_ event: SourceEvent<VideoFrame>) -> Bool {
        while !isStopped {
            switch queue.push(event, timeout: 0.5) {
            case .pushed: return true
            case .closed: return false
            case .timedOut: continue  // the presenter is busy showing earlier frames; keep waiting
            }
        }
        return false
    }

    private func decodeLoop() {
        var run = 0
        var lastError = [Int: String]()
        while !isStopped {
            var playedAny = false
            for (index, item) in items.enumerated() where !isStopped {
                let log = logger.with(["item": "\(index)", "uri": item.path])
                do {
                    let decoder = try VideoDecoder(path: item.path, hardware: hardware)
                    if lastError.removeValue(forKey: index) != nil || run < items.count {
                        let path = decoder.decodingPath
                        // A named hardware path not in use is a warning; auto finding none is not.
                        log.log(path.degraded ? .warning : .info, "opened",
                                ["codec": decoder.info.codec, "size": "\(decoder.info.width)x\(decoder.info.height)",
                                 "fps": decoder.info.frameRate.formatted(decimals: 3),
                                 "pixel_format": decoder.info.pixelFormat, "threads": "\(decoder.info.threads)",
                                 "hwdec_current": path.hwdecCurrent, "hwdec_interop": path.interop,
                                 "hwdec_requested": hardware.rawValue, "fallback": path.fallbackReason ?? "-"])
                    }
                    run += 1
                    while let frame = try decoder.nextFrame() {
                        guard send(.frame(PlaylistFrame(item: index, uri: item.path, run: run, frame: frame))) else { return }
                        playedAny = true
                    }
                } catch {
                    // Say it once per item and reason, not on every pass of the loop.
                    let reason = "\(error)"
                    if lastError[index] != reason {
                        lastError[index] = reason
                        log.error("cannot play item; skipped", ["error": reason])
                    }
                }
            }
            if !loop {
                _ = send(.ended)
                return
            }
            if !playedAny {
                guard send(.nothingPlayable) else { return }
                Thread.sleep(forTimeInterval: retryInterval)
            }
        }
    }
}
