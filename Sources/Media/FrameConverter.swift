import CFFmpeg
import Playback

/// Turns decoded `AVFrame`s into `VideoFrame`s: reads the colour tags, and converts with swscale
/// (once per frame) only what the player layer cannot draw directly.
///
/// Used from one thread at a time (the decoder's); owns its swscale context.
final class FrameConverter {
    private var scaler: OpaquePointer?
    let uri: String

    init(uri: String) { self.uri = uri }

    deinit { sws_freeContext(scaler) }

    /// The colour tags of `frame`, with the usual rules for what is untagged.
    static func colorTags(of frame: UnsafePointer<AVFrame>)
        -> (matrix: ColorMatrix, range: ColorRange, chroma: ChromaLocation)
    {
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        let isJPEGFormat = format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P
        let range: ColorRange = frame.pointee.color_range == AVCOL_RANGE_JPEG || isJPEGFormat ? .full : .limited
        let matrix = ColorMatrix(frame.pointee.colorspace, height: Int(frame.pointee.height))
        let chroma: ChromaLocation
        switch frame.pointee.chroma_location {
        case AVCHROMA_LOC_CENTER: chroma = .center
        case AVCHROMA_LOC_TOPLEFT: chroma = .topLeft
        case AVCHROMA_LOC_LEFT: chroma = .left
        default: chroma = isJPEGFormat ? .center : .left  // JPEG sites chroma centred, video left
        }
        return (matrix, range, chroma)
    }

    /// Wraps `frame` (taking ownership) as a `VideoFrame`, converting it first when its format is
    /// not one the layer draws or its rows cannot be uploaded as they are.
    func makeFrame(taking frame: UnsafeMutablePointer<AVFrame>, pts: MediaTime, duration: MediaTime,
                   rotation: Rotation) throws -> VideoFrame {
        let tags = Self.colorTags(of: frame)
        let sar = frame.pointee.sample_aspect_ratio
        let pixelAspect = ContainerValue.pixelAspect(sar)
        let avFormat = AVPixelFormat(rawValue: frame.pointee.format)
        if let format = PixelFormat(avFormat), Self.uploadable(frame, format) {
            return VideoFrame(taking: frame, format: format, pts: pts, duration: duration, colorMatrix: tags.matrix,
                              colorRange: tags.range, chromaLocation: tags.chroma, rotation: rotation,
                              pixelAspect: pixelAspect)
        }
        var source: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&source) }
        let sourceName = av_get_pix_fmt_name(avFormat).map { String(cString: $0) } ?? "format \(frame.pointee.format)"
        guard let descriptor = av_pix_fmt_desc_get(avFormat) else {
            throw MediaError(uri: uri, call: "av_pix_fmt_desc_get", reason: "unknown pixel format \(sourceName)")
        }
        let flags = descriptor.pointee.flags
        guard flags & UInt64(AV_PIX_FMT_FLAG_HWACCEL) == 0 else {
            throw MediaError(uri: uri, call: "sws_scale",
                             reason: "\(sourceName) is a hardware surface: transfer it to memory before converting")
        }
        let isRGB = flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0
        let target = Self.target(for: descriptor.pointee, sameLayout: PixelFormat(avFormat))
        // RGB becomes BT.709 full range (what swscale is told below); Y'CbCr keeps its own tags.
        let matrix: ColorMatrix = isRGB ? .bt709 : tags.matrix
        let range: ColorRange = isRGB ? .full : tags.range
        let converted = try convert(frame, to: target, sourceName: sourceName, isRGB: isRGB, matrix: matrix, range: range)
        return VideoFrame(taking: converted, format: target, pts: pts, duration: duration, colorMatrix: matrix,
                          colorRange: range, chromaLocation: isRGB ? .center : tags.chroma, rotation: rotation,
                          pixelAspect: pixelAspect, convertedFrom: sourceName)
    }

    /// Whether every plane's rows are whole texels going down (GL_UNPACK_ROW_LENGTH counts texels).
    private static func uploadable(_ frame: UnsafePointer<AVFrame>, _ format: PixelFormat) -> Bool {
        let f = frame.pointee
        let strides = [f.linesize.0, f.linesize.1, f.linesize.2]
        for plane in 0..<format.planeCount {
            let texel = format.bytesPerSample * (plane > 0 && format.interleavedChroma ? 2 : 1)
            if strides[plane] <= 0 || Int(strides[plane]) % texel != 0 { return false }
        }
        return true
    }

    /// The drawable format closest to `descriptor`: same subsampling where one exists, 10 bits for
    /// anything deeper than 8. `sameLayout` is the format itself when it is drawable but its rows are not.
    private static func target(for descriptor: AVPixFmtDescriptor, sameLayout: PixelFormat?) -> PixelFormat {
        if let sameLayout { return sameLayout }
        let deep = descriptor.comp.0.depth > 8
        let subsampling = (Int(descriptor.log2_chroma_w), Int(descriptor.log2_chroma_h))
        let isRGB = descriptor.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0
        switch (isRGB ? (0, 0) : subsampling, deep) {
        case ((1, 1), false): return .yuv420p
        case ((1, 1), true): return .yuv420p10le
        case ((1, 0), false): return .yuv422p
        case ((1, 0), true): return .yuv422p10le
        case (_, true): return .yuv444p10le
        default: return .yuv444p
        }
    }

    /// Converts `frame` into a new frame of `target` with swscale, keeping its range and matrix
    /// (Y'CbCr) or converting to `matrix`/`range` (RGB).
    private func convert(_ frame: UnsafeMutablePointer<AVFrame>, to target: PixelFormat, sourceName: String,
                         isRGB: Bool, matrix: ColorMatrix, range: ColorRange) throws -> UnsafeMutablePointer<AVFrame> {
        let w = frame.pointee.width, h = frame.pointee.height
        scaler = sws_getCachedContext(scaler, w, h, AVPixelFormat(rawValue: frame.pointee.format),
                                      w, h, target.avPixelFormat, Int32(SWS_BILINEAR), nil, nil, nil)
        guard let scaler else {
            throw MediaError(uri: uri, call: "sws_getCachedContext", reason: "cannot convert \(sourceName) to \(target.rawValue)")
        }
        // No range or matrix change for Y'CbCr (swscale would otherwise squeeze yuvj to limited);
        // RGB (always full range) is coded with `matrix` into `range`.
        let table = sws_getCoefficients(matrix.swsColorspace)
        let full: Int32 = range == .full ? 1 : 0
        _ = sws_setColorspaceDetails(scaler, table, isRGB ? 1 : full, table, full, 0, 1 << 16, 1 << 16)

        guard let out = av_frame_alloc() else {
            throw MediaError(uri: uri, call: "av_frame_alloc", reason: "out of memory")
        }
        out.pointee.width = w
        out.pointee.height = h
        out.pointee.format = target.avPixelFormat.rawValue
        var r = av_frame_get_buffer(out, 0)
        if r >= 0 { r = swsScale(scaler, frame, into: out) }
        guard r >= 0 else {
            var failed: UnsafeMutablePointer<AVFrame>? = out
            av_frame_free(&failed)
            throw MediaError(uri: uri, call: "sws_scale", averror: r)
        }
        return out
    }
}

/// `sws_scale` of every row of `source` into `target`, through their own plane pointers and
/// strides (`data` and `linesize`); returns the rows written or an AVERROR.
func swsScale(_ scaler: OpaquePointer?, _ source: UnsafePointer<AVFrame>, into target: UnsafeMutablePointer<AVFrame>) -> Int32 {
    withUnsafePointer(to: source.pointee.data) { src in
        withUnsafePointer(to: source.pointee.linesize) { srcStride in
            withUnsafeMutablePointer(to: &target.pointee.data) { dst in
                withUnsafePointer(to: target.pointee.linesize) { dstStride in
                    sws_scale(scaler,
                              UnsafeRawPointer(src).assumingMemoryBound(to: UnsafePointer<UInt8>?.self),
                              UnsafeRawPointer(srcStride).assumingMemoryBound(to: Int32.self), 0, source.pointee.height,
                              UnsafeMutableRawPointer(dst).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
                              UnsafeRawPointer(dstStride).assumingMemoryBound(to: Int32.self))
                }
            }
        }
    }
}

extension ColorMatrix {
    /// The matrix FFmpeg's colour space tag names; untagged (or unknown) by the picture's height.
    init(_ space: AVColorSpace, height: Int) {
        switch space {
        case AVCOL_SPC_BT709: self = .bt709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M, AVCOL_SPC_FCC, AVCOL_SPC_SMPTE240M: self = .bt601
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: self = .bt2020
        default: self = .untagged(height: height)
        }
    }
}
