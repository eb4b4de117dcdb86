import CFFmpeg
import Playback

/// The colour matrix used to turn a frame's Y'CbCr into R'G'B'.
public enum ColorMatrix: String, Sendable, CaseIterable {
    /// BT.601 (SD): Kr 0.299, Kb 0.114.
    case bt601
    /// BT.709 (HD): Kr 0.2126, Kb 0.0722.
    case bt709
    /// BT.2020 non-constant luminance (UHD): Kr 0.2627, Kb 0.0593.
    case bt2020

    /// (Kr, Kb) of the matrix.
    public var coefficients: (kr: Double, kb: Double) {
        switch self {
        case .bt601: (0.299, 0.114)
        case .bt709: (0.2126, 0.0722)
        case .bt2020: (0.2627, 0.0593)
        }
    }

    /// The rule for untagged video: BT.601 below 720 lines, BT.709 from 720 lines.
    public static func untagged(height: Int) -> ColorMatrix { height < 720 ? .bt601 : .bt709 }
}

/// Limited ("TV", 8-bit Y' 16-235, Cb/Cr 16-240) or full ("PC", 0-255) range.
public enum ColorRange: String, Sendable, CaseIterable {
    case limited, full
}

/// Where a subsampled frame's chroma samples sit relative to the luma samples.
public enum ChromaLocation: String, Sendable, CaseIterable {
    /// Co-sited with the left luma sample of each pair, vertically between rows (MPEG-2, H.264,
    /// HEVC: the default of video).
    case left
    /// Between the luma samples in both directions (MPEG-1, JPEG).
    case center
    /// Co-sited with the top-left luma sample (BT.2020 4:2:0 as some encoders write it).
    case topLeft
}

/// A clockwise turn of the picture by a whole quarter.
public enum Rotation: Int, Sendable, CaseIterable, CustomStringConvertible {
    case none = 0
    case clockwise90 = 90
    case upsideDown = 180
    case clockwise270 = 270

    /// The nearest quarter turn to `degrees` clockwise (any angle, negative ones too).
    public init(degrees: Double) {
        // Any finite angle (1e300 too) reduced to a turn first; NaN and infinities: no turn.
        guard degrees.isFinite else { self = .none; return }
        let quarters = (fmod(degrees, 360) / 90).rounded()  // -4...4
        switch ((Int(quarters) % 4) + 4) % 4 {
        case 1: self = .clockwise90
        case 2: self = .upsideDown
        case 3: self = .clockwise270
        default: self = .none
        }
    }

    /// Clockwise quarter turns, 0-3.
    public var quarterTurns: Int { rawValue / 90 }
    /// Whether the picture's width and height swap.
    public var swapsAxes: Bool { self == .clockwise90 || self == .clockwise270 }

    /// One turn after the other.
    public static func + (a: Rotation, b: Rotation) -> Rotation {
        Rotation(degrees: Double(a.rawValue + b.rawValue))
    }

    public var description: String { "\(rawValue)" }
}

/// The pixel layouts the player layer draws directly. Raw values are FFmpeg's names.
/// yuvj420p/yuvj422p/yuvj444p are the same layouts as yuv420p/yuv422p/yuv444p with full range.
public enum PixelFormat: String, Sendable, CaseIterable {
    /// Three 8-bit planes, chroma halved in both directions.
    case yuv420p
    /// An 8-bit luma plane and one plane of interleaved Cb Cr, halved in both directions.
    case nv12
    /// Three 8-bit planes, chroma halved horizontally.
    case yuv422p
    /// Three 8-bit planes, no subsampling.
    case yuv444p
    /// Three planes of 16-bit little-endian words holding 10-bit samples in their low bits.
    case yuv420p10le
    case yuv422p10le
    case yuv444p10le
    /// Like nv12 with 16-bit little-endian words holding 10-bit samples in their HIGH bits.
    case p010le
    /// Packed 8-bit R'G'B'A in one plane: a frame already converted to full-range RGB on the CPU
    /// (`ColorConversion.cpu`, see `RGBAConverter`). Never a decoder's format here.
    case rgba

    /// Whether the samples are Y'CbCr (all formats but `.rgba`).
    public var isYCbCr: Bool { self != .rgba }

    /// Number of planes: 3, or 2 for the semi-planar (interleaved chroma) layouts.
    public var planeCount: Int { self == .rgba ? 1 : interleavedChroma ? 2 : 3 }
    /// Whether Cb and Cr share one plane, Cb first.
    public var interleavedChroma: Bool { self == .nv12 || self == .p010le }
    /// log2 of the chroma subsampling: (1, 1) for 4:2:0, (1, 0) for 4:2:2, (0, 0) for 4:4:4.
    public var chromaShift: (x: Int, y: Int) {
        switch self {
        case .yuv420p, .nv12, .yuv420p10le, .p010le: (1, 1)
        case .yuv422p, .yuv422p10le: (1, 0)
        case .yuv444p, .yuv444p10le, .rgba: (0, 0)
        }
    }
    /// Significant bits of a sample.
    public var bitsPerSample: Int {
        switch self {
        case .yuv420p, .nv12, .yuv422p, .yuv444p, .rgba: 8
        case .yuv420p10le, .yuv422p10le, .yuv444p10le, .p010le: 10
        }
    }
    /// Bytes a sample is stored in: 1 or 2.
    public var bytesPerSample: Int { bitsPerSample > 8 ? 2 : 1 }
    /// How far a sample is shifted up inside its word (p010: 6, the low bits are zero).
    public var sampleShift: Int { self == .p010le ? 6 : 0 }

    /// The layout of FFmpeg's format, with whether it is one of the full-range "J" formats.
    init?(_ format: AVPixelFormat) {
        switch format {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: self = .yuv420p
        case AV_PIX_FMT_NV12: self = .nv12
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: self = .yuv422p
        case AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P: self = .yuv444p
        case AV_PIX_FMT_YUV420P10LE: self = .yuv420p10le
        case AV_PIX_FMT_YUV422P10LE: self = .yuv422p10le
        case AV_PIX_FMT_YUV444P10LE: self = .yuv444p10le
        case AV_PIX_FMT_P010LE: self = .p010le
        default: return nil
        }
    }

    var avPixelFormat: AVPixelFormat {
        switch self {
        case .yuv420p: AV_PIX_FMT_YUV420P
        case .nv12: AV_PIX_FMT_NV12
        case .yuv422p: AV_PIX_FMT_YUV422P
        case .yuv444p: AV_PIX_FMT_YUV444P
        case .yuv420p10le: AV_PIX_FMT_YUV420P10LE
        case .yuv422p10le: AV_PIX_FMT_YUV422P10LE
        case .yuv444p10le: AV_PIX_FMT_YUV444P10LE
        case .p010le: AV_PIX_FMT_P010LE
        case .rgba: AV_PIX_FMT_RGBA
        }
    }
}

/// One plane of a frame, valid only inside `VideoFrame.withPlanes`.
public struct Plane {
    /// `package`: the pointer is for Render's texture upload, not for the library's users.
    package let bytes: UnsafeRawPointer
    public let bytesPerRow: Int
    /// Width in texels (a texel of an interleaved chroma plane holds Cb and Cr).
    public let width: Int
    public let height: Int
    /// Samples per texel: 1, 2 for interleaved Cb Cr, 4 for RGBA.
    public let components: Int
    /// Bytes per sample: 1 or 2.
    public let bytesPerSample: Int

    public var bytesPerTexel: Int { components * bytesPerSample }
}

/// The planes of a frame (1 for RGBA, else 2 or 3), held inline: building it allocates nothing.
public struct Planes: RandomAccessCollection {
    private let p0: Plane, p1: Plane, p2: Plane
    public let count: Int
    init(_ p0: Plane, _ p1: Plane?, _ p2: Plane?) {
        self.p0 = p0
        self.p1 = p1 ?? p0
        self.p2 = p2 ?? p1 ?? p0
        count = p1 == nil ? 1 : p2 == nil ? 2 : 3
    }
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(i: Int) -> Plane {
        precondition(i >= 0 && i < count, "plane \(i) of \(count)")
        return i == 0 ? p0 : i == 1 ? p1 : p2
    }
}

/// A decoded picture that owns its buffers (an `AVFrame`, freed when the last reference goes).
/// Immutable once made, so it may be handed from the decoder thread to the presenter.
public final class VideoFrame: PresentableFrame, @unchecked Sendable {
    // @unchecked: `frame` is never mutated after init and is freed only in deinit.
    private var frame: UnsafeMutablePointer<AVFrame>?
    /// Where the picture is: in memory (`withPlanes`), or in DMA-BUFs (zero-copy hardware decode).
    public enum Storage: Sendable {
        case memory
        /// `pixelFormat` is the layout FFmpeg reports for the buffers (nv12 when it gives none).
        case drmPrime(DRMPrimeFrame)
    }
    public let storage: Storage
    public let pts: MediaTime
    public let duration: MediaTime
    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormat
    public let colorMatrix: ColorMatrix
    public let colorRange: ColorRange
    public let chromaLocation: ChromaLocation
    /// The clockwise turn that shows the picture upright (the container's display matrix).
    public let rotation: Rotation
    /// Width over height of one sample (the sample aspect ratio); 1 for square pixels.
    public let pixelAspect: Double
    /// FFmpeg's name of the decoder's format when this frame was converted with swscale to
    /// `pixelFormat` (the layer cannot draw that format directly); nil when drawn as decoded.
    public let convertedFrom: String?

    /// Takes ownership of `frame`: it is freed with `av_frame_free` in deinit. The caller has
    /// checked that `frame`'s layout is `format` with non-negative rows of whole texels.
    init(taking frame: UnsafeMutablePointer<AVFrame>, format: PixelFormat, pts: MediaTime, duration: MediaTime,
         colorMatrix: ColorMatrix, colorRange: ColorRange, chromaLocation: ChromaLocation,
         rotation: Rotation, pixelAspect: Double = 1, convertedFrom: String? = nil) {
        self.frame = frame
        self.storage = .memory
        self.pts = pts
        self.duration = duration
        self.width = Int(frame.pointee.width)
        self.height = Int(frame.pointee.height)
        self.pixelFormat = format
        self.colorMatrix = colorMatrix
        self.colorRange = colorRange
        self.chromaLocation = chromaLocation
        self.rotation = rotation
        self.pixelAspect = pixelAspect.isFinite && pixelAspect > 0 ? pixelAspect : 1
        self.convertedFrom = convertedFrom
    }

    /// A frame kept in DMA-BUF memory (`storage` is `.drmPrime`): `withPlanes` is not available;
    /// `copiedToMemory()` gives a frame that has planes.
    init(drmPrime: DRMPrimeFrame, format: PixelFormat, pts: MediaTime, duration: MediaTime,
         colorMatrix: ColorMatrix, colorRange: ColorRange, chromaLocation: ChromaLocation,
         rotation: Rotation, pixelAspect: Double = 1) {
        frame = nil
        storage = .drmPrime(drmPrime)
        self.pts = pts
        self.duration = duration
        width = drmPrime.descriptor.width
        height = drmPrime.descriptor.height
        pixelFormat = format
        self.colorMatrix = colorMatrix
        self.colorRange = colorRange
        self.chromaLocation = chromaLocation
        self.rotation = rotation
        self.pixelAspect = pixelAspect.isFinite && pixelAspect > 0 ? pixelAspect : 1
        convertedFrom = nil
    }

    deinit { av_frame_free(&frame) }

    /// The DMA-BUF picture of a zero-copy frame; nil for frames in memory.
    public var drmPrime: DRMPrimeFrame? {
        if case .drmPrime(let prime) = storage { return prime }
        return nil
    }

    /// This frame in memory: itself when it is, else its DMA-BUF picture copied back
    /// (`av_hwframe_transfer_data`), with the same time, tags and rotation. For the copy fallback
    /// when the display cannot import a frame.
    public func copiedToMemory() throws -> VideoFrame {
        guard let prime = drmPrime else { return self }
        let copy = try prime.download()
        return try FrameConverter(uri: "DMA-BUF frame").makeFrame(taking: copy, pts: pts, duration: duration, rotation: rotation)
    }

    /// Calls `body` with the frame's `AVFrame` (frames in memory only).
    func withAVFrame<R>(_ body: (UnsafePointer<AVFrame>) throws -> R) throws -> R {
        guard let frame else {
            throw MediaError(uri: "DMA-BUF frame", call: "withAVFrame", reason: "the picture is not in memory: copy it first")
        }
        return try body(frame)
    }

    /// Bytes of memory the picture's buffers hold (0 for DMA-BUFs: not process memory).
    public var byteCount: Int {
        guard let frame else { return 0 }
        return withUnsafeBytes(of: frame.pointee.buf) { buffers in
            buffers.bindMemory(to: UnsafeMutablePointer<AVBufferRef>?.self).reduce(0) { $0 + ($1?.pointee.size ?? 0) }
        }
    }

    /// Width of the picture as shown (before rotation): `width` scaled by the pixel aspect.
    public var displayWidth: Int {
        guard pixelAspect != 1 else { return width }
        let scaled = (Double(width) * pixelAspect).rounded()
        // A non-finite or absurd aspect (frames made outside the decoder) keeps the stored width.
        return scaled.isFinite && scaled >= 1 && scaled <= 1e9 ? Int(scaled) : max(1, width)
    }

    /// Calls `body` with the frame's planes (Y, then Cb and Cr, or one interleaved CbCr plane; the
    /// one RGBA plane). The pointers are valid only inside `body`. Allocates nothing.
    public func withPlanes<R>(_ body: (Planes) throws -> R) rethrows -> R {
        guard let frame else {
            preconditionFailure("withPlanes on a DMA-BUF frame: check `storage` and use copiedToMemory()")
        }
        let f = frame.pointee
        let format = pixelFormat
        if format == .rgba {
            return try body(Planes(Plane(bytes: UnsafeRawPointer(f.data.0!), bytesPerRow: Int(f.linesize.0), width: width,
                                         height: height, components: 4, bytesPerSample: 1), nil, nil))
        }
        let shift = format.chromaShift
        let cw = (width + (1 << shift.x) - 1) >> shift.x, ch = (height + (1 << shift.y) - 1) >> shift.y
        let bps = format.bytesPerSample
        let luma = Plane(bytes: UnsafeRawPointer(f.data.0!), bytesPerRow: Int(f.linesize.0), width: width, height: height,
                         components: 1, bytesPerSample: bps)
        if format.interleavedChroma {
            let chroma = Plane(bytes: UnsafeRawPointer(f.data.1!), bytesPerRow: Int(f.linesize.1), width: cw, height: ch,
                               components: 2, bytesPerSample: bps)
            return try body(Planes(luma, chroma, nil))
        }
        let cb = Plane(bytes: UnsafeRawPointer(f.data.1!), bytesPerRow: Int(f.linesize.1), width: cw, height: ch,
                       components: 1, bytesPerSample: bps)
        let cr = Plane(bytes: UnsafeRawPointer(f.data.2!), bytesPerRow: Int(f.linesize.2), width: cw, height: ch,
                       components: 1, bytesPerSample: bps)
        return try body(Planes(luma, cb, cr))
    }

    /// The code values of the pixel at (x, y): (Y', Cb, Cr), 0 to 2^bits - 1 (p010's shift
    /// removed). Chroma is the sample whose block holds (x, y); `.rgba` gives (R', G', B').
    /// For tests and diagnostics.
    public func sample(x: Int, y: Int) -> (y: Int, cb: Int, cr: Int) {
        let format = pixelFormat
        let shift = format.chromaShift
        let cx = x >> shift.x, cy = y >> shift.y
        return withPlanes { p in
            func read(_ plane: Plane, _ x: Int, _ y: Int, _ component: Int) -> Int {
                let offset = y * plane.bytesPerRow + (x * plane.components + component) * plane.bytesPerSample
                let raw = plane.bytesPerSample == 1
                    ? Int(plane.bytes.load(fromByteOffset: offset, as: UInt8.self))
                    : Int(UInt16(littleEndian: plane.bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
                return raw >> format.sampleShift
            }
            if format == .rgba { return (read(p[0], x, y, 0), read(p[0], x, y, 1), read(p[0], x, y, 2)) }
            if format.interleavedChroma {
                return (read(p[0], x, y, 0), read(p[1], cx, cy, 0), read(p[1], cx, cy, 1))
            }
            return (read(p[0], x, y, 0), read(p[1], cx, cy, 0), read(p[2], cx, cy, 0))
        }
    }
}

extension VideoFrame {
    /// A frame made in memory, for test patterns and benchmarks. `sample(component, x, y)` gives
    /// the code value (0 to 2^bits - 1) of component 0 (Y'), 1 (Cb) or 2 (Cr) at (x, y) of that
    /// component's own grid (chroma grids are the subsampled size); for `.rgba` components 0-2 are
    /// R', G', B' (alpha is opaque). Rows are padded as FFmpeg
    /// pads them (to 64 bytes here), so odd sizes exercise padded uploads.
    public convenience init(format: PixelFormat, width: Int, height: Int, colorMatrix: ColorMatrix,
                            colorRange: ColorRange, chromaLocation: ChromaLocation = .left,
                            rotation: Rotation = .none, pixelAspect: Double = 1,
                            pts: MediaTime = .zero, duration: MediaTime = MediaTime(value: 1, timescale: 25),
                            sample: (_ component: Int, _ x: Int, _ y: Int) -> Int) throws {
        let name = "\(format.rawValue) \(width)x\(height) test frame"
        guard width > 0, height > 0, width <= 16384, height <= 16384 else {
            throw MediaError(uri: name, call: "VideoFrame(format:width:height:)", reason: "size must be 1-16384 pixels each way")
        }
        guard let frame = av_frame_alloc() else {
            throw MediaError(uri: name, call: "av_frame_alloc", reason: "out of memory")
        }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = format.avPixelFormat.rawValue
        let r = av_frame_get_buffer(frame, 64)
        guard r >= 0 else {
            var failed: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&failed)
            throw MediaError(uri: name, call: "av_frame_get_buffer", averror: r)
        }
        let maxValue = (1 << format.bitsPerSample) - 1
        let shift = format.chromaShift
        let cw = (width + (1 << shift.x) - 1) >> shift.x, ch = (height + (1 << shift.y) - 1) >> shift.y
        let f = frame.pointee
        func write(_ base: UnsafeMutablePointer<UInt8>, _ stride: Int32, _ w: Int, _ h: Int,
                   components: [(component: Int, slot: Int)], texelSamples: Int) {
            for y in 0..<h {
                let row = UnsafeMutableRawPointer(base) + y * Int(stride)
                for x in 0..<w {
                    for (component, slot) in components {
                        let code = component == 3 ? maxValue : sample(component, x, y)  // 3: RGBA's alpha
                        let value = min(max(code, 0), maxValue) << format.sampleShift
                        let i = x * texelSamples + slot
                        if format.bytesPerSample == 1 {
                            row.storeBytes(of: UInt8(value), toByteOffset: i, as: UInt8.self)
                        } else {
                            row.storeBytes(of: UInt16(value).littleEndian, toByteOffset: 2 * i, as: UInt16.self)
                        }
                    }
                }
            }
        }
        if format == .rgba {
            write(f.data.0!, f.linesize.0, width, height, components: [(0, 0), (1, 1), (2, 2), (3, 3)], texelSamples: 4)
        } else if format.interleavedChroma {
            write(f.data.0!, f.linesize.0, width, height, components: [(0, 0)], texelSamples: 1)
            write(f.data.1!, f.linesize.1, cw, ch, components: [(1, 0), (2, 1)], texelSamples: 2)
        } else {
            write(f.data.0!, f.linesize.0, width, height, components: [(0, 0)], texelSamples: 1)
            write(f.data.1!, f.linesize.1, cw, ch, components: [(1, 0)], texelSamples: 1)
            write(f.data.2!, f.linesize.2, cw, ch, components: [(2, 0)], texelSamples: 1)
        }
        self.init(taking: frame, format: format, pts: pts, duration: duration, colorMatrix: colorMatrix,
                  colorRange: colorRange, chromaLocation: chromaLocation, rotation: rotation, pixelAspect: pixelAspect)
    }
}
