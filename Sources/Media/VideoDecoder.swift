import CFFmpeg
import CShim
import Foundation
import Playback

/// What a file's video stream is, read when it is opened.
public struct VideoStreamInfo: Sendable {
    public let width: Int
    public let height: Int
    public let codec: String
    /// FFmpeg's name of the decoded pixel format (`yuv420p`, `nv12`, ...).
    public let pixelFormat: String
    /// Frames per second as the container states it; 0 when unknown.
    public let frameRate: Double
    /// Length of the stream; indefinite when the container does not say.
    public let duration: MediaTime
    /// Decoder threads in use; 0 where no decoder is open (`VideoDecoder.describe(path:)`).
    public let threads: Int
    /// A single picture (PNG, JPEG, ...) rather than a video: shown for `VideoDecoder.stillDuration`.
    public let isStillImage: Bool
}

/// Demuxes and decodes the best video stream of one file in software, with frame threads.
///
/// Used from one thread at a time (the playlist's decode thread). Each decoded frame becomes a
/// `VideoFrame` that owns its buffers; formats the player layer cannot draw are converted with
/// swscale once per frame to the nearest one it can (`VideoFrame.convertedFrom` says so).
public final class VideoDecoder {
    public let uri: String
    public let info: VideoStreamInfo
    /// How long the picture of a still image shows (its one frame's duration).
    public var stillDuration = MediaTime(value: 10, timescale: 1)

    /// The open file and its demuxer; closed when the decoder goes.
    private let input: FileInput
    private var format: UnsafeMutablePointer<AVFormatContext> { input.format }
    /// The open codec context; replaced by a software one when the hardware path fails.
    private var session: CodecSession
    /// The software decoder for this stream (the fallback of every hardware path).
    private let softwareDecoder: UnsafePointer<AVCodec>
    private let stream: UnsafeMutablePointer<AVStream>
    private let threads: Int
    /// What this decoder uses now: hardware or software, and why.
    public private(set) var decodingPath: DecodingPath
    /// Frames handed out so far.
    private var delivered = 0
    /// Timestamp of the last frame handed out; after a switch to software, earlier frames are skipped.
    private var lastDelivered: Int64?
    /// `lastDelivered` before the last frame decoded: where a reopened decoder resumes when that
    /// frame could not be handed out after all.
    private var previousDelivered: Int64?
    private var skipThrough: Int64?
    /// Test hook: from this many delivered frames on, the initial decoding path fails every frame
    /// (as a hardware decoder that dies mid-stream would).
    var injectFailuresAfterFrames: Int?
    /// True once the decoder has switched to software mid-stream (it does so at most once).
    private var switched = false
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Tags, and swscale for the formats the player layer does not draw (FrameConverter.swift).
    private lazy var converter = FrameConverter(uri: uri)
    /// The container's display matrix as a clockwise turn; every frame carries it.
    private var displayRotation: Rotation = .none
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let startTime: Int64
    private let nominalFrameDuration: MediaTime
    private var draining = false
    /// Where the next frame is due on the continuous timeline, in stream ticks (`timing(of:)`).
    private var nextPTS: Int64?
    /// Added to the file's timestamps since the last discontinuity (`timing(of:)`).
    private var segmentOffset: Int64 = 0
    /// One frame at the nominal rate, in stream ticks (at least 1).
    private let nominalTicks: Int64
    /// Whether the container's timestamps may jump forward (`AVFMT_TS_DISCONT`: MPEG-TS and -PS,
    /// captures): elsewhere a forward gap is the file's own timing (a variable-rate recording's
    /// still stretch), kept as it is. A jump backward is a new segment in any container.
    private let timestampsMayJump: Bool
    private var consecutiveErrors = 0
    /// The last failure counted (`countError`): what an item that ends without a frame failed of.
    private var lastFailure: MediaError?
    /// Whether the decoder was positioned (`seek`): a seek past the end may rightly give no frame.
    private var sought = false
    /// How hardware frames reach the display, chosen once when the decoder opens (`chooseInterop`);
    /// `.dmabuf` turns into `.copy` for the rest of the item when the display fails to import one.
    private var interop: FrameInterop = .none
    /// Set by a frame the display could not import (presentation thread).
    private let feedback = InteropFeedback()
    /// The first hardware frame, decoded while the interop was chosen; handed out first.
    private var pending: UnsafeMutablePointer<AVFrame>?

    /// Opens `path` and its decoder. Throws a `MediaError` naming the file and FFmpeg's reason.
    /// - Parameters:
    ///   - threads: decoder threads; 0 lets FFmpeg size them for the machine (cores + 1, capped).
    ///   - hardware: the hardware path to try first; when it cannot start, software decodes and
    ///     `decodingPath` says why.
    ///   - interop: the output's DMA-BUF decision, known before the decoder opens (the output
    ///     opens first): with it, hardware frames that can be had as DRM PRIME stay in DMA-BUFs
    ///     (`VideoFrame.Storage.drmPrime`) when the output can import them; without it they are
    ///     copied to memory.
    ///   - limits: how long opening and each read may wait (`MediaIOLimits`).
    public init(path: String, threads: Int = 0, hardware: HardwareDecoding = .none, interop: (any FrameInteropTarget)? = nil,
                limits: MediaIOLimits = .standard) throws {
        uri = path
        let (opened, index, decoder) = try Self.openVideoStream(path, limits: limits)
        input = opened  // closes the file when this init throws, or when the decoder goes
        let fmt = opened.format
        streamIndex = index
        timestampsMayJump = fmt.pointee.iformat.map { $0.pointee.flags & AVFMT_TS_DISCONT != 0 } ?? false
        let stream = try Self.checkedStream(fmt, index, path: path)
        timeBase = stream.pointee.time_base
        startTime = stream.pointee.start_time == noPTS ? 0 : stream.pointee.start_time
        // av_display_rotation_get counts counter-clockwise; the picture is shown turned back.
        displayRotation = Rotation(degrees: -mq_stream_display_rotation(stream))

        self.stream = stream
        self.threads = threads
        softwareDecoder = decoder
        var reasons: [String] = []
        var chosen: CodecSession?
        for kind in hardware == .auto ? HardwareDecoding.autoOrder : hardware == .none ? [] : [hardware] {
            let codecName = String(cString: decoder.pointee.name)
            if let known = HardwareFailures.shared.failure(kind, codec: codecName) {
                reasons.append("\(kind.rawValue): \(known.call) failed: \(known.reason)")
                continue
            }
            do {
                if kind == .v4l2m2m && interop != nil,
                   let m2m = try? CodecSession(hardware: kind, software: decoder, stream: stream, uri: path, drmPrime: true) {
                    chosen = m2m
                    break
                }
                chosen = try CodecSession(hardware: kind, software: decoder, stream: stream, uri: path)
                break
            } catch let error as MediaError {
                HardwareFailures.shared.record(error, kind, codec: codecName)
                reasons.append("\(kind.rawValue): \(error.call) failed: \(error.reason)")
            }
        }
        if let chosen {
            session = chosen
            decodingPath = chosen.path
        } else {
            session = try CodecSession(software: decoder, stream: stream, threads: threads, uri: path)
            decodingPath = .software
            if !reasons.isEmpty {
                decodingPath.fallbackReason = reasons.joined(separator: "; ")
                decodingPath.degraded = hardware != .auto
            }
        }
        let ctx = session.context!

        guard let pkt = av_packet_alloc() else {
            throw MediaError(uri: path, call: "av_packet_alloc", reason: "out of memory")
        }
        packet = pkt

        let rate = av_guess_frame_rate(fmt, stream, nil)
        nominalFrameDuration = ContainerValue.framesPerSecond(rate) != nil
            ? MediaTime(value: Int64(rate.den), timescale: rate.num)
            : MediaTime(value: 1, timescale: 25)
        nominalTicks = max(1, ContainerValue.ticks(seconds: nominalFrameDuration.seconds, timeBase: timeBase) ?? 1)
        info = try Self.describe(fmt, stream, decoder, width: ctx.pointee.width, height: ctx.pointee.height,
                                 pixelFormat: ctx.pointee.pix_fmt, threads: ctx.pointee.thread_count, uri: path, index: index)
        if session.kind != nil { try chooseInterop(interop) }
    }

    deinit {
        av_frame_free(&pending)
        av_packet_free(&packet)
    }

    /// Opens `path` (within `limits`: `FileInput`) and finds its best video stream and that
    /// stream's software decoder.
    private static func openVideoStream(_ path: String, limits: MediaIOLimits) throws
        -> (input: FileInput, stream: Int32, decoder: UnsafePointer<AVCodec>)
    {
        let input = try FileInput(path: path, limits: limits)
        var decoder: UnsafePointer<AVCodec>?
        let r = av_find_best_stream(input.format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard r >= 0, let decoder else {
            throw MediaError(uri: path, call: "av_find_best_stream", code: r,
                             reason: r == mq_averror_decoder_not_found() ? "no decoder for the video stream" : "no video stream")
        }
        return (input, r, decoder)
    }

    /// Stream `index` of `fmt`, when its time base can time its frames; otherwise a `MediaError`
    /// naming the file and the stream.
    private static func checkedStream(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ index: Int32,
                                      path: String) throws -> UnsafeMutablePointer<AVStream> {
        guard index >= 0, index < fmt.pointee.nb_streams, let stream = fmt.pointee.streams[Int(index)] else {
            throw MediaError(uri: path, call: "stream \(index)", reason: "no such stream (\(fmt.pointee.nb_streams) in the file)")
        }
        let timeBase = stream.pointee.time_base
        guard ContainerValue.isUsable(timeBase) else {
            throw MediaError(uri: path, call: "stream \(index)", reason: "time base \(timeBase.num)/\(timeBase.den) is not positive")
        }
        return stream
    }

    /// The stream's description from what the demuxer and the decoder (or, without one, the
    /// stream's parameters) say. A picture size out of range fails, naming the file and stream.
    private static func describe(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ stream: UnsafeMutablePointer<AVStream>,
                                 _ decoder: UnsafePointer<AVCodec>, width: Int32, height: Int32,
                                 pixelFormat: AVPixelFormat, threads: Int32, uri: String, index: Int32) throws -> VideoStreamInfo {
        guard let size = ContainerValue.pictureSize(width: width, height: height) else {
            throw MediaError(uri: uri, call: "stream \(index)",
                             reason: "picture size \(width)x\(height) is out of range (1 to \(ContainerValue.maxPictureSide) a side)")
        }
        let rate = av_guess_frame_rate(fmt, stream, nil)
        let timeBase = stream.pointee.time_base
        let duration: MediaTime
        if stream.pointee.duration > 0, let stated = ContainerValue.time(ticks: stream.pointee.duration, timeBase: timeBase) {
            duration = stated
        } else if fmt.pointee.duration > 0 && fmt.pointee.duration != noPTS {
            duration = MediaTime(value: fmt.pointee.duration, timescale: 1_000_000)
        } else {
            duration = .indefinite
        }
        // Pictures come through FFmpeg's image demuxers ("image2", "png_pipe", "jpeg_pipe", ...).
        let demuxer = String(cString: fmt.pointee.iformat.pointee.name)
        return VideoStreamInfo(width: size.width, height: size.height, codec: String(cString: decoder.pointee.name),
                               pixelFormat: av_get_pix_fmt_name(pixelFormat).map { String(cString: $0) } ?? "unknown",
                               frameRate: ContainerValue.framesPerSecond(rate) ?? 0,
                               duration: duration, threads: Int(threads),
                               isStillImage: demuxer == "image2" || demuxer.hasSuffix("_pipe"))
    }

    /// What `path`'s video stream is, from the container and the stream's parameters alone: no
    /// decoder is opened and nothing is decoded (an asset's probe; the item's decode thread opens
    /// the decoder when it plays). Also the stream's display rotation and its colour matrix.
    public static func describe(path: String, limits: MediaIOLimits = .standard) throws
        -> (info: VideoStreamInfo, rotation: Rotation, colorMatrix: ColorMatrix)
    {
        let (input, index, decoder) = try openVideoStream(path, limits: limits)
        defer { withExtendedLifetime(input) {} }  // the format context lives as long as `input`
        let opened = input.format
        let stream = try checkedStream(opened, index, path: path)
        let parameters = stream.pointee.codecpar.pointee
        let pixelFormat = AVPixelFormat(rawValue: parameters.format)
        let info = try describe(opened, stream, decoder, width: parameters.width, height: parameters.height,
                                pixelFormat: pixelFormat, threads: 0, uri: path, index: index)
        // RGB pictures become BT.709 frames (FrameConverter); Y'CbCr ones keep their own tags.
        let isRGB = av_pix_fmt_desc_get(pixelFormat)
            .map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        return (info, Rotation(degrees: -mq_stream_display_rotation(stream)),
                isRGB ? .bt709 : ColorMatrix(parameters.color_space, height: Int(parameters.height)))
    }

    /// Chooses, once, how this item's hardware frames reach the display: the output's target
    /// (given when the decoder opens, never waited for) decides from the first frame's DRM PRIME
    /// descriptor (decoded here and handed out first).
    private func chooseInterop(_ target: (any FrameInteropTarget)?) throws {
        guard let kind = session.kind else { return }
        var choice: InteropChoice
        switch target {
        case nil:
            choice = InteropChoice(.copy, "no output to import DMA-BUFs into")
        case let target?:
            guard session.offersDRMPrime else {
                let why = kind == .cuda ? "CUDA frames are not DMA-BUFs (no CUDA-EGL interop)" : "the \(kind.rawValue) decoder gives frames in memory"
                choice = target.chooseInterop(hardware: kind, firstFrame: .failure(MediaError(uri: uri, call: "DRM PRIME", reason: why)))
                break
            }
            guard let first = try decodeRaw() else { return }
            guard session.kind != nil else {  // the hardware failed before its first frame: software
                pending = first
                return
            }
            pending = first
            let descriptor: Result<DRMPrimeDescriptor, MediaError>
            if let hw = session.hardwareFormat, first.pointee.format == hw.rawValue {
                do {
                    descriptor = .success(try DRMPrimeFrame(hardware: first, feedback: feedback, uri: uri).descriptor)
                } catch let error as MediaError {
                    descriptor = .failure(error)
                }
            } else {
                let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: first.pointee.format)).map { String(cString: $0) } ?? "?"
                descriptor = .failure(MediaError(uri: uri, call: "DRM PRIME", reason: "the decoder gave \(name) frames"))
            }
            choice = target.chooseInterop(hardware: kind, firstFrame: descriptor)
        }
        interop = choice.interop == .dmabuf ? .dmabuf : .copy
        decodingPath.interop = interop.rawValue
        decodingPath.interopReason = choice.reason
        // A v4l2m2m decoder that ignored the request (FFmpeg's own v4l2m2m never asks get_format:
        // only some vendor builds give DRM PRIME) already gives memory frames: it stays as it is.
        let givesMemoryFrames = pending.map { $0.pointee.format != AV_PIX_FMT_DRM_PRIME.rawValue } ?? false
        if interop == .copy && session.kind == .v4l2m2m && session.hardwareFormat == AV_PIX_FMT_DRM_PRIME && !givesMemoryFrames {
            // The first frame was never handed out: the reopened decoder starts from the start.
            delivered = 0
            lastDelivered = nil
            try leaveDRMPrimeDecoder(reason: choice.reason)
        }
    }

    /// A v4l2m2m decoder asked for DRM PRIME frames cannot copy them to memory: reopen it for
    /// memory frames at the same position (software when that fails).
    private func leaveDRMPrimeDecoder(reason: String) throws {
        guard session.kind == .v4l2m2m, session.hardwareFormat == AV_PIX_FMT_DRM_PRIME else { return }
        do {
            let memory = try CodecSession(hardware: .v4l2m2m, software: softwareDecoder, stream: stream, uri: uri)
            try restart(with: memory)
        } catch let error as MediaError {
            try switchToSoftware(reason: "reopening v4l2m2m for memory frames (\(reason)): \(error.call) failed: \(error.reason)")
        }
    }

    /// The display could not import a frame: copy the rest of the item's frames.
    private func fallBackToCopy(_ reason: String) throws {
        interop = .copy
        decodingPath.interop = FrameInterop.copy.rawValue
        decodingPath.interopReason = "DMA-BUF import failed (\(reason)); frames copied for the rest of the item"
        decodingPath.interopFellBack = true
        try leaveDRMPrimeDecoder(reason: reason)
    }

    /// Ends the decoder's waits for data from any thread: the blocked read, and every later one,
    /// fails at once (`MediaError` with the reason "cancelled").
    public var canceller: @Sendable () -> Void {
        let state = input.state
        return { state.cancelled.store(true, ordering: .relaxed) }
    }

    /// The next frame in presentation order, or nil at the end of the stream.
    /// A corrupt packet is skipped; 16 failures in a row end decoding with an error.
    public func nextFrame() throws -> VideoFrame? {
        if interop == .dmabuf, let reason = feedback.reported { try fallBackToCopy(reason) }
        let raw: UnsafeMutablePointer<AVFrame>
        if let first = pending {
            pending = nil
            raw = first
        } else {
            guard let next = try decodeRaw() else { return nil }
            raw = next
        }
        if interop == .dmabuf, let hw = session.hardwareFormat, raw.pointee.format == hw.rawValue {
            do {
                let prime = try DRMPrimeFrame(hardware: raw, feedback: feedback, uri: uri)
                defer {
                    var done: UnsafeMutablePointer<AVFrame>? = raw  // the DRMPrimeFrame holds its own references
                    av_frame_free(&done)
                }
                return try makeFrame(raw, prime: prime)
            } catch let error as MediaError {
                if session.hardwareFormat == AV_PIX_FMT_DRM_PRIME && session.kind == .v4l2m2m {
                    // A DRM PRIME-only decoder: the reopened one decodes this frame again, so it
                    // resumes after the frame before it (not after this one, which was never shown).
                    var dropped: UnsafeMutablePointer<AVFrame>? = raw
                    av_frame_free(&dropped)
                    lastDelivered = previousDelivered
                    try fallBackToCopy("\(error.call) failed: \(error.reason)")
                    return try nextFrame()
                }
                do {
                    try fallBackToCopy("\(error.call) failed: \(error.reason)")
                } catch {
                    var failed: UnsafeMutablePointer<AVFrame>? = raw
                    av_frame_free(&failed)
                    throw error
                }
            }
        }
        let frame = try session.download(raw, uri: uri)
        return try makeFrame(taking: frame)
    }

    /// The next decoded frame as the decoder gives it (in hardware memory for a hardware path),
    /// frames already shown before a switch skipped; the caller owns it.
    private func decodeRaw() throws -> UnsafeMutablePointer<AVFrame>? {
        guard let packet else { return nil }
        while true {
            guard let allocated = av_frame_alloc() else {
                throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory")
            }
            let codec = session.context
            var r = avcodec_receive_frame(codec, allocated)
            if r == 0, let after = injectFailuresAfterFrames, delivered >= after, !switched {
                r = mq_averror(EIO)
            }
            if r == 0 {
                let frame = allocated
                let ts = frame.pointee.best_effort_timestamp
                if let skip = skipThrough, ts != noPTS, ts <= skip {
                    // Already shown before the switch to software.
                    var shown: UnsafeMutablePointer<AVFrame>? = frame
                    av_frame_free(&shown)
                    continue
                }
                skipThrough = nil
                consecutiveErrors = 0
                delivered += 1
                previousDelivered = lastDelivered
                if ts != noPTS { lastDelivered = ts }
                return frame
            }
            var frame: UnsafeMutablePointer<AVFrame>? = allocated
            av_frame_free(&frame)
            if r == averrorEOF { return try endOfStream() }
            guard r == averrorEAGAIN else {
                try countError(call: "avcodec_receive_frame", code: r)
                continue
            }
            if draining { return try endOfStream() }
            // The decoder wants input: feed it the next packet of our stream.
            let readResult = av_read_frame(format, packet)
            if readResult == averrorEOF {
                draining = true
                avcodec_send_packet(codec, nil)  // enter draining mode: flush delayed frames
                continue
            }
            guard readResult >= 0 else {
                // A read that timed out (or a cancel) ends the item now: a retry would wait again.
                if input.isStopped { throw FileInput.error(uri, input.state, call: "av_read_frame", code: readResult) }
                try countError(call: "av_read_frame", code: readResult)
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let sent = avcodec_send_packet(codec, packet)
            if sent < 0 && sent != averrorEAGAIN {
                try countError(call: "avcodec_send_packet", code: sent)
            }
        }
    }

    /// The end of the stream: nil, unless not one frame was decoded from the start of the file;
    /// then the item fails with the last decoding error (FFmpeg's reason: a truncated file, a
    /// picture size the decoder refuses), or says the stream has no frame.
    private func endOfStream() throws -> UnsafeMutablePointer<AVFrame>? {
        guard delivered == 0, !sought else { return nil }
        throw lastFailure ?? MediaError(uri: uri, call: "avcodec_receive_frame", reason: "the video stream has no decodable frame")
    }

    /// Positions the stream so that the next frame is the last keyframe at or before `time`
    /// (relative to the stream's start); the frames after it follow in order.
    public func seek(to time: MediaTime) throws {
        // In integers: through a Double, a frame's own time can land one tick early (15015/30000 s
        // in a 1/30000 time base), and a backward seek then goes to the previous sync frame.
        var ticks: Int128 = 0
        if time.isNumeric && time.timescale > 0 && timeBase.num > 0 && timeBase.den > 0 {
            let numerator = Int128(time.value) * Int128(timeBase.den)
            let denominator = Int128(time.timescale) * Int128(timeBase.num)
            ticks = numerator / denominator
            if numerator % denominator != 0 && numerator < 0 { ticks -= 1 }  // floor
        }
        let target = ContainerValue.sum(startTime, Int64(clamping: max(0, ticks))) ?? Int64.max
        let r = av_seek_frame(format, streamIndex, target, AVSEEK_FLAG_BACKWARD)
        guard r >= 0 else { throw MediaError(uri: uri, call: "av_seek_frame", averror: r) }
        avcodec_flush_buffers(session.context)
        av_frame_free(&pending)
        sought = true
        draining = false
        nextPTS = nil
        segmentOffset = 0  // a seek's target is a time of the file: its own timestamps again
        skipThrough = nil
        // A switch to software right after the seek resumes at the seek's target, not before it.
        lastDelivered = target > startTime ? target - 1 : nil
        consecutiveErrors = 0
    }

    /// Counts a failure. A hardware path (or one under test injection) that fails before its first
    /// frame or three times in a row hands over to software at the same position; software gives up
    /// after 16 failures in a row.
    private func countError(call: String, code: Int32) throws {
        consecutiveErrors += 1
        lastFailure = MediaError(uri: uri, call: call, averror: code)
        let fallible = !switched && (session.path != .software || injectFailuresAfterFrames != nil)
        if fallible && (delivered == 0 || consecutiveErrors >= 3) {
            try switchToSoftware(reason: "\(call) failed: \(ffmpegErrorString(code))")
        } else if consecutiveErrors >= 16 {
            throw MediaError(uri: uri, call: call, averror: code)
        }
    }

    /// Replaces the decoding session with software and seeks back to the last keyframe before the
    /// last frame handed out; frames up to that one are decoded again and skipped, so the picture
    /// goes on from the next frame without a gap.
    private func switchToSoftware(reason: String) throws {
        let failed = session.path.hwdecCurrent
        let software = try CodecSession(software: softwareDecoder, stream: stream, threads: threads, uri: uri)
        switched = true
        interop = .none
        decodingPath = DecodingPath(hwdecCurrent: "no", interop: "none",
                                    fallbackReason: "\(failed == "no" ? "decoder" : failed) failed mid-stream: \(reason)",
                                    degraded: true, interopReason: "software decoding")
        try restart(with: software)
    }

    /// Decodes with `newSession` from the position of the last frame handed out (see
    /// `switchToSoftware`).
    private func restart(with newSession: CodecSession) throws {
        session = newSession
        av_frame_free(&pending)
        consecutiveErrors = 0
        draining = false
        if let last = lastDelivered {
            let r = av_seek_frame(format, streamIndex, last, AVSEEK_FLAG_BACKWARD)
            guard r >= 0 else { throw MediaError(uri: uri, call: "av_seek_frame", averror: r) }
            skipThrough = last
        } else {
            let r = av_seek_frame(format, streamIndex, startTime, AVSEEK_FLAG_BACKWARD)
            guard r >= 0 else { throw MediaError(uri: uri, call: "av_seek_frame", averror: r) }
        }
    }

    /// A zero-copy frame: `raw`'s times and tags, `prime`'s buffers.
    private func makeFrame(_ raw: UnsafeMutablePointer<AVFrame>, prime: DRMPrimeFrame) throws -> VideoFrame {
        let (pts, duration) = try timing(of: raw)
        let tags = FrameConverter.colorTags(of: raw)
        let sar = raw.pointee.sample_aspect_ratio
        let layout = prime.softwareFormat.flatMap { PixelFormat(av_get_pix_fmt($0)) } ?? .nv12
        return VideoFrame(drmPrime: prime, format: layout, pts: pts, duration: duration, colorMatrix: tags.matrix,
                          colorRange: tags.range, chromaLocation: tags.chroma, rotation: displayRotation,
                          pixelAspect: ContainerValue.pixelAspect(sar))
    }

    private func makeFrame(taking frame: UnsafeMutablePointer<AVFrame>) throws -> VideoFrame {
        let (pts, duration): (MediaTime, MediaTime)
        do {
            (pts, duration) = try timing(of: frame)
        } catch {
            var failed: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&failed)
            throw error
        }
        return try converter.makeFrame(taking: frame, pts: pts, duration: duration, rotation: displayRotation)
    }

    /// A jump of the timestamps by more than this many frame durations, forward or back, from
    /// where the next frame was expected starts a new segment (`timing(of:)`).
    static let discontinuityFrames: Int64 = 4

    /// Timestamp jumps treated as new segments so far (`timing(of:)`).
    public private(set) var discontinuities = 0

    /// The frame's time relative to the stream's start and its duration; advances the
    /// extrapolated time of the next frame.
    ///
    /// The times run on one continuous timeline: where the file's timestamps jump (concatenated
    /// recordings, a broadcast capture) by more than `discontinuityFrames` frame durations from
    /// where the next frame was expected, backward, or forward in a container whose timestamps
    /// may jump (`timestampsMayJump`), a new segment starts, and its frames follow on at the
    /// expected time, keeping their cadence (as mpv and GStreamer do).
    /// A frame without a timestamp follows the one before. Every step is checked: a timestamp
    /// too far out to hold fails the item, naming the file and the stream.
    private func timing(of frame: UnsafeMutablePointer<AVFrame>) throws -> (MediaTime, MediaTime) {
        let raw = frame.pointee.best_effort_timestamp
        let packetTicks = frame.pointee.pkt_duration
        let durationTicks = packetTicks > 0 ? packetTicks : nominalTicks
        var ts: Int64
        if raw == noPTS {
            ts = nextPTS ?? startTime
        } else if let expected = nextPTS {
            let tolerance = max(durationTicks, nominalTicks).multipliedReportingOverflow(by: Self.discontinuityFrames)
            let shifted = ContainerValue.sum(raw, segmentOffset)
            let off = shifted.flatMap { ContainerValue.difference($0, expected) }
            if let shifted, let off,
               tolerance.overflow || off.magnitude <= UInt64(tolerance.partialValue) || (off > 0 && !timestampsMayJump) {
                ts = shifted
            } else {
                // A new segment: it starts where the next frame was due.
                segmentOffset = ContainerValue.difference(expected, raw) ?? 0
                discontinuities += 1
                ts = expected
            }
        } else {
            ts = ContainerValue.sum(raw, segmentOffset) ?? raw
        }
        let duration: MediaTime
        if info.isStillImage {
            duration = stillDuration
        } else if packetTicks > 0, let stated = ContainerValue.time(ticks: packetTicks, timeBase: timeBase) {
            duration = stated
        } else {
            duration = nominalFrameDuration
        }
        nextPTS = ContainerValue.sum(ts, durationTicks) ?? ts
        guard let relative = ContainerValue.difference(ts, startTime),
              let pts = ContainerValue.time(ticks: relative, timeBase: timeBase) else {
            throw MediaError(uri: uri, call: "stream \(streamIndex)",
                             reason: "timestamp \(ts) (start \(startTime), time base \(timeBase.num)/\(timeBase.den)) is out of range")
        }
        return (pts, duration)
    }
}

extension VideoDecoder {
    /// Which frames the decoder skips from now on without decoding them (FFmpeg's `skip_frame`):
    /// none, frames no other frame refers to, or everything but keyframes. A new decoding session
    /// (a switch to software mid-stream) starts with none; `DecoderReader` applies it again.
    public func setFrameDrop(_ drop: DecoderFrameDrop) {
        guard let context = session.context else { return }
        switch drop {
        case .none: context.pointee.skip_frame = AVDISCARD_DEFAULT
        case .nonReference: context.pointee.skip_frame = AVDISCARD_NONREF
        case .nonKey: context.pointee.skip_frame = AVDISCARD_NONKEY
        }
    }
}
