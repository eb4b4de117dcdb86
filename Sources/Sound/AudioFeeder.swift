import Foundation
import Playback
import Synchronization

/// Decodes one item's sound, from an item time on, on a thread of its own into a bounded queue
/// (about half a second of sound), as `ItemFeeder` does its pictures. The audio path starts the
/// next item's feeder while the current one plays, so that its sound follows on at once.
final class AudioFeeder: @unchecked Sendable {
    // @unchecked: the thread owns the reader; others touch only `queue` and `stopped`.
    enum Chunk: Sendable {
        /// Decoded samples (float32, item time).
        case samples(PCMBuffer)
        /// The item has no sound: it plays silence.
        case noAudio
        /// The sound ended (`failure`: it could not be decoded any further; it plays silence from
        /// there), with the packets the decoder skipped.
        case end(failure: String?, corruptPackets: Int)
    }

    let item: PlayerItem
    /// Item time of the first sample.
    let from: MediaTime
    let queue: FrameQueue<Chunk>
    private let stopped = Atomic(false)
    private let cancelReader = Mutex<(@Sendable () -> Void)?>(nil)

    static let capacity = 24

    init(item: PlayerItem, from: MediaTime) {
        self.item = item
        self.from = from
        queue = FrameQueue(capacity: Self.capacity)
    }

    func start(logger: Logger) {
        startThread(named: "marquee-adecode") { [self] in run(logger: logger) }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.close()
        cancelReader.withLock { $0 }?()
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    private func send(_ chunk: Chunk) -> Bool {
        while !isStopped {
            switch queue.push(chunk, timeout: 0.5) {
            case .pushed: return true
            case .closed: return false
            case .timedOut: continue
            }
        }
        return false
    }

    private func run(logger: Logger) {
        let asset = item.asset
        let reader: any AudioReader
        // The item's opened file, shared with its pictures' decoder; held for the whole run.
        let source: any MediaSource
        do {
            source = try item.source()
            guard let opened = try source.openAudioReader() else {
                _ = send(.noAudio)
                return
            }
            reader = opened
        } catch {
            logger.warning("audio cannot be played; the item plays in silence",
                           ["uri": asset.url.mediaLocation, "error": "\(error)"])
            _ = send(.end(failure: "\(error)", corruptPackets: 0))
            return
        }
        let cancel = reader.canceller
        cancelReader.withLock { $0 = cancel }
        if isStopped { return }
        let end = item.forwardPlaybackEndTime
        defer { withExtendedLifetime(source) {} }
        do {
            if from > .zero { try reader.seek(to: from) }
            while !isStopped, var buffer = try reader.nextBuffer() {
                if end.isNumeric, buffer.end > end {
                    // The item ends at its forward end time: its sound too.
                    let frames = wholeFrames((end - buffer.pts).seconds, rate: buffer.format.sampleRate, atMost: buffer.frames)
                    if frames == 0 { break }
                    buffer = buffer.prefix(frames)
                    guard send(.samples(buffer)) else { return }
                    break
                }
                guard send(.samples(buffer)) else { return }
            }
            _ = send(.end(failure: nil, corruptPackets: reader.corruptPackets))
        } catch {
            if isStopped { return }
            logger.warning("audio decoding failed; the rest of the item plays in silence",
                           ["uri": asset.url.mediaLocation, "error": "\(error)"])
            _ = send(.end(failure: "\(error)", corruptPackets: reader.corruptPackets))
        }
    }
}

/// `seconds` of sound at `rate` frames a second as whole frames, from 0 to `cap`: the times these
/// come from are a file's, and may be anything (a timestamp a century away would trap `Int(_:)`).
func wholeFrames(_ seconds: Double, rate: Int, atMost cap: Int) -> Int {
    let frames = seconds * Double(rate)
    guard frames > 0 else { return 0 }  // NaN too
    return frames >= Double(cap) ? cap : Int(frames.rounded())
}

extension PCMBuffer {
    /// The first `frames` frames (all of them when there are fewer).
    func prefix(_ frames: Int) -> PCMBuffer {
        let count = min(max(frames, 0), self.frames) * format.bytesPerFrame
        return PCMBuffer(format: format, bytes: Array(bytes.prefix(count)), pts: pts)!
    }

    /// Without its first `frames` frames (its `pts` moved on accordingly).
    func dropping(_ frames: Int) -> PCMBuffer {
        let n = min(max(frames, 0), self.frames)
        return PCMBuffer(format: format, bytes: Array(bytes.dropFirst(n * format.bytesPerFrame)),
                         pts: pts + format.duration(frames: n))!
    }

    /// `frames` frames of silence in `format`, starting at `pts`.
    static func silence(_ format: PCMFormat, frames: Int, pts: MediaTime) -> PCMBuffer {
        PCMBuffer(format: format, bytes: [UInt8](repeating: 0, count: max(0, frames) * format.bytesPerFrame), pts: pts)!
    }

    /// Float32 samples scaled by a gain going from `start` to `end` over the buffer (no step: no
    /// click when the volume changes). Other encodings are returned as they are.
    func scaled(from start: Float, to end: Float) -> PCMBuffer {
        guard format.encoding == .float32, start != 1 || end != 1 else { return self }
        var out = bytes
        let channels = format.channels, frames = self.frames
        out.withUnsafeMutableBytes { raw in
            let samples = raw.bindMemory(to: Float.self)
            let step = frames > 1 ? (end - start) / Float(frames) : 0
            for frame in 0..<frames {
                let gain = start + step * Float(frame)
                for channel in 0..<channels { samples[frame * channels + channel] *= gain }
            }
        }
        return PCMBuffer(format: format, bytes: out, pts: pts)!
    }
}
