import CFFmpeg
import Foundation
import Synchronization

/// Encodes pictures as PNG with libavcodec's PNG encoder (no other image library).
public enum PNGEncoder {
    /// PNG bytes of a `width` x `height` RGBA picture, 8 bits per channel, rows top-down (bottom-up
    /// when `bottomRowFirst`, as GL reads them back) with no padding (`rgba.count == width * height * 4`).
    /// `opaque`: the alpha channel is left out (an RGB PNG), for a picture a screen shows, where
    /// alpha means nothing; a quarter less to compress.
    public static func encode(rgba: [UInt8], width: Int, height: Int, bottomRowFirst: Bool = false,
                              opaque: Bool = false) throws -> Data {
        try PNGWriter(width: width, height: height, opaque: opaque).encode(rgba: rgba, bottomRowFirst: bottomRowFirst)
    }
}

/// PNG encoding that keeps its encoder and buffers between pictures of one size, for pictures
/// asked for again and again (a dashboard's thumbnail every few seconds): opening the encoder and
/// mapping fresh memory for its buffers cost about as much as compressing a 640-pixel picture.
/// Pictures bigger than `keptPixels` get an encoder of their own, freed after (their buffers
/// would hold megabytes for good). Thread-safe: one picture is encoded at a time.
public final class KeptPNGEncoder: Sendable {
    private let kept = Mutex<PNGWriter?>(nil)
    private let keptPixels: Int

    public init(keptPixels: Int = 1 << 20) {
        self.keptPixels = keptPixels
    }

    /// As `PNGEncoder.encode`.
    public func encode(rgba: [UInt8], width: Int, height: Int, bottomRowFirst: Bool = false, opaque: Bool = false) throws -> Data {
        guard width * height <= keptPixels else {
            return try PNGEncoder.encode(rgba: rgba, width: width, height: height, bottomRowFirst: bottomRowFirst, opaque: opaque)
        }
        return try kept.withLock { writer throws -> Data in
            if let current = writer, current.width == width, current.height == height, current.opaque == opaque {
                return try current.encode(rgba: rgba, bottomRowFirst: bottomRowFirst)
            }
            writer = nil  // its buffers go before the new one's are taken
            let made = try PNGWriter(width: width, height: height, opaque: opaque)
            writer = made
            return try made.encode(rgba: rgba, bottomRowFirst: bottomRowFirst)
        }
    }
}

/// An open PNG encoder for pictures of one size, with its frame and packet: the one owner of them.
final class PNGWriter {
    let width: Int
    let height: Int
    let opaque: Bool
    private let what: String
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    init(width: Int, height: Int, opaque: Bool) throws {
        self.width = width
        self.height = height
        self.opaque = opaque
        what = "\(width)x\(height) PNG"
        guard width > 0, height > 0, width <= 32768, height <= 32768 else {
            throw MediaError(uri: what, call: "PNGEncoder.encode", reason: "a picture's sides must be 1 to 32768 pixels")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else {
            throw MediaError(uri: what, call: "avcodec_find_encoder", reason: "this FFmpeg has no PNG encoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(uri: what, call: "avcodec_alloc_context3", reason: "out of memory")
        }
        self.context = context  // freed by deinit on every way out
        let format = opaque ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_RGBA
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = format
        context.pointee.time_base = AVRational(num: 1, den: 1)
        // zlib's fastest level: about twice as fast as the default at 1080p, for a file a
        // quarter bigger (a screenshot is wanted now, and read once).
        context.pointee.compression_level = 1
        var r = avcodec_open2(context, codec, nil)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_open2", averror: r) }
        guard let frame = av_frame_alloc() else {
            throw MediaError(uri: what, call: "av_frame_alloc", reason: "out of memory")
        }
        self.frame = frame
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = format.rawValue
        r = av_frame_get_buffer(frame, 0)
        guard r >= 0 else { throw MediaError(uri: what, call: "av_frame_get_buffer", averror: r) }
        guard let packet = av_packet_alloc() else {
            throw MediaError(uri: what, call: "av_packet_alloc", reason: "out of memory")
        }
        self.packet = packet
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&frame)
        avcodec_free_context(&context)
    }

    /// The picture's PNG bytes; `rgba` as `PNGEncoder.encode` takes it.
    func encode(rgba: [UInt8], bottomRowFirst: Bool) throws -> Data {
        guard rgba.count == width * height * 4 else {
            throw MediaError(uri: what, call: "PNGEncoder.encode", reason: "expected \(width * height * 4) bytes of RGBA, got \(rgba.count)")
        }
        guard let context, let frame, let packet else { throw MediaError(uri: what, call: "PNGEncoder.encode", reason: "not open") }
        // The encoder let go of the last picture's buffer when it gave its packet: no copy here.
        var r = av_frame_make_writable(frame)
        guard r >= 0 else { throw MediaError(uri: what, call: "av_frame_make_writable", averror: r) }
        let stride = Int(frame.pointee.linesize.0), row = width * 4
        rgba.withUnsafeBytes { source in
            let base = UnsafeMutableRawPointer(frame.pointee.data.0!)
            for y in 0..<height {
                let from = source.baseAddress! + (bottomRowFirst ? height - 1 - y : y) * row, to = base + y * stride
                if opaque {
                    let s = from.assumingMemoryBound(to: UInt8.self), t = to.assumingMemoryBound(to: UInt8.self)
                    for x in 0..<width {
                        t[3 * x] = s[4 * x]; t[3 * x + 1] = s[4 * x + 1]; t[3 * x + 2] = s[4 * x + 2]
                    }
                } else {
                    to.copyMemory(from: from, byteCount: row)
                }
            }
        }
        // PNG pictures stand alone: each frame sent gives its packet at once, with no flush (which
        // would end the encoder).
        r = avcodec_send_frame(context, frame)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_send_frame", averror: r) }
        r = avcodec_receive_packet(context, packet)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_receive_packet", averror: r) }
        defer { av_packet_unref(packet) }
        return Data(bytes: packet.pointee.data, count: Int(packet.pointee.size))
    }
}
