import CFFmpeg
import Playback

/// A rectangle in pixels, origin at the top left: a place on an output, or a crop of a frame.
public struct PixelRect: Sendable, Equatable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// A rectangle of a frame's stored pixels (before its rotation).
public typealias FrameCrop = PixelRect

/// Where a converted picture goes in a mapped scan-out buffer of 32-bit XRGB8888 pixels (bytes B,
/// G, R, X in memory): rows `pitch` bytes apart, the picture `width` x `height` pixels with its top
/// left at (`x`, `y`).
public struct ScanoutPlacement: Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public var pitch: Int
    public init(x: Int, y: Int, width: Int, height: Int, pitch: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.pitch = pitch
    }

    /// Bytes a buffer needs so that the placement lies inside it; nil when it cannot (negative
    /// values, a pitch too small for its row, sizes that overflow).
    public var bytesNeeded: Int? {
        guard x >= 0, y >= 0, width > 0, height > 0, pitch > 0 else { return nil }
        let (right, o1) = x.addingReportingOverflow(width)
        let (rowBytes, o2) = right.multipliedReportingOverflow(by: 4)
        guard !o1, !o2, rowBytes <= pitch else { return nil }
        let (rows, o3) = (y + height - 1).multipliedReportingOverflow(by: pitch)
        let (total, o4) = rows.addingReportingOverflow(rowBytes)
        return o3 || o4 ? nil : total
    }
}

/// Converts decoded frames straight into a mapped XRGB8888 scan-out buffer with swscale: Y'CbCr to
/// RGB with the frame's own matrix and range, a crop of the frame scaled to the placement, in one
/// pass (the KMS planes output's picture path: no GL, no intermediate RGBA frame). A turned
/// picture (the frame's or the display's rotation) is converted into a scratch buffer of the
/// unturned size and copied turned into place; so is a picture whose width is not a whole number
/// of `rowGroup`s, since swscale's SIMD converters write whole groups of pixels and would run on
/// into the pixels beside it (and past the buffer's end on its last row).
///
/// Used from one thread at a time (the presentation thread); owns its swscale context and scratch.
public final class ScanoutConverter {
    private let scaler = RGBScaler()
    private var scratch: [UInt32] = []
    /// The pixels swscale may write per row at once (x86's yuv2rgb writes 8): a row of the
    /// scratch buffer is a whole number of these, so nothing is written past it.
    static let rowGroup = 16

    public init() {}

    /// The crop made whole chroma samples: `crop` widened to the frame's chroma grid (the planes'
    /// pointers can only start on a whole sample), inside the frame.
    public static func aligned(_ crop: FrameCrop, format: PixelFormat, width: Int, height: Int) -> FrameCrop {
        let (sx, sy) = format.isYCbCr ? format.chromaShift : (0, 0)
        let x0 = (max(0, min(width, crop.x)) >> sx) << sx, y0 = (max(0, min(height, crop.y)) >> sy) << sy
        let x1 = max(x0, min(width, crop.x + crop.width)), y1 = max(y0, min(height, crop.y + crop.height))
        return FrameCrop(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// Converts `crop` of `frame` (its stored pixels) into `target` at `placement`, turned
    /// clockwise by `turn` (the placement's size is the turned size). Throws, naming the frame,
    /// for a DMA-BUF frame (copy it first), a placement outside `target`, or a failing swscale call.
    /// `package`, as `blend`: a raw buffer does not cross the library's API (Display uses them).
    package func convert(_ frame: VideoFrame, crop: FrameCrop, turn: Rotation, into target: UnsafeMutableRawBufferPointer,
                         placement: ScanoutPlacement) throws {
        let name = "\(frame.pixelFormat.rawValue) \(frame.width)x\(frame.height) frame"
        guard let needed = placement.bytesNeeded, needed <= target.count, let base = target.baseAddress else {
            throw MediaError(uri: name, call: "ScanoutConverter.convert",
                             reason: "placement \(placement.width)x\(placement.height)+\(placement.x)+\(placement.y) (pitch \(placement.pitch)) is outside the \(target.count)-byte buffer")
        }
        let crop = Self.aligned(crop, format: frame.pixelFormat, width: frame.width, height: frame.height)
        guard crop.width > 0, crop.height > 0 else { return }
        let (outW, outH) = turn.swapsAxes ? (placement.height, placement.width) : (placement.width, placement.height)
        guard let w = Int32(exactly: crop.width), let h = Int32(exactly: crop.height),
              let ow = Int32(exactly: outW), let oh = Int32(exactly: outH) else {
            throw MediaError(uri: name, call: "sws_getCachedContext", reason: "size out of range")
        }
        let settings = RGBAConverter.settings(for: frame.pixelFormat)
        let scaled = (ow, oh) != (w, h)
        let context = try scaler.context(for: frame, width: w, height: h, outWidth: ow, outHeight: oh, to: AV_PIX_FMT_BGRA,
                                        flags: scaled ? Int32(SWS_BILINEAR) : settings.flags,
                                        brightness: scaled ? 0 : settings.brightness, name: name)
        if turn == .none && outW % Self.rowGroup == 0 {
            let start = base + placement.y * placement.pitch + placement.x * 4
            try scale(frame, crop: crop, with: context, into: start, pitch: placement.pitch, rows: oh, name: name)
            return
        }
        let pitch = (outW + Self.rowGroup - 1) / Self.rowGroup * Self.rowGroup
        let count = pitch * outH
        if scratch.count < count { scratch = [UInt32](repeating: 0, count: count) }
        try scratch.withUnsafeMutableBytes { s in
            try scale(frame, crop: crop, with: context, into: s.baseAddress!, pitch: pitch * 4, rows: oh, name: name)
        }
        scratch.withUnsafeBufferPointer { s in
            Self.copyTurned(s, width: outW, height: outH, pitch: pitch, turn: turn, into: base, placement: placement)
        }
    }

    private func scale(_ frame: VideoFrame, crop: FrameCrop, with scaler: OpaquePointer, into start: UnsafeMutableRawPointer,
                       pitch: Int, rows: Int32, name: String) throws {
        let format = frame.pixelFormat
        let r: Int32 = try frame.withAVFrame { f in
            var (planes, strides) = croppedPlanes(of: f, format: format, crop: crop)
            var dst: [UnsafeMutablePointer<UInt8>?] = [start.assumingMemoryBound(to: UInt8.self), nil, nil, nil]
            var dstStrides: [Int32] = [Int32(clamping: pitch), 0, 0, 0]
            return sws_scale(scaler, &planes, &strides, 0, Int32(crop.height), &dst, &dstStrides)
        }
        guard r == rows else {
            throw MediaError(uri: name, call: "sws_scale", code: r, reason: r < 0 ? ffmpegErrorString(r) : "converted \(r) of \(rows) rows")
        }
    }

    /// Blends the rectangle `placement` of `source` over the same rectangle of `target` (both
    /// laid out as `placement.pitch` says): target = source x alpha + target x (1 - alpha), per
    /// channel, in eighths of a 256th (a transition's mix on the planes path). Both buffers must
    /// hold the placement (`bytesNeeded`); nothing is written otherwise.
    package static func blend(_ source: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer,
                              placement: ScanoutPlacement, alpha: Float) {
        guard let needed = placement.bytesNeeded, needed <= source.count, needed <= target.count,
              let from = source.baseAddress, let to = target.baseAddress, alpha.isFinite else { return }
        let a = UInt32(min(max((alpha * 256).rounded(), 0), 256)), b = 256 - a
        for y in placement.y..<(placement.y + placement.height) {
            let offset = y * placement.pitch + placement.x * 4
            let s = (from + offset).assumingMemoryBound(to: UInt32.self)
            let d = (to + offset).assumingMemoryBound(to: UInt32.self)
            for x in 0..<placement.width {
                let sp = s[x], dp = d[x]
                let rb = (((sp & 0xFF00FF) &* a &+ (dp & 0xFF00FF) &* b) >> 8) & 0xFF00FF
                let g = (((sp & 0x00FF00) &* a &+ (dp & 0x00FF00) &* b) >> 8) & 0x00FF00
                d[x] = rb | g
            }
        }
    }

    /// Copies a `width` x `height` picture (32-bit pixels, `pitch` of them a row) turned clockwise by `turn`
    /// into `base` at `placement` (whose size is the turned size).
    static func copyTurned(_ source: UnsafeBufferPointer<UInt32>, width: Int, height: Int, pitch: Int, turn: Rotation,
                           into base: UnsafeMutableRawPointer, placement: ScanoutPlacement) {
        for dy in 0..<placement.height {
            let row = (base + (placement.y + dy) * placement.pitch + placement.x * 4).assumingMemoryBound(to: UInt32.self)
            if turn == .none {
                row.update(from: source.baseAddress! + dy * pitch, count: placement.width)
                continue
            }
            for dx in 0..<placement.width {
                let (sx, sy): (Int, Int) = switch turn {
                case .none: (dx, dy)
                case .clockwise90: (dy, height - 1 - dx)
                case .upsideDown: (width - 1 - dx, height - 1 - dy)
                case .clockwise270: (width - 1 - dy, dx)
                }
                row[dx] = source[sy * pitch + sx]
            }
        }
    }
}

/// swscale's source planes and strides for `crop` of a decoded frame: each plane's first byte of
/// the crop (chroma planes at the crop's position shifted by the format's subsampling).
func croppedPlanes(of f: UnsafePointer<AVFrame>, format: PixelFormat, crop: FrameCrop) -> (planes: [UnsafePointer<UInt8>?], strides: [Int32]) {
    let (sx, sy) = format.isYCbCr ? format.chromaShift : (0, 0)
    let bps = format.bytesPerSample
    var planes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
    var strides: [Int32] = [0, 0, 0, 0]
    let data = [f.pointee.data.0, f.pointee.data.1, f.pointee.data.2]
    let lines = [f.pointee.linesize.0, f.pointee.linesize.1, f.pointee.linesize.2]
    for plane in 0..<format.planeCount {
        guard let p = data[plane] else { continue }
        let chroma = plane > 0
        let texel = format == .rgba ? 4 : bps * (chroma && format.interleavedChroma ? 2 : 1)
        let x = chroma ? crop.x >> sx : crop.x, y = chroma ? crop.y >> sy : crop.y
        planes[plane] = UnsafePointer(p + y * Int(lines[plane]) + x * texel)
        strides[plane] = lines[plane]
    }
    return (planes, strides)
}
