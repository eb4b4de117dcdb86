import CFFmpeg
import Foundation
import Network
import Playback
import Synchronization

/// The FFmpeg implementation of `MediaBackend`: assets probe a file's container and stream
/// parameters (`VideoDecoder.describe(path:)`: a missing, non-media or unsupported file fails
/// there with FFmpeg's reason; a stream that cannot be decoded fails at its reader's first frame),
/// and readers are decoders.
public struct FFmpegBackend: MediaBackend {
    /// Decoder threads per reader; 0: one per core (`CodecSession.automaticThreads`).
    public var threads: Int
    /// The hardware path readers try first (`decode.hwdec`).
    public var hardware: HardwareDecoding
    /// Told about every reader opened: the file, its stream and the decoding path in use.
    public var onOpen: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)?
    /// Told when a reader's first frame had to be converted with swscale: the file, the decoded
    /// format and the format drawn.
    public var onConversion: (@Sendable (String, String, String) -> Void)?
    /// What the output the frames are for can do, known before any reader opens (the output
    /// opens first): its largest texture side (larger frames are scaled down on the decode thread,
    /// keeping their aspect). Frames stay as decoded whatever its colour conversion: with `.cpu`
    /// the player layer turns each into RGBA as it uploads it. `.unconstrained`: frames as decoded.
    public var output: OutputCapabilities
    /// The output's DMA-BUF decision (zero-copy), made from its capabilities: each hardware
    /// decoder asks it once, at its first frame. nil: hardware frames are copied.
    public var interop: (any FrameInteropTarget)?
    /// How long a still image (PNG, JPEG) at this path shows, in seconds; nil: 10 s.
    public var stillDuration: (@Sendable (String) -> Double?)?
    /// Told when a reader's first frame too large for the output was scaled down: the file, the
    /// decoded size and the size drawn.
    public var onDownscale: (@Sendable (String, String, String) -> Void)?
    /// How long opens and reads may wait, and the network sources allowed (none by default).
    public var limits = MediaIOLimits.standard
    /// A live network source's stall limit and reopening backoff (`LiveReader`).
    public var live = LiveSourceHealth.Policy()
    /// The longest a live source's frame may wait to be shown before frames are dropped to catch
    /// up (`LiveLatency`, seconds); nil: unbounded.
    public var liveLagBound: Double?
    /// A network source's item options (`live`: RTSP transport, latency mode, lag bound, HLS
    /// variant), by its URL; nil: none.
    public var sourceOptions: (@Sendable (String) -> LiveSourceOptions?)?
    /// The height pictures are shown at (the output's), for the HLS variant that fits it; nil: not known.
    public var outputHeight: Int?
    /// Told when a live source goes down, comes back, or its reader goes while it is down, and
    /// each kept frame's lag: its URL first.
    public var onLiveChange: (@Sendable (String, LiveSourceChange) -> Void)?

    public init(threads: Int = 0, hardware: HardwareDecoding = .none, output: OutputCapabilities = .unconstrained,
                interop: (any FrameInteropTarget)? = nil,
                onOpen: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)? = nil) {
        self.threads = threads
        self.hardware = hardware
        self.output = output
        self.interop = interop
        self.onOpen = onOpen
    }

    /// The asset's description from the container alone (`VideoDecoder.describe(path:)`): cheap,
    /// so an item's decode thread reaches its first frame sooner. A stream that cannot be decoded
    /// fails when its item's decoder reads it, and the item is skipped then.
    public func probe(_ url: URL) throws -> AssetDescription {
        guard url.isFileURL else {
            // A network source: described from an open of its own (its reader opens it again:
            // `LiveReader` reopens it when it fails).
            let describe = {
                let input = try FileInput(path: url.mediaLocation, limits: self.networkLimits(url))
                return try withExtendedLifetime(input) { try self.describe(input.format, path: url.mediaLocation, sound: false) }
            }
            guard opensOneAtATime(url) else { return try describe() }
            return try OneReaderStreams.shared.probe(url.mediaLocation, limit: limits.open, describe)
        }
        return try FFmpegSource(url: url, backend: self).describe()
    }

    /// Opens a file once (`Demuxer`): the asset's probe and every decoder of its items read it.
    /// A network source keeps the per-call readers (`LiveReader` reopens what fails).
    public func openSource(_ url: URL) throws -> any MediaSource {
        guard url.isFileURL else { return BackendCalls(backend: self, url: url) }
        return try FFmpegSource(url: url, backend: self)
    }

    public func opensOneAtATime(_ url: URL) -> Bool { !url.isFileURL && NetworkURL.isOneReaderStream(url.absoluteString) }

    /// The description of the open file `fmt` (`path`'s), its sound's track with it unless not
    /// `sound`; the caller keeps other readers away.
    func describe(_ fmt: UnsafeMutablePointer<AVFormatContext>, path: String, sound: Bool = true) throws -> AssetDescription {
        let (info, rotation, matrix) = try VideoDecoder.describe(fmt, path: path)
        let rate = info.frameRate
        let duration = info.isStillImage ? still(path) : info.duration
        let track = AssetTrack(
            trackID: 1, mediaType: .video,
            naturalSize: VideoSize(width: info.width, height: info.height),
            preferredTransform: Transform2D(rotationDegrees: rotation.rawValue),
            nominalFrameRate: rate,
            minFrameDuration: rate > 0 ? MediaTime(seconds: 1 / rate, preferredTimescale: 90_000) : .invalid,
            codec: info.codec, pixelFormat: info.pixelFormat, colorSpace: matrix.rawValue)
        // The sound's track too, as AVFoundation lists it (stills have none).
        let audio = info.isStillImage || !sound ? nil : Self.audioTrack(fmt)
        return AssetDescription(duration: duration, tracks: [track] + (audio.map { [$0] } ?? []))
    }

    /// Decodes the first frame in software, on one thread.
    public func checkFirstFrame(_ url: URL) throws {
        guard try VideoDecoder(path: url.mediaLocation, threads: 1, limits: limits).nextFrame() != nil else {
            throw MediaError(uri: url.mediaLocation, call: "avcodec_receive_frame", reason: "the video stream has no decodable frame")
        }
    }

    private func still(_ path: String) -> MediaTime {
        MediaTime(seconds: stillDuration?(path) ?? 10, preferredTimescale: 1000)
    }

    public func openReader(_ url: URL) throws -> any FrameReader {
        guard url.isFileURL else { return try openReader(url, threads: threads) }
        return try FFmpegSource(url: url, backend: self).openReader()
    }

    /// A hardware path is tried as for playback, so that an item's frames all come the same way;
    /// in software (none asked for, or none that works: `hwdec` `auto` on a machine without),
    /// one decoding thread: a preroll's first frames then cost one decoder's reference frames,
    /// not those of every frame thread, while the playing item's decoder runs too (its item's own
    /// reader opens when that item is next). Its first picture comes from the file's first
    /// packet alone where that is the stream's first picture
    /// (`VideoDecoder.decodesFirstPacketAlone`): one picture buffer, not the decoder's
    /// reordering delay's worth.
    public func openPrerollReader(_ url: URL) throws -> any FrameReader {
        guard url.isFileURL else { return try openReader(url, threads: 1, firstPacketAlone: true) }
        return try FFmpegSource(url: url, backend: self).openPrerollReader()
    }

    /// A network source with no duration is live: its reader reopens it when it fails (`LiveReader`).
    private func openReader(_ url: URL, threads: Int, firstPacketAlone: Bool = false) throws -> any FrameReader {
        // Held from before the open: a probe of the stream meanwhile takes its description instead of opening it.
        let hold = opensOneAtATime(url) ? OneReaderStreams.shared.hold(url.mediaLocation) : nil
        let reader = try openDecoderReader(url, threads: threads, firstPacketAlone: firstPacketAlone)
        guard !url.isFileURL, !reader.decoder.info.duration.isNumeric else { return reader }
        let lagBound = sourceOptions?(url.mediaLocation)?.latency ?? liveLagBound
        let rate = reader.decoder.frameRate
        return LiveReader(uri: url.mediaLocation, first: reader, policy: live, lagBound: lagBound, holding: hold, onChange: onLiveChange) {
            try openDecoderReader(url, threads: threads, knownFrameRate: rate)
        }
    }

    private func openDecoderReader(_ url: URL, threads: Int, firstPacketAlone: Bool = false,
                                   knownFrameRate: AVRational? = nil) throws -> DecoderReader {
        var limits = networkLimits(url)
        limits.knownFrameRate = knownFrameRate
        // A network read waits no longer than a live picture may stand still.
        if !url.isFileURL { limits.read = min(limits.read, live.stallTimeout) }
        let decoder = try VideoDecoder(path: url.mediaLocation, threads: threads, hardware: hardware, interop: interop, limits: limits)
        return reader(decoder, path: url.mediaLocation, firstPacketAlone: firstPacketAlone)
    }

    /// The limits of opening `url`: a network source's with its item's options and the output's height.
    func networkLimits(_ url: URL) -> MediaIOLimits {
        var limits = self.limits
        guard !url.isFileURL else { return limits }
        limits.source = sourceOptions?(url.mediaLocation) ?? LiveSourceOptions()
        limits.fitHeight = outputHeight
        return limits
    }

    /// A reader of `demuxer`'s video stream (see `openPrerollReader` for `threads` and
    /// `firstPacketAlone`).
    func openReader(_ demuxer: Demuxer, threads: Int, firstPacketAlone: Bool = false) throws -> any FrameReader {
        // The first frames decoded while the output opened (`EarlyStart`), with their decoder; a
        // preroll's reader lets them go (its cursor would hold packets for nobody).
        if let early = EarlyStart.takeDecoder(for: demuxer, preroll: firstPacketAlone, hardware: hardware) {
            // One thread, as asked, or the stream ended: the early decoder reads on. Otherwise the
            // reader's own decoder opens once the early frames are handed out (after the first
            // picture, not before it).
            let own: DecoderReader.Opening? = threads == 1 || early.ended ? nil : { [interop, hardware] in
                try VideoDecoder(demuxer: demuxer, threads: threads, hardware: hardware, interop: interop,
                                 sessions: FFmpegCodecSessions())
            }
            return reader(early.decoder, path: demuxer.path, firstPacketAlone: false, decoded: early.frames, own: own)
        }
        let decoder = try VideoDecoder(demuxer: demuxer, threads: threads, hardware: hardware, interop: interop,
                                       sessions: FFmpegCodecSessions())
        return reader(decoder, path: demuxer.path, firstPacketAlone: firstPacketAlone)
    }

    private func reader(_ decoder: VideoDecoder, path: String, firstPacketAlone: Bool, decoded: [VideoFrame] = [],
                        own: DecoderReader.Opening? = nil) -> DecoderReader {
        if firstPacketAlone { decoder.decodesFirstPacketAlone() }
        if decoder.info.isStillImage { decoder.stillDuration = still(path) }
        onOpen?(path, decoder.info, decoder.decodingPath)
        return DecoderReader(decoder: decoder, decoded: decoded, own: own, maxTextureSide: output.maxTextureSize,
                             onChange: onOpen, onConversion: onConversion, onDownscale: onDownscale)
    }
}

/// The FFmpeg backend's `MediaSource`: one `Demuxer` for the file, read by the probe and by every
/// decoder of the asset's items, each through a cursor of its own.
final class FFmpegSource: MediaSource, @unchecked Sendable {
    // @unchecked: `demuxer` is safe from any thread; `backend` is a value set once.
    let demuxer: Demuxer
    let backend: FFmpegBackend

    init(url: URL, backend: FFmpegBackend) throws {
        // The first item's file may have been opened while the output opened (`EarlyStart`).
        demuxer = try EarlyStart.takeDemuxer(path: url.mediaLocation, limits: backend.limits)
            ?? Demuxer(path: url.mediaLocation, limits: backend.limits)
        self.backend = backend
    }

    func describe() throws -> AssetDescription {
        try demuxer.withFormat { try backend.describe($0, path: demuxer.path) }
    }

    func openReader() throws -> any FrameReader { try backend.openReader(demuxer, threads: backend.threads) }

    func openPrerollReader() throws -> any FrameReader {
        try backend.openReader(demuxer, threads: 1, firstPacketAlone: true)
    }

    func openAudioReader() throws -> (any AudioReader)? { try backend.openAudioReader(demuxer) }

    var isUsable: Bool { !demuxer.input.isStopped }
}

/// A `VideoDecoder` as a frame reader; owned by one item's decode thread. Reports a change of
/// decoding path (hardware failing over to software mid-stream) through `onChange`.
final class DecoderReader: FrameReader {
    /// Opens a decoder of the reader's stream, from its start.
    typealias Opening = () throws -> VideoDecoder

    private(set) var decoder: VideoDecoder
    /// The output's largest texture side: larger frames are scaled down here (nil: no limit).
    private let maxTextureSide: Int?
    private let onChange: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)?
    private let onConversion: (@Sendable (String, String, String) -> Void)?
    private let onDownscale: (@Sendable (String, String, String) -> Void)?
    private var path: DecodingPath
    private var first = true
    /// Made at the first frame larger than the texture limit.
    private var downscaler: RGBAConverter?
    private var reportedDownscale = false
    private var frameDrop = DecoderFrameDrop.none
    /// Decoded frames ending by this item time are discarded (they are late).
    private var discardEndingBy: (@Sendable () -> MediaTime?)?
    /// Frames `decoder` gave before this reader was made (`EarlyStart`), the last first: handed out
    /// first, in order. (An array, not a slice: a slice would keep the frames handed out alive.)
    private var decodedBefore: [VideoFrame]
    /// How many frames this reader was given, decoded before it was made.
    let decodedEarly: Int
    /// The reader's own decoder, opened in place of `decoder` once `decodedBefore` is handed out.
    private var own: Opening?
    /// The last of the frames given (while `own` is set): its decoder's frames up to it are dropped
    /// (it decodes them again).
    private var skipThrough: MediaTime?
    /// Cancels the current decoder's waits, and those of any opened after a cancel.
    private let cancels = CancelRelay()

    /// - Parameters:
    ///   - decoded: frames `decoder` gave before this reader was made, handed out first.
    ///   - own: where set, once those are handed out (or at a seek) `decoder` closes and this
    ///     opens the reader's own decoder, which decodes the stream again from its start and
    ///     drops the frames already handed out.
    init(decoder: VideoDecoder, decoded: [VideoFrame] = [], own: Opening? = nil, maxTextureSide: Int? = nil,
         onChange: (@Sendable (String, VideoStreamInfo, DecodingPath) -> Void)? = nil,
         onConversion: (@Sendable (String, String, String) -> Void)? = nil,
         onDownscale: (@Sendable (String, String, String) -> Void)? = nil) {
        self.decoder = decoder
        decodedBefore = decoded.reversed()
        decodedEarly = decoded.count
        self.own = own
        skipThrough = own == nil ? nil : decoded.last?.pts
        cancels.follow(decoder.canceller)
        self.maxTextureSide = maxTextureSide
        self.onChange = onChange
        self.onConversion = onConversion
        self.onDownscale = onDownscale
        path = decoder.decodingPath
    }

    func nextFrame() throws -> (any PresentableFrame)? {
        var frame: VideoFrame?
        if let early = decodedBefore.popLast() {
            frame = early
        } else {
            openOwn()
            frame = try decoder.nextFrame()
            if let skip = skipThrough {
                while let again = frame, again.pts <= skip { frame = try decoder.nextFrame() }
                skipThrough = nil
            }
        }
        // Late frames are discarded, but every fourth is handed over: the feeder learns from it
        // how far behind decoding is (and skips more).
        var discarded = 0
        while discarded < 3, let late = frame, let limit = discardEndingBy?(), late.pts + late.duration <= limit {
            frame = try decoder.nextFrame()
            discarded += 1
        }
        // A frame the output cannot hold as a texture is scaled down to fit.
        if let decoded = frame, let limit = maxTextureSide, decoded.width > limit || decoded.height > limit {
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

    func seek(to time: MediaTime) throws {
        decodedBefore = []
        openOwn()
        skipThrough = nil
        try decoder.seek(to: time)
    }

    /// Closes the decoder the reader was given and opens its own (`own`), once. One that cannot
    /// open leaves the given decoder reading on (one thread, but no frame lost).
    private func openOwn() {
        guard let opening = own else { return }
        own = nil
        guard let opened = try? opening() else {
            skipThrough = nil
            return
        }
        decoder = opened  // the early decoder closes here
        releaseFreedMemory()
        if frameDrop != .none { opened.setFrameDrop(frameDrop) }
        cancels.follow(opened.canceller)
    }

    var canceller: (@Sendable () -> Void)? { cancels.cancel }

    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
        if drop != frameDrop { decoder.setFrameDrop(drop) }
        frameDrop = drop
        discardEndingBy = clock
    }
}

/// A reader's cancel, passed to whichever decoder it reads with now: a decoder it follows after
/// the cancel is cancelled as it is followed.
private final class CancelRelay: Sendable {
    private let state = Mutex<(cancelled: Bool, current: @Sendable () -> Void)>((false, {}))

    func follow(_ canceller: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { state -> Bool in
            state.current = canceller
            return state.cancelled
        }
        if cancelled { canceller() }
    }

    @Sendable func cancel() {
        let current = state.withLock { state -> @Sendable () -> Void in
            state.cancelled = true
            return state.current
        }
        current()
    }
}
