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

    /// The item's demuxer, shared with its other decoders; its file closes when the last goes.
    let demuxer: Demuxer
    /// Reads this stream's packets from `demuxer` and runs the decoder on them.
    let loop: DecodeLoop
    /// The open codec context; replaced by a software one when the hardware path fails.
    var session: CodecSession
    /// The software decoder for this stream (the fallback of every hardware path).
    let softwareDecoder: UnsafePointer<AVCodec>
    let stream: UnsafeMutablePointer<AVStream>
    let threads: Int
    /// What this decoder uses now: hardware or software, and why.
    public internal(set) var decodingPath: DecodingPath
    /// Frames handed out so far.
    var delivered = 0
    /// Timestamp of the last frame handed out; after a switch to software, earlier frames are skipped.
    var lastDelivered: Int64?
    /// `lastDelivered` before the last frame decoded: where a reopened decoder resumes when that
    /// frame could not be handed out after all.
    var previousDelivered: Int64?
    var skipThrough: Int64?
    /// Where its codec sessions come from (FFmpeg's, but for tests of the hand-over).
    let sessions: any CodecSessionMaking
    /// True once the decoder has switched to software mid-stream (it does so at most once).
    var switched = false
    /// Tags, and swscale for the formats the player layer does not draw (FrameConverter.swift).
    lazy var converter = FrameConverter(uri: uri)
    /// The container's display matrix as a clockwise turn; every frame carries it.
    var displayRotation: Rotation = .none
    let streamIndex: Int32
    let timeBase: AVRational
    let startTime: Int64
    let nominalFrameDuration: MediaTime
    /// The stream's frame rate as FFmpeg guessed it; nil when it could not.
    let frameRate: AVRational?
    /// Where the next frame is due on the continuous timeline, in stream ticks (`timing(of:)`).
    var nextPTS: Int64?
    /// Added to the file's timestamps since the last discontinuity (`timing(of:)`).
    var segmentOffset: Int64 = 0
    /// One frame at the nominal rate, in stream ticks (at least 1).
    let nominalTicks: Int64
    /// Whether the container's timestamps may jump forward (`AVFMT_TS_DISCONT`: MPEG-TS and -PS,
    /// captures): elsewhere a forward gap is the file's own timing (a variable-rate recording's
    /// still stretch), kept as it is. A jump backward is a new segment in any container.
    let timestampsMayJump: Bool
    var consecutiveErrors = 0
    /// The last failure counted (`countError`): what an item that ends without a frame failed of.
    var lastFailure: MediaError?
    /// Whether the decoder was positioned (`seek`): a seek past the end may rightly give no frame.
    var sought = false
    /// How hardware frames reach the display, chosen once when the decoder opens (`chooseInterop`);
    /// `.dmabuf` turns into `.copy` for the rest of the item when the display fails to import one.
    var interop: FrameInterop = .none
    /// Set by a frame the display could not import (presentation thread).
    let feedback = InteropFeedback()
    /// The first hardware frame, decoded while the interop was chosen; handed out first.
    var pending: UnsafeMutablePointer<AVFrame>?
    /// A first frame from the first packet alone (`decodesFirstPacketAlone`): `.armed` until the
    /// first packet is sent, `.draining` while the decoder gives what that packet made,
    /// `.restartDue` once its picture (that timestamp) was handed out: the next frame asked for
    /// starts decoding again from the start.
    enum FirstPacket { case off, armed, draining, restartDue(Int64) }
    var firstPacket = FirstPacket.off
    /// Added to every frame's time: a live source reopened (`LiveReader`) goes on where the
    /// picture was, not from zero.
    var timelineShift = MediaTime.zero

    /// Opens `path` and its decoder. Throws a `MediaError` naming the file and FFmpeg's reason.
    /// - Parameters:
    ///   - threads: decoder threads; 0: one per core the process may use, at most 16.
    ///   - hardware: the hardware path to try first; when it cannot start, software decodes and
    ///     `decodingPath` says why.
    ///   - interop: the output's DMA-BUF decision, known before the decoder opens (the output
    ///     opens first): with it, hardware frames that can be had as DRM PRIME stay in DMA-BUFs
    ///     (`VideoFrame.Storage.drmPrime`) when the output can import them; without it they are
    ///     copied to memory.
    ///   - limits: how long opening and each read may wait (`MediaIOLimits`).
    public convenience init(path: String, threads: Int = 0, hardware: HardwareDecoding = .none, interop: (any FrameInteropTarget)? = nil,
                            limits: MediaIOLimits = .standard) throws {
        try self.init(demuxer: Demuxer(path: path, limits: limits), threads: threads, hardware: hardware, interop: interop,
                      sessions: FFmpegCodecSessions())
    }

    convenience init(path: String, threads: Int = 0, hardware: HardwareDecoding = .none, interop: (any FrameInteropTarget)? = nil,
                     limits: MediaIOLimits = .standard, sessions: any CodecSessionMaking) throws {
        try self.init(demuxer: Demuxer(path: path, limits: limits), threads: threads, hardware: hardware, interop: interop,
                      sessions: sessions)
    }

    /// Decodes the best video stream of `demuxer`'s file, read through a cursor of its own.
    init(demuxer: Demuxer, threads: Int = 0, hardware: HardwareDecoding = .none, interop: (any FrameInteropTarget)? = nil,
         sessions: any CodecSessionMaking) throws {
        let path = demuxer.path
        uri = path
        self.sessions = sessions
        self.demuxer = demuxer
        let (index, decoder, stream, jumps, rate) = try demuxer.withFormat { fmt in
            let (index, decoder) = try Self.findVideoStream(fmt, path: path)
            let stream = try Self.checkedStream(fmt, index, path: path)
            return (index, decoder, stream, fmt.pointee.iformat.map { $0.pointee.flags & AVFMT_TS_DISCONT != 0 } ?? false,
                    av_guess_frame_rate(fmt, stream, nil))
        }
        streamIndex = index
        timestampsMayJump = jumps
        timeBase = stream.pointee.time_base
        startTime = stream.pointee.start_time == noPTS ? 0 : stream.pointee.start_time
        loop = try DecodeLoop(cursor: PacketCursor(demuxer: demuxer, stream: index), uri: path)
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
                   let m2m = try? sessions.hardware(kind, software: decoder, stream: stream, uri: path, drmPrime: true) {
                    chosen = m2m
                    break
                }
                chosen = try sessions.hardware(kind, software: decoder, stream: stream, uri: path, drmPrime: false)
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
            session = try sessions.software(decoder, stream: stream, threads: threads, uri: path)
            decodingPath = .software
            if !reasons.isEmpty {
                decodingPath.fallbackReason = reasons.joined(separator: "; ")
                decodingPath.degraded = hardware != .auto
            }
        }
        let ctx = session.context!

        frameRate = ContainerValue.framesPerSecond(rate) != nil ? rate : nil
        nominalFrameDuration = frameRate != nil
            ? MediaTime(value: Int64(rate.den), timescale: rate.num)
            : MediaTime(value: 1, timescale: 25)
        nominalTicks = max(1, ContainerValue.ticks(seconds: nominalFrameDuration.seconds, timeBase: timeBase) ?? 1)
        info = try demuxer.withFormat { fmt in
            try Self.describe(fmt, stream, decoder, width: ctx.pointee.width, height: ctx.pointee.height,
                                 pixelFormat: ctx.pointee.pix_fmt, threads: ctx.pointee.thread_count, uri: path, index: index)
        }
        if session.kind != nil { try chooseInterop(interop) }
    }

    deinit {
        av_frame_free(&pending)
    }

    /// Ends the decoder's waits for data from any thread: the blocked read, and every later one,
    /// fails at once (`MediaError` with the reason "cancelled").
    public var canceller: @Sendable () -> Void { loop.cursor.canceller }

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
    func decodeRaw() throws -> UnsafeMutablePointer<AVFrame>? {
        if case .restartDue(let shown) = firstPacket { try restartAfterFirstPacket(skipping: shown) }
        var received: UnsafeMutablePointer<AVFrame>?
        let step = try loop.next(codec: { session.context }, receive: {
            guard let allocated = av_frame_alloc() else {
                throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory")
            }
            let r = session.receiveFrame(into: allocated)
            if r == 0 {
                received = allocated
            } else {
                var frame: UnsafeMutablePointer<AVFrame>? = allocated
                av_frame_free(&frame)
            }
            return r
        }, accept: {
            guard let frame = received else { return false }
            let ts = frame.pointee.best_effort_timestamp
            if case .draining = firstPacket {
                // The first packet's picture: the stream's first one when it is due at the
                // stream's start (no earlier picture follows it in decoding order), handed
                // out, and skipped once decoding starts again from the start (when a next
                // frame is asked for); otherwise dropped, and the stream decoded from its
                // start as usual.
                guard ts != noPTS && ts == startTime else {
                    received = nil
                    var dropped: UnsafeMutablePointer<AVFrame>? = frame
                    av_frame_free(&dropped)
                    try restartAfterFirstPacket(skipping: nil)
                    return false
                }
                firstPacket = .restartDue(ts)
                consecutiveErrors = 0
                delivered += 1
                previousDelivered = lastDelivered
                lastDelivered = ts
                return true
            }
            if let skip = skipThrough, ts != noPTS, ts <= skip {
                // Already shown before the switch to software.
                received = nil
                var shown: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&shown)
                return false
            }
            skipThrough = nil
            consecutiveErrors = 0
            delivered += 1
            previousDelivered = lastDelivered
            if ts != noPTS { lastDelivered = ts }
            return true
        }, idle: { _ in
            // The first packet made no picture on its own: decode from the start as usual.
            guard case .draining = firstPacket else { return false }
            try restartAfterFirstPacket(skipping: nil)
            return true
        }, fail: { call, code in
            try countError(call: call, code: code)
        }, sent: { sent, isKey in
            if case .armed = firstPacket {
                if sent >= 0 && isKey {
                    firstPacket = .draining
                    avcodec_send_packet(session.context, nil)  // what this packet makes, without the pictures after it
                } else {
                    firstPacket = .off  // not a keyframe: decoded as usual
                }
            }
        })
        switch step {
        case .frame: return received
        case .end: return try endOfStream()
        }
    }

    /// Decodes the stream's first picture from its first packet alone, where it can (a software
    /// decoder from the start of the file: call before the first `nextFrame`): a preroll that
    /// needs only that picture then holds one picture buffer, not the several a decoder fills
    /// before its first picture is due (the reordering delay: 3 at 1080p H.264 with B-frames,
    /// 9 MB). Later frames come as usual, decoded again from the start.
    func decodesFirstPacketAlone() {
        guard session.kind == nil, delivered == 0, !sought, pending == nil else { return }
        firstPacket = .armed
    }

    /// After the first packet's picture: the decoder starts again at the stream's start, skipping
    /// the picture handed out (`skipping`, its timestamp) when there was one.
    private func restartAfterFirstPacket(skipping shown: Int64?) throws {
        firstPacket = .off
        avcodec_flush_buffers(session.context)
        try loop.seekToStart()
        skipThrough = shown
    }

    /// The end of the stream: nil, unless not one frame was decoded from the start of the file;
    /// then the item fails with the last decoding error (FFmpeg's reason: a truncated file, a
    /// picture size the decoder refuses), or says the stream has no frame.
    func endOfStream() throws -> UnsafeMutablePointer<AVFrame>? {
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
        try loop.seek(to: target)
        avcodec_flush_buffers(session.context)
        av_frame_free(&pending)
        sought = true
        firstPacket = .off
        nextPTS = nil
        segmentOffset = 0  // a seek's target is a time of the file: its own timestamps again
        skipThrough = nil
        // A switch to software right after the seek resumes at the seek's target, not before it.
        lastDelivered = target > startTime ? target - 1 : nil
        consecutiveErrors = 0
    }

    /// Timestamp jumps treated as new segments so far (`timing(of:)`).
    public internal(set) var discontinuities = 0
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
