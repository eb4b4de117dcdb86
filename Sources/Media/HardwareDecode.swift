import CFFmpeg
import Foundation
import Synchronization
import Playback

/// Which decoder to use, as `decode.hwdec` in the config says.
public enum HardwareDecoding: String, Sendable, CaseIterable {
    /// Try the machine's hardware in `autoOrder`, verify it decodes, else software (no warning).
    case auto
    /// Software only.
    case none
    /// VA-API (Intel, AMD) on a DRM render node.
    case vaapi
    /// The `*_v4l2m2m` decoders (Raspberry Pi and other ARM boards).
    case v4l2m2m
    /// Stateless V4L2 request API through FFmpeg's `drm` device type.
    case drm
    /// NVIDIA NVDEC.
    case cuda

    /// The order `auto` tries: the desktop GPUs first (one of them fails at once where absent), then
    /// the ARM decoders.
    public static let autoOrder: [HardwareDecoding] = [.vaapi, .cuda, .v4l2m2m, .drm]

    var deviceType: AVHWDeviceType? {
        switch self {
        case .vaapi: AV_HWDEVICE_TYPE_VAAPI
        case .cuda: AV_HWDEVICE_TYPE_CUDA
        case .drm: AV_HWDEVICE_TYPE_DRM
        case .auto, .none, .v4l2m2m: nil
        }
    }
}

/// What a decoder actually uses, for logs and the control socket (mpv's names).
public struct DecodingPath: Sendable, Equatable {
    /// `hwdec-current`: "vaapi", "cuda", "drm", "v4l2m2m", or "no" for software.
    public var hwdecCurrent: String
    /// `hwdec-interop`: "dmabuf" (zero-copy import), "copy" (frames copied back to memory), "none".
    public var interop: String
    /// Why the requested hardware is not in use; nil when it is, or when none was requested.
    public var fallbackReason: String?
    /// True when hardware was asked for by name (not `auto`) and is not in use: health is degraded.
    public var degraded: Bool
    /// Why `interop` is what it is (the log line says it).
    public var interopReason: String? = nil
    /// True when DMA-BUF import was chosen and failed at run time: the item's frames are copied
    /// from then on (a warning).
    public var interopFellBack = false

    public static let software = DecodingPath(hwdecCurrent: "no", interop: "none", fallbackReason: nil, degraded: false,
                                              interopReason: "software decoding")
}

/// FFmpeg's `get_format` callback: picks the hardware pixel format stored in `opaque`, or fails the
/// negotiation (so that decoding errors out and falls back to software).
let selectHardwareFormat: @convention(c) (UnsafeMutablePointer<AVCodecContext>?, UnsafePointer<AVPixelFormat>?) -> AVPixelFormat = { context, formats in
    guard let context, var format = formats else { return AV_PIX_FMT_NONE }
    let wanted = AVPixelFormat(rawValue: Int32(Int(bitPattern: context.pointee.opaque)))
    while format.pointee != AV_PIX_FMT_NONE {
        if format.pointee == wanted { return wanted }
        format += 1
    }
    return AV_PIX_FMT_NONE
}

/// Makes the codec sessions a `VideoDecoder` decodes with: FFmpeg's own (`FFmpegCodecSessions`),
/// or sessions that behave as a hardware decoder dying mid-stream (tests of the hand-over).
protocol CodecSessionMaking: Sendable {
    func software(_ decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, threads: Int, uri: String) throws -> CodecSession
    func hardware(_ kind: HardwareDecoding, software decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>,
                  uri: String, drmPrime: Bool) throws -> CodecSession
}

struct FFmpegCodecSessions: CodecSessionMaking {
    func software(_ decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, threads: Int, uri: String) throws -> CodecSession {
        try CodecSession(software: decoder, stream: stream, threads: threads, uri: uri)
    }

    func hardware(_ kind: HardwareDecoding, software decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>,
                  uri: String, drmPrime: Bool) throws -> CodecSession {
        try CodecSession(hardware: kind, software: decoder, stream: stream, uri: uri, drmPrime: drmPrime)
    }
}

/// A codec context opened for one decoding path; owns the context and the hardware device.
class CodecSession {
    var context: UnsafeMutablePointer<AVCodecContext>?
    private var device: UnsafeMutablePointer<AVBufferRef>?
    /// The pixel format of frames that live in hardware memory; nil for software.
    let hardwareFormat: AVPixelFormat?
    let path: DecodingPath
    let kind: HardwareDecoding?
    /// Whether its hardware frames can be had as DRM PRIME (VAAPI by mapping; drm and a v4l2m2m
    /// decoder asked for DRM PRIME give them directly).
    var offersDRMPrime: Bool { kind == .vaapi || hardwareFormat == AV_PIX_FMT_DRM_PRIME }

    /// Decoder threads when none are asked for: one per core the process may use, at most 16.
    /// FFmpeg's own choice is one more than that; with frame threads each holds its own picture
    /// in flight (3 MB at 1080p), and decoding is not what limits Marquee's rate (drawing is).
    static let automaticThreads = Int32(clamping: max(1, min(ProcessInfo.processInfo.activeProcessorCount, 16)))

    /// Opens `decoder` for `stream` in software.
    init(software decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, threads: Int, uri: String) throws {
        context = try Self.allocate(decoder, stream: stream, uri: uri)
        context!.pointee.thread_count = threads > 0 ? Int32(clamping: min(threads, 64)) : Self.automaticThreads
        context!.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
        hardwareFormat = nil
        path = .software
        kind = nil
        try open(decoder, uri: uri)
    }

    /// Opens the hardware path `kind` for `stream`, or throws why it cannot. With `drmPrime`, a
    /// v4l2m2m decoder is asked (through `get_format`) for DRM PRIME frames instead of memory ones.
    init(hardware kind: HardwareDecoding, software decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>,
         uri: String, drmPrime: Bool = false) throws {
        // FFmpeg's own messages about a device that is not there are debug: the failure is reported once, by us.
        let loudness = FFmpegLog.demoteThisThread()
        defer { FFmpegLog.restoreThisThread(loudness) }
        let codecName = String(cString: decoder.pointee.name)
        self.kind = kind
        if kind == .v4l2m2m {
            // A separate decoder that talks to /dev/video*; its frames come back in memory unless
            // DRM PRIME is asked for.
            guard let m2m = avcodec_find_decoder_by_name("\(codecName)_v4l2m2m") else {
                throw MediaError(uri: uri, call: "avcodec_find_decoder_by_name", reason: "this FFmpeg has no \(codecName)_v4l2m2m decoder")
            }
            context = try Self.allocate(m2m, stream: stream, uri: uri)
            if drmPrime {
                context!.pointee.opaque = UnsafeMutableRawPointer(bitPattern: Int(AV_PIX_FMT_DRM_PRIME.rawValue))
                context!.pointee.get_format = selectHardwareFormat
            }
            hardwareFormat = drmPrime ? AV_PIX_FMT_DRM_PRIME : nil
            path = DecodingPath(hwdecCurrent: "v4l2m2m", interop: "copy", fallbackReason: nil, degraded: false)
            try open(m2m, uri: uri)
            return
        }
        guard let type = kind.deviceType else { preconditionFailure("\(kind) is not a device type") }
        var format: AVPixelFormat?
        var i: Int32 = 0
        while let config = avcodec_get_hw_config(decoder, i) {
            if config.pointee.device_type == type && (config.pointee.methods & Int32(AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)) != 0 {
                format = config.pointee.pix_fmt
                break
            }
            i += 1
        }
        guard let format else {
            throw MediaError(uri: uri, call: "avcodec_get_hw_config", reason: "the \(codecName) decoder has no \(kind.rawValue) support in this FFmpeg")
        }
        var device: UnsafeMutablePointer<AVBufferRef>?
        let r = av_hwdevice_ctx_create(&device, type, nil, nil, 0)
        guard r >= 0, let device else {
            throw MediaError(uri: uri, call: "av_hwdevice_ctx_create(\(kind.rawValue))", averror: r)
        }
        self.device = device  // our reference; the codec context takes its own below
        context = try Self.allocate(decoder, stream: stream, uri: uri)
        context!.pointee.hw_device_ctx = av_buffer_ref(device)  // owned by the codec context from here
        context!.pointee.opaque = UnsafeMutableRawPointer(bitPattern: Int(format.rawValue))
        context!.pointee.get_format = selectHardwareFormat
        hardwareFormat = format
        path = DecodingPath(hwdecCurrent: kind.rawValue, interop: "copy", fallbackReason: nil, degraded: false)
        try open(decoder, uri: uri)
    }

    deinit {
        avcodec_free_context(&context)
        av_buffer_unref(&device)
        releaseFreedMemory()  // the frame threads' contexts and tables leave free pages behind
    }

    /// The next decoded frame into `frame` (`avcodec_receive_frame`): 0, or FFmpeg's error.
    func receiveFrame(into frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        avcodec_receive_frame(context, frame)
    }

    /// Whether a failure of this session mid-stream hands over to software at the same position
    /// (a hardware path's does; software's own failures are counted against the file).
    var handsOverOnFailure: Bool { path != .software }

    private static func allocate(_ decoder: UnsafePointer<AVCodec>, stream: UnsafeMutablePointer<AVStream>, uri: String) throws -> UnsafeMutablePointer<AVCodecContext> {
        guard let context = avcodec_alloc_context3(decoder) else {
            throw MediaError(uri: uri, call: "avcodec_alloc_context3", reason: "out of memory")
        }
        let r = avcodec_parameters_to_context(context, stream.pointee.codecpar)
        guard r >= 0 else {
            var owned: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&owned)
            throw MediaError(uri: uri, call: "avcodec_parameters_to_context", averror: r)
        }
        context.pointee.pkt_timebase = stream.pointee.time_base
        return context
    }

    private func open(_ decoder: UnsafePointer<AVCodec>, uri: String) throws {
        let r = avcodec_open2(context, decoder, nil)
        guard r >= 0 else { throw MediaError(uri: uri, call: "avcodec_open2(\(String(cString: decoder.pointee.name)))", averror: r) }
    }

    /// Brings a frame in hardware memory back to system memory (`copy` interop); others pass through.
    func download(_ frame: UnsafeMutablePointer<AVFrame>, uri: String) throws -> UnsafeMutablePointer<AVFrame> {
        guard let hardwareFormat, frame.pointee.format == hardwareFormat.rawValue else { return frame }
        // FFmpeg dereferences the source's frames context unchecked: a frame without one (a
        // v4l2m2m DRM PRIME frame) would crash the process instead of failing.
        guard frame.pointee.hw_frames_ctx != nil else {
            var old: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&old)
            throw MediaError(uri: uri, call: "av_hwframe_transfer_data", reason: "the hardware frame has no frames context to copy from")
        }
        guard let copy = av_frame_alloc() else { throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory") }
        var r = av_hwframe_transfer_data(copy, frame, 0)
        if r >= 0 { r = av_frame_copy_props(copy, frame) }
        var old: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&old)
        guard r >= 0 else {
            var failed: UnsafeMutablePointer<AVFrame>? = copy
            av_frame_free(&failed)
            throw MediaError(uri: uri, call: "av_hwframe_transfer_data", averror: r)
        }
        return copy
    }
}

/// Hardware paths that failed to start in this process, by path and codec, with the reason. A
/// device that is absent stays absent, so later files (and every loop of the playlist) skip it
/// without touching the driver again: no warning storm, no repeated start-up cost.
final class HardwareFailures: Sendable {
    static let shared = HardwareFailures()
    private let failures = Mutex<[String: MediaError]>([:])

    func failure(_ kind: HardwareDecoding, codec: String) -> MediaError? {
        failures.withLock { $0["\(kind.rawValue)/\(codec)"] }
    }

    func record(_ error: MediaError, _ kind: HardwareDecoding, codec: String) {
        failures.withLock { $0["\(kind.rawValue)/\(codec)"] = error }
    }
}

/// How much FFmpeg itself may print on stderr: only with `debug` are its own warnings wanted; at
/// other levels Marquee's log lines carry FFmpeg's reasons for every failure that matters.
public func setFFmpegLogLevel(_ level: Logger.Level) {
    av_log_set_level(level == .debug ? AV_LOG_WARNING : AV_LOG_FATAL)
}
