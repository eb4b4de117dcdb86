import Foundation
import CFFmpeg
import Playback

/// Converts Y'CbCr frames to RGBA (8 bits, full range, alpha opaque) with swscale, with each
/// frame's own matrix (BT.601/709/2020) and range, into buffers from a pool that is reused from
/// frame to frame (a buffer goes back to the pool when its frame is freed).
///
/// How, measured here against the exact conversion (1080p, per frame; worst error over every
/// matrix and range in ColourConversionTests):
/// - yuv420p and yuv422p (most video): swscale's unscaled SIMD path, chroma repeated rather than
///   interpolated, about 1 ms. It truncates, so it comes out about one code low (worst 3/255 for
///   limited range); a brightness offset of `roundingBias` recentres it (worst 1.5/255).
/// - nv12, yuv444p, 10-bit and p010: that path is not taken for them (and the offset makes them
///   worse), so `SWS_FULL_CHR_H_INT` (chroma interpolated to every pixel), no offset: worst under
///   2/255, 8-12 ms.
/// Adding `SWS_ACCURATE_RND` would be exact (0.5/255) but costs 27-55 ms a frame.
///
/// Used from one thread at a time (the player layer's, or a decode thread's for frames too large
/// for the output); owns its swscale contexts and its pool.
public final class RGBAConverter {
    /// swscale's brightness, 16.16: +320 recentres the fast path's truncation (measured, see above).
    static let roundingBias: Int32 = 320

    /// swscale's flags and brightness for converting `format`.
    static func settings(for format: PixelFormat) -> (flags: Int32, brightness: Int32) {
        switch format {
        case .yuv420p, .yuv422p: (Int32(SWS_BILINEAR), roundingBias)
        default: (Int32(SWS_BILINEAR | SWS_FULL_CHR_H_INT), 0)
        }
    }

    private let scaler = RGBScaler()
    private var pool: OpaquePointer?
    private var poolBufferSize = 0
    /// `convertInBands`: its one band buffer, and the contexts for a whole band and the last one.
    private var band: [UInt8] = []
    private let bandScaler = RGBScaler()
    private let lastBandScaler = RGBScaler()

    public init() {}

    deinit {
        // Buffers still held by frames keep the pool alive until they are freed.
        av_buffer_pool_uninit(&pool)
    }

    /// `frame` as RGBA, with its timing, rotation and pixel aspect; `frame` is not changed. An
    /// RGBA frame is returned as it is, unless it is larger than `maxSide`.
    /// - Parameter maxSide: a frame with a side larger than this is scaled down to fit, keeping
    ///   its aspect (`OutputCapabilities.fit`); nil: the size is kept.
    public func convert(_ frame: VideoFrame, fitting maxSide: Int? = nil) throws -> VideoFrame {
        let fitted = maxSide.map { OutputCapabilities.fit(width: frame.width, height: frame.height, maxSide: $0) }
            ?? (frame.width, frame.height)
        let resized = fitted != (frame.width, frame.height)
        guard frame.pixelFormat.isYCbCr || (frame.pixelFormat == .rgba && resized) else { return frame }
        let name = "\(frame.pixelFormat.rawValue) \(frame.width)x\(frame.height) frame"
        guard let w = Int32(exactly: frame.width), let h = Int32(exactly: frame.height),
              let ow = Int32(exactly: fitted.0), let oh = Int32(exactly: fitted.1) else {
            throw MediaError(uri: name, call: "sws_getCachedContext", reason: "size out of range")
        }
        let settings = Self.settings(for: frame.pixelFormat)
        let context = try scaler.context(for: frame, width: w, height: h, outWidth: ow, outHeight: oh, to: AV_PIX_FMT_RGBA,
                                        flags: resized ? Int32(SWS_AREA) : settings.flags, brightness: settings.brightness, name: name)

        // Rows padded to 64 bytes (whole RGBA texels), and 64 bytes of slack for SIMD stores.
        let stride = (Int(ow) * 4 + 63) & ~63
        let size = stride * Int(oh) + 64
        if pool == nil || poolBufferSize != size {
            av_buffer_pool_uninit(&pool)
            pool = av_buffer_pool_init(size, nil)
            poolBufferSize = size
        }
        guard let out = av_frame_alloc() else { throw MediaError(uri: name, call: "av_frame_alloc", reason: "out of memory") }
        var owned: UnsafeMutablePointer<AVFrame>? = out
        guard let buffer = av_buffer_pool_get(pool) else {
            av_frame_free(&owned)
            throw MediaError(uri: name, call: "av_buffer_pool_get", reason: "out of memory")
        }
        out.pointee.buf.0 = buffer  // the frame owns the buffer now; av_frame_free gives it back to the pool
        out.pointee.data.0 = buffer.pointee.data
        out.pointee.linesize.0 = Int32(stride)
        out.pointee.width = ow
        out.pointee.height = oh
        out.pointee.format = AV_PIX_FMT_RGBA.rawValue

        let r = try frame.withAVFrame { swsScale(context, $0, into: out) }
        guard r == oh else {
            av_frame_free(&owned)
            throw MediaError(uri: name, call: "sws_scale", code: r, reason: r < 0 ? ffmpegErrorString(r) : "converted \(r) of \(oh) rows")
        }
        return VideoFrame(taking: out, format: .rgba, pts: frame.pts, duration: frame.duration,
                          colorMatrix: frame.colorMatrix, colorRange: frame.colorRange, chromaLocation: frame.chromaLocation,
                          rotation: frame.rotation, pixelAspect: frame.pixelAspect, convertedFrom: frame.convertedFrom)
    }

    /// Rows per band of `convertInBands` (at 1080p a band is 0.5 MB, a whole frame 8 MB).
    public static let bandRows = 64

    /// Converts `frame` to RGBA as `convert` does, handing the picture to `body` a band of rows at
    /// a time (the band's first row, and its pixels: valid only inside `body`), all in one small
    /// buffer reused from band to band and frame to frame: for a caller that copies the picture
    /// on (a texture upload) and needs no RGBA frame of its own. yuv420p and yuv422p frames of an
    /// even height, whose conversion (swscale's unscaled path) makes each row from its own luma
    /// and chroma rows only, come in bands of `rows` rows with exactly the pixels of a whole
    /// conversion; any other frame comes whole (one band, from the pool).
    /// With `flipped` each band's rows come bottom-up (the band's last row first) for a caller that
    /// stores the picture bottom-up (GL's order); frames that come whole are never flipped.
    public func convertInBands(_ frame: VideoFrame, rows: Int = RGBAConverter.bandRows, flipped: Bool = false,
                               _ body: (_ firstRow: Int, _ band: Plane) throws -> Void) throws {
        guard Self.convertsInBands(frame, rows: rows) else {
            let whole = try convert(frame)
            try whole.withPlanes { try body(0, $0[0]) }
            return
        }
        let stride = Self.bandStride(width: frame.width)
        let size = stride * rows + 64
        if band.count != size { band = [UInt8](repeating: 0, count: size) }
        try band.withUnsafeMutableBytes { buffer in
            let out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var y = 0
            while y < frame.height {
                let count = min(rows, frame.height - y)
                try Self.convertBand(frame, firstRow: y, count: count, into: out, stride: stride, flipped: flipped,
                                     scaler: count == rows ? bandScaler : lastBandScaler)
                try body(y, Plane(bytes: UnsafeRawPointer(out), bytesPerRow: stride, width: frame.width, height: count,
                                  components: 4, bytesPerSample: 1))
                y += count
            }
        }
    }

    /// Whether `convertInBands` hands `frame` over in bands of `rows` rows (else whole): yuv420p
    /// and yuv422p in memory, of an even height larger than `rows`, `rows` even.
    public static func convertsInBands(_ frame: VideoFrame, rows: Int = bandRows) -> Bool {
        let format = frame.pixelFormat
        return (format == .yuv420p || format == .yuv422p) && frame.height % 2 == 0 && rows >= 2 && rows % 2 == 0
            && frame.height > rows && frame.drmPrime == nil
    }

    /// Bytes per row of a band: RGBA rows padded to 64 bytes (a band buffer has 64 bytes of slack
    /// after its last row for SIMD stores).
    static func bandStride(width: Int) -> Int { (width * 4 + 63) & ~63 }

    /// Converts rows `y ..< y + count` of `frame` (one that `convertsInBands`) into `out`, `stride`
    /// bytes per row (`flipped`: the last row first), with `scaler`'s context (one per band height:
    /// a context keeps its height). (swscale's SIMD rows stay within the stride's span, so writing
    /// them bottom-up overwrites no row already written.)
    static func convertBand(_ frame: VideoFrame, firstRow y: Int, count: Int, into out: UnsafeMutablePointer<UInt8>, stride: Int,
                            flipped: Bool = false, scaler: RGBScaler) throws {
        let format = frame.pixelFormat
        let name = "\(format.rawValue) \(frame.width)x\(frame.height) frame"
        guard let w = Int32(exactly: frame.width), let h = Int32(exactly: count), let outStride = Int32(exactly: stride) else {
            throw MediaError(uri: name, call: "sws_getCachedContext", reason: "size out of range")
        }
        let settings = settings(for: format)
        let chromaShiftY = format.chromaShift.y
        let context = try scaler.context(for: frame, width: w, height: h, outWidth: w, outHeight: h, to: AV_PIX_FMT_RGBA,
                                         flags: settings.flags, brightness: settings.brightness, name: name)
        let r: Int32 = try frame.withAVFrame { f in
            let data = [f.pointee.data.0, f.pointee.data.1, f.pointee.data.2]
            let lines = [f.pointee.linesize.0, f.pointee.linesize.1, f.pointee.linesize.2]
            var planes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
            var strides: [Int32] = [0, 0, 0, 0]
            for plane in 0..<3 {
                guard let p = data[plane] else { continue }
                let row = plane == 0 ? y : y >> chromaShiftY
                planes[plane] = UnsafePointer(p + row * Int(lines[plane]))
                strides[plane] = lines[plane]
            }
            var dst: [UnsafeMutablePointer<UInt8>?] = [flipped ? out + (count - 1) * stride : out, nil, nil, nil]
            var dstStrides: [Int32] = [flipped ? -outStride : outStride, 0, 0, 0]
            return sws_scale(context, &planes, &strides, 0, h, &dst, &dstStrides)
        }
        guard r == h else {
            throw MediaError(uri: name, call: "sws_scale", code: r, reason: r < 0 ? ffmpegErrorString(r) : "converted \(r) of \(h) rows")
        }
    }
}

extension ColorMatrix {
    /// swscale's name of the matrix.
    var swsColorspace: Int32 {
        switch self {
        case .bt601: SWS_CS_ITU601
        case .bt709: SWS_CS_ITU709
        case .bt2020: SWS_CS_BT2020
        }
    }
}

/// One swscale context converting frames to an RGB format, made again only when the frame's size,
/// format or colour, the output size or the conversion's settings change. Owns the context.
final class RGBScaler {
    private struct Setup: Equatable {
        var width: Int32, height: Int32
        var outWidth: Int32, outHeight: Int32
        var format: PixelFormat
        var matrix: ColorMatrix
        var range: ColorRange
        var target: Int32, flags: Int32, brightness: Int32
    }

    private var scaler: OpaquePointer?
    private var setup: Setup?

    deinit { sws_freeContext(scaler) }

    /// The context converting `frame` (`width` x `height` of it) to `target` at `outWidth` x
    /// `outHeight`, with its own matrix and range (Y'CbCr) and swscale's `flags` and `brightness`
    /// (16.16). Throws a `MediaError` naming `name` when swscale refuses.
    func context(for frame: VideoFrame, width: Int32, height: Int32, outWidth: Int32, outHeight: Int32, to target: AVPixelFormat,
                 flags: Int32, brightness: Int32, name: String) throws -> OpaquePointer {
        let wanted = Setup(width: width, height: height, outWidth: outWidth, outHeight: outHeight, format: frame.pixelFormat,
                           matrix: frame.colorMatrix, range: frame.colorRange, target: target.rawValue, flags: flags, brightness: brightness)
        if let scaler, setup == wanted { return scaler }
        setup = nil
        scaler = sws_getCachedContext(scaler, width, height, frame.pixelFormat.avPixelFormat, outWidth, outHeight, target, flags, nil, nil, nil)
        guard let scaler else {
            let targetName = av_get_pix_fmt_name(target).map { String(cString: $0) } ?? "RGB"
            throw MediaError(uri: name, call: "sws_getCachedContext", reason: "cannot convert \(frame.pixelFormat.rawValue) to \(targetName)")
        }
        if frame.pixelFormat.isYCbCr {
            let table = sws_getCoefficients(frame.colorMatrix.swsColorspace)
            let r = sws_setColorspaceDetails(scaler, table, frame.colorRange == .full ? 1 : 0, table, 1, brightness, 1 << 16, 1 << 16)
            guard r >= 0 else {
                throw MediaError(uri: name, call: "sws_setColorspaceDetails", code: r,
                                 reason: "swscale cannot convert \(frame.colorMatrix.rawValue) \(frame.colorRange.rawValue) to RGB")
            }
        }
        setup = wanted
        return scaler
    }
}
