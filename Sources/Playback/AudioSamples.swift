/// How interleaved audio samples are stored: one frame holds one sample per channel.
public enum SampleEncoding: String, Sendable, Hashable, CaseIterable {
    /// Signed 16-bit integers, native byte order.
    case int16
    /// Signed 32-bit integers, native byte order.
    case int32
    /// 32-bit floats, nominally -1...1, native byte order.
    case float32

    public var bytesPerSample: Int {
        switch self {
        case .int16: 2
        case .int32, .float32: 4
        }
    }
}

/// The format of interleaved PCM audio: rate, channels (with their speaker positions, where known)
/// and sample encoding. Values come from files and devices: `init` refuses what is out of range.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    /// The most channels accepted (FFmpeg's layouts and ALSA devices go no further in practice).
    public static let maxChannels = 64
    /// Accepted sample rates, in Hz.
    public static let sampleRates = 1_000...768_000

    public let sampleRate: Int
    public let channels: Int
    /// The speakers as FFmpeg's native channel mask (bit 0 front left, 1 front right, 2 front
    /// centre, ...); 0: unspecified, the usual layout for the channel count.
    public let channelMask: UInt64
    public let encoding: SampleEncoding

    /// nil when the rate or the channel count is out of range, or the mask names another count.
    public init?(sampleRate: Int, channels: Int, channelMask: UInt64 = 0, encoding: SampleEncoding) {
        guard Self.sampleRates.contains(sampleRate), (1...Self.maxChannels).contains(channels) else { return nil }
        guard channelMask == 0 || channelMask.nonzeroBitCount == channels else { return nil }
        self.sampleRate = sampleRate
        self.channels = channels
        self.channelMask = channelMask
        self.encoding = encoding
    }

    /// Bytes in one frame (one sample of every channel).
    public var bytesPerFrame: Int { channels * encoding.bytesPerSample }

    /// The length of `frames` frames at this rate.
    public func duration(frames: Int) -> MediaTime {
        MediaTime(value: Int64(frames), timescale: Int32(sampleRate))
    }

    public var description: String {
        "\(sampleRate) Hz, \(channels) ch\(channelMask == 0 ? "" : " (mask 0x\(String(channelMask, radix: 16)))"), \(encoding.rawValue)"
    }
}

/// A block of interleaved PCM audio with the time of its first sample: `pts` is relative to its
/// item's start, on the item's own timeline (the one its pictures' `pts` are on), so a player can
/// line samples up with pictures.
public struct PCMBuffer: Sendable {
    public let format: PCMFormat
    /// The samples, `frames * format.bytesPerFrame` bytes, interleaved, native byte order.
    public let bytes: [UInt8]
    public let pts: MediaTime

    /// nil when `bytes` is not a whole number of frames.
    public init?(format: PCMFormat, bytes: [UInt8], pts: MediaTime) {
        guard bytes.count % format.bytesPerFrame == 0 else { return nil }
        self.format = format
        self.bytes = bytes
        self.pts = pts
    }

    public var frames: Int { bytes.count / format.bytesPerFrame }
    public var duration: MediaTime { format.duration(frames: frames) }
    /// The time just after the last sample.
    public var end: MediaTime { pts + duration }

    /// Every sample as a Float in -1...1 (integers scaled by their full range), interleaved.
    public var floatSamples: [Float] {
        let size = format.encoding.bytesPerSample
        let encoding = format.encoding
        return bytes.withUnsafeBytes { raw in
            (0..<(raw.count / size)).map { i in
                switch encoding {
                case .float32: raw.loadUnaligned(fromByteOffset: i * size, as: Float.self)
                case .int16: Float(raw.loadUnaligned(fromByteOffset: i * size, as: Int16.self)) / 32768
                case .int32: Float(Double(raw.loadUnaligned(fromByteOffset: i * size, as: Int32.self)) / 2_147_483_648)
                }
            }
        }
    }
}

/// Reads the decoded audio of one file, in order: interleaved float32 buffers whose `pts` are on
/// the item's picture timeline. Used from one thread at a time (an item's audio decode thread).
public protocol AudioReader: AnyObject {
    /// The next buffer, or nil at the end of the stream.
    func nextBuffer() throws -> PCMBuffer?
    /// Positions the reader so that the next buffer starts at `time` (to the sample).
    func seek(to time: MediaTime) throws
    /// Packets that failed to decode and were skipped so far.
    var corruptPackets: Int { get }
    /// Ends the reader's waits (slow storage) from another thread.
    var canceller: @Sendable () -> Void { get }
}
