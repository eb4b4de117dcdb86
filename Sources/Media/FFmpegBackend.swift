import Foundation
import Playback

/// The FFmpeg implementation of `MediaBackend`: assets probe a file's container and stream
/// parameters (`VideoDecoder.describe(path:)`: a missing, non-media or unsupported file fails
/// there with FFmpeg's reason; a stream that cannot be decoded fails at its reader's first frame),
/// and readers are decoders.
public struct FFmpegBackend: MediaBackend {
    /// Decoder threads per reader; 0 lets FFmpeg choose.
    public var threads: Int
    /// The hardware path readers try first (`decode.hwdec`).
    public var hardware: HardwareDecoding
    /// Told about every reader opened: the file, its stream and the decoding path in use.
    public var onOpen: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)?
    /// Told when a reader's first frame had to be converted with swscale: the file, the decoded
    /// format and the format drawn.
    public var onConversion: (@Sendable (String, String, String) -> Void)?
    /// Where readers find the display's DMA-BUF import (zero-copy); nil: hardware frames are copied.
    public var display: InteropTargetSlot?
    /// How long a still image (PNG, JPEG) at this path shows, in seconds; nil: 10 s.
    public var stillDuration: (@Sendable (String) -> Double?)?
    /// Where readers' frames are converted to RGB (read per frame): `.cpu` turns each into RGBA
    /// on the decode thread. nil: the shader converts.
    public var colorConversion: ColorConversionSwitch?
    /// The output's largest texture side: frames larger than it are scaled down to fit on the
    /// decode thread (keeping their aspect). nil: frames keep their size.
    public var textureLimit: TextureSizeLimit?
    /// Told when a reader's first frame too large for the output was scaled down: the file, the
    /// decoded size and the size drawn.
    public var onDownscale: (@Sendable (String, String, String) -> Void)?

    public init(threads: Int = 0, hardware: HardwareDecoding = .none,
                onOpen: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)? = nil) {
        self.threads = threads
        self.hardware = hardware
        self.onOpen = onOpen
    }

    /// The asset's description from the container alone (`VideoDecoder.describe(path:)`): cheap,
    /// so an item's decode thread reaches its first frame sooner. A stream that cannot be decoded
    /// fails when its item's decoder reads it, and the item is skipped then.
    public func probe(_ url: URL) throws -> AssetDescription {
        let (info, rotation, matrix) = try VideoDecoder.describe(path: url.path)
        let rate = info.frameRate
        let duration = info.isStillImage ? still(url.path) : info.duration
        let track = AssetTrack(
            trackID: 1, mediaType: .video,
            naturalSize: VideoSize(width: info.width, height: info.height),
            preferredTransform: Transform2D(rotationDegrees: rotation.rawValue),
            nominalFrameRate: rate,
            minFrameDuration: rate > 0 ? MediaTime(seconds: 1 / rate, preferredTimescale: 90_000) : .invalid,
            codec: info.codec, pixelFormat: info.pixelFormat, colorSpace: matrix.rawValue)
        return AssetDescription(duration: duration, tracks: [track])
    }

    /// Decodes the first frame in software, on one thread.
    public func checkFirstFrame(_ url: URL) throws {
        guard try VideoDecoder(path: url.path, threads: 1).nextFrame() != nil else {
            throw MediaError(uri: url.path, call: "avcodec_receive_frame", reason: "the video stream has no decodable frame")
        }
    }

    private func still(_ path: String) -> MediaTime {
        MediaTime(seconds: stillDuration?(path) ?? 10, preferredTimescale: 1000)
    }

    public func openReader(_ url: URL) throws -> any FrameReader {
        let decoder = try VideoDecoder(path: url.path, threads: threads, hardware: hardware, display: display)
        if decoder.info.isStillImage { decoder.stillDuration = still(url.path) }
        onOpen?(url.path, decoder.info, decoder.decodingPath)
        let reader = DecoderReader(decoder: decoder, onChange: onOpen, onConversion: onConversion, colorConversion: colorConversion)
        reader.textureLimit = textureLimit
        reader.onDownscale = onDownscale
        return reader
    }
}

/// A `VideoDecoder` as a frame reader; owned by one item's decode thread. Reports a change of
/// decoding path (hardware failing over to software mid-stream) through `onChange`.
final class DecoderReader: FrameReader {
    let decoder: VideoDecoder
    private let onChange: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)?
    private let onConversion: (@Sendable (String, String, String) -> Void)?
    private let colorConversion: ColorConversionSwitch?
    /// Made at the first frame converted to RGBA.
    private var rgba: RGBAConverter?
    private var path: DecodingPath
    private var first = true
    var textureLimit: TextureSizeLimit?
    var onDownscale: (@Sendable (String, String, String) -> Void)?
    /// Made at the first frame larger than the texture limit.
    private var downscaler: RGBAConverter?
    private var reportedDownscale = false
    private var frameDrop = DecoderFrameDrop.none
    /// Decoded frames ending by this item time are discarded unconverted (they are late).
    private var discardEndingBy: (@Sendable () -> MediaTime?)?

    init(decoder: VideoDecoder, onChange: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)? = nil,
         onConversion: (@Sendable (String, String, String) -> Void)? = nil, colorConversion: ColorConversionSwitch? = nil) {
        self.decoder = decoder
        self.onChange = onChange
        self.onConversion = onConversion
        self.colorConversion = colorConversion
        path = decoder.decodingPath
    }

    func nextFrame() throws -> (any PresentableFrame)? {
        var frame = try decoder.nextFrame()
        // Late frames go unconverted, but every fourth is handed over: the feeder learns from it
        // how far behind decoding is (and skips more).
        var discarded = 0
        while discarded < 3, let late = frame, let limit = discardEndingBy?(), late.pts + late.duration <= limit {
            frame = try decoder.nextFrame()
            discarded += 1
        }
        // The first frame waits (briefly) for the output to choose; later ones follow the switch.
        if let decoded = frame, let colorConversion,
           (first ? colorConversion.waitForChoice(timeout: 0.5) : colorConversion.conversion) == .cpu {
            let converter = rgba ?? RGBAConverter()
            rgba = converter
            frame = try converter.convert(decoded)  // the decoded frame is freed here, its buffers reused
        }
        // A frame the output cannot hold as a texture is scaled down to fit (the first frame
        // waits briefly for the output to say its limit, as for the conversion).
        if let decoded = frame, let textureLimit,
           let limit = first ? textureLimit.waitForValue(timeout: 0.5) : textureLimit.maxSide,
           decoded.width > limit || decoded.height > limit {
            let inMemory = decoded.drmPrime == nil ? decoded : try decoded.copiedToMemory()
            let scaler = downscaler ?? RGBAConverter()
            downscaler = scaler
            let fitted = try scaler.convert(inMemory, fitting: limit)
            if !reportedDownscale {
                reportedDownscale = true
                onDownscale?(decoder.uri, "\(decoded.width)x\(decoded.height)", "\(fitted.width)x\(fitted.height)")
            }
            frame = fitted
        }
        if first, let frame {
            first = false
            if let from = frame.convertedFrom { onConversion?(decoder.uri, from, frame.pixelFormat.rawValue) }
        }
        if decoder.decodingPath != path {
            path = decoder.decodingPath
            if frameDrop != .none { decoder.setFrameDrop(frameDrop) }  // a new session skips nothing
            onChange?(decoder.uri, decoder.info, path)
        }
        return frame
    }

    func seek(to time: MediaTime) throws { try decoder.seek(to: time) }

    var canceller: (@Sendable () -> Void)? { decoder.canceller }
    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
        if drop != frameDrop { decoder.setFrameDrop(drop) }
        frameDrop = drop
        discardEndingBy = clock
    }
}
