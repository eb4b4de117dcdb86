import CFFmpeg
import Playback

/// The Y'CbCr layouts a KMS plane can scan out that the planes path fills from software frames.
public enum YUVScanoutFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// DRM `NV12`: an 8-bit luma plane, then one plane of interleaved Cb Cr, halved both ways.
    case nv12
    /// DRM `YU12` (YUV420): three 8-bit planes, chroma halved both ways.
    case yuv420
    /// DRM `P010`: as NV12 with 16-bit little-endian words, the 10 bits in their high bits.
    case p010

    /// The DRM fourcc code.
    public var fourcc: UInt32 { DRMPrimeDescriptor.fourcc(fourccName) }
    /// The fourcc's characters, as the kernel and modetest name it.
    public var fourccName: String {
        switch self {
        case .nv12: "NV12"
        case .yuv420: "YU12"
        case .p010: "P010"
        }
    }
    public var description: String { fourccName }
    /// The frame format with the same layout.
    public var pixelFormat: PixelFormat {
        switch self {
        case .nv12: .nv12
        case .yuv420: .yuv420p
        case .p010: .p010le
        }
    }
    /// The scan-out format that holds `format` as it is (nil: none; swscale converts).
    public init?(exactly format: PixelFormat) {
        guard let match = Self.allCases.first(where: { $0.pixelFormat == format }) else { return nil }
        self = match
    }
    /// Bytes per luma sample.
    var sampleBytes: Int { self == .p010 ? 2 : 1 }
}

/// Where the planes of one Y'CbCr picture lie in a single buffer (a dumb buffer holding all of
/// them: luma rows first, chroma below at the same pitch, or for YU12 two half-pitch chroma
/// planes). Made from what the driver gave (`pitch`, `size`) and checked before a byte is written.
public struct YUVBufferLayout: Sendable, Equatable {
    public struct Span: Sendable, Equatable {
        public var offset: Int
        public var pitch: Int
        /// Bytes of picture in each row (at most `pitch`).
        public var rowBytes: Int
        public var rows: Int
        public init(offset: Int, pitch: Int, rowBytes: Int, rows: Int) {
            self.offset = offset
            self.pitch = pitch
            self.rowBytes = rowBytes
            self.rows = rows
        }
    }
    public let format: YUVScanoutFormat
    public let width: Int
    public let height: Int
    public let planes: [Span]
    /// Bytes of the whole buffer.
    public let size: Int

    /// The dumb buffer to ask the kernel for to hold a `width` x `height` picture: its width and
    /// height in "pixels" of `bitsPerPixel` (the kernel's pitch is for that width; chroma rows
    /// are added below the luma), nil for sizes out of range.
    public static func dumbRequest(_ format: YUVScanoutFormat, width: Int, height: Int) -> (width: Int, height: Int, bitsPerPixel: Int)? {
        guard width > 0, height > 0, width <= 16384, height <= 16384 else { return nil }
        let evenWidth = (width + 1) & ~1
        let chromaRows = (height + 1) / 2
        return (evenWidth, height + chromaRows, format.sampleBytes * 8)
    }

    /// nil when `pitch` and `size` (the driver's, for `dumbRequest`) cannot hold the picture.
    public init?(_ format: YUVScanoutFormat, width: Int, height: Int, pitch: Int, size: Int) {
        guard let request = Self.dumbRequest(format, width: width, height: height), pitch > 0, size > 0, pitch <= 1 << 20 else { return nil }
        let lumaRow = width * format.sampleBytes
        let chromaWidth = (width + 1) / 2, chromaRows = (height + 1) / 2
        guard pitch >= request.width * format.sampleBytes, size >= pitch * request.height else { return nil }
        let chromaStart = pitch * height
        switch format {
        case .nv12, .p010:
            planes = [Span(offset: 0, pitch: pitch, rowBytes: lumaRow, rows: height),
                      Span(offset: chromaStart, pitch: pitch, rowBytes: chromaWidth * 2 * format.sampleBytes, rows: chromaRows)]
        case .yuv420:
            // Cb then Cr, each at half the pitch: together they fill the chroma rows' bytes.
            guard pitch % 2 == 0 else { return nil }
            let half = pitch / 2
            planes = [Span(offset: 0, pitch: pitch, rowBytes: lumaRow, rows: height),
                      Span(offset: chromaStart, pitch: half, rowBytes: chromaWidth, rows: chromaRows),
                      Span(offset: chromaStart + half * chromaRows, pitch: half, rowBytes: chromaWidth, rows: chromaRows)]
        }
        self.format = format
        self.width = width
        self.height = height
        self.size = size
    }
}

/// Fills a Y'CbCr scan-out buffer from a software frame: the frame's crop copied plane by plane,
/// row by row (its rows' padding skipped) when the frame is in the buffer's format, else converted
/// by swscale into it (same size: the plane scales). Samples keep their matrix and range (the
/// plane's `COLOR_ENCODING`/`COLOR_RANGE` say them). Used from one thread at a time; owns its
/// swscale context.
public final class YUVPlaneWriter {
    private struct Setup: Equatable {
        var width: Int32, height: Int32, from: PixelFormat, to: YUVScanoutFormat
    }
    private var scaler: OpaquePointer?
    private var setup: Setup?

    public init() {}
    deinit { sws_freeContext(scaler) }

    /// Writes `crop` of `frame` (widened to whole chroma samples: `ScanoutConverter.aligned`; its
    /// size must be the layout's) into `target` laid out as `layout`. Throws, naming the frame, for
    /// a DMA-BUF frame, a layout that does not fit `target` or the crop, or a failing swscale call.
    /// `package`: a raw buffer does not cross the library's API (Display's dumb buffers use it).
    package func write(_ frame: VideoFrame, crop: FrameCrop, into target: UnsafeMutableRawBufferPointer, layout: YUVBufferLayout) throws {
        let name = "\(frame.pixelFormat.rawValue) \(frame.width)x\(frame.height) frame"
        let crop = ScanoutConverter.aligned(crop, format: frame.pixelFormat, width: frame.width, height: frame.height)
        guard crop.width == layout.width, crop.height == layout.height, layout.size <= target.count, let base = target.baseAddress else {
            throw MediaError(uri: name, call: "YUVPlaneWriter.write",
                             reason: "crop \(crop) does not match the \(layout.width)x\(layout.height) \(layout.format) buffer of \(layout.size) bytes (\(target.count) mapped)")
        }
        guard frame.drmPrime == nil else {
            throw MediaError(uri: name, call: "YUVPlaneWriter.write", reason: "the picture is not in memory: copy it first")
        }
        if frame.pixelFormat == layout.format.pixelFormat {
            copy(frame, crop: crop, into: base, layout: layout)
        } else {
            try convert(frame, crop: crop, into: base, layout: layout, name: name)
        }
    }

    /// Row by row: each plane's rows of the crop, `rowBytes` of each, into the layout's spans.
    private func copy(_ frame: VideoFrame, crop: FrameCrop, into base: UnsafeMutableRawPointer, layout: YUVBufferLayout) {
        let (sx, sy) = frame.pixelFormat.chromaShift
        frame.withPlanes { planes in
            for (index, span) in layout.planes.enumerated() where index < planes.count {
                let plane = planes[index]
                let x = index == 0 ? crop.x : crop.x >> sx, y = index == 0 ? crop.y : crop.y >> sy
                // The source rows hold at least as many bytes as the span's (the crop lies in the frame).
                let rowBytes = min(span.rowBytes, (plane.width - x) * plane.bytesPerTexel)
                let rows = min(span.rows, plane.height - y)
                guard rowBytes > 0, rows > 0 else { continue }
                for row in 0..<rows {
                    let from = plane.bytes + (y + row) * plane.bytesPerRow + x * plane.bytesPerTexel
                    (base + span.offset + row * span.pitch).copyMemory(from: from, byteCount: rowBytes)
                }
            }
        }
    }

    private func convert(_ frame: VideoFrame, crop: FrameCrop, into base: UnsafeMutableRawPointer, layout: YUVBufferLayout,
                         name: String) throws {
        guard let w = Int32(exactly: crop.width), let h = Int32(exactly: crop.height) else {
            throw MediaError(uri: name, call: "sws_getCachedContext", reason: "size out of range")
        }
        let wanted = Setup(width: w, height: h, from: frame.pixelFormat, to: layout.format)
        if scaler == nil || setup != wanted {
            setup = nil
            // Same size both sides: swscale only converts (chroma siting, bit depth, packing).
            scaler = sws_getCachedContext(scaler, w, h, frame.pixelFormat.avPixelFormat, w, h, layout.format.pixelFormat.avPixelFormat,
                                          Int32(SWS_POINT), nil, nil, nil)
            guard scaler != nil else {
                throw MediaError(uri: name, call: "sws_getCachedContext", reason: "cannot convert \(frame.pixelFormat.rawValue) to \(layout.format)")
            }
            setup = wanted
        }
        let format = frame.pixelFormat
        let r: Int32 = try frame.withAVFrame { f in
            var (src, srcStrides) = croppedPlanes(of: f, format: format, crop: crop)
            var dst: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
            var dstStrides: [Int32] = [0, 0, 0, 0]
            for (index, span) in layout.planes.enumerated() {
                dst[index] = (base + span.offset).assumingMemoryBound(to: UInt8.self)
                dstStrides[index] = Int32(clamping: span.pitch)
            }
            return sws_scale(scaler, &src, &srcStrides, 0, h, &dst, &dstStrides)
        }
        guard r == h else {
            throw MediaError(uri: name, call: "sws_scale", code: r, reason: "converted \(r) of \(h) rows into \(layout.format)")
        }
        // swscale's general path leaves the last Cb Cr pair of an odd-width P010 row unwritten
        // (FFmpeg's own conversion leaves it 0): it gets its neighbour's, as the edge column.
        if layout.format == .p010, crop.width % 2 == 1, crop.width > 1, layout.planes.count == 2 {
            let chroma = layout.planes[1]
            for row in 0..<chroma.rows {
                let end = base + chroma.offset + row * chroma.pitch + chroma.rowBytes
                (end - 4).copyMemory(from: end - 8, byteCount: 4)
            }
        }
    }
}
