import CFFmpeg
import Foundation

/// Encodes pictures as PNG with libavcodec's PNG encoder (no other image library).
public enum PNGEncoder {
    /// PNG bytes of a `width` x `height` RGBA picture, 8 bits per channel, rows top-down (bottom-up
    /// when `bottomRowFirst`, as GL reads them back) with no padding (`rgba.count == width * height * 4`).
    public static func encode(rgba: [UInt8], width: Int, height: Int, bottomRowFirst: Bool = false) throws -> Data {
        let what = "\(width)x\(height) PNG"
        guard width > 0, height > 0, width <= 32768, height <= 32768, rgba.count == width * height * 4 else {
            throw MediaError(uri: what, call: "PNGEncoder.encode",
                             reason: "expected \(max(width, 0) * max(height, 0) * 4) bytes of RGBA, got \(rgba.count)")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else {
            throw MediaError(uri: what, call: "avcodec_find_encoder", reason: "this FFmpeg has no PNG encoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(uri: what, call: "avcodec_alloc_context3", reason: "out of memory")
        }
        var contextOwner: UnsafeMutablePointer<AVCodecContext>? = context  // freed on every way out
        defer { avcodec_free_context(&contextOwner) }
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_RGBA
        context.pointee.time_base = AVRational(num: 1, den: 1)
        // zlib's fastest level: about twice as fast as the default at 1080p, for a file a
        // quarter bigger (a screenshot is wanted now, and read once).
        context.pointee.compression_level = 1
        var r = avcodec_open2(context, codec, nil)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_open2", averror: r) }

        guard let frame = av_frame_alloc() else {
            throw MediaError(uri: what, call: "av_frame_alloc", reason: "out of memory")
        }
        var frameOwner: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&frameOwner) }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = AV_PIX_FMT_RGBA.rawValue
        r = av_frame_get_buffer(frame, 0)
        guard r >= 0 else { throw MediaError(uri: what, call: "av_frame_get_buffer", averror: r) }
        let stride = Int(frame.pointee.linesize.0), row = width * 4
        rgba.withUnsafeBytes { source in
            let base = UnsafeMutableRawPointer(frame.pointee.data.0!)
            for y in 0..<height {
                let sourceRow = bottomRowFirst ? height - 1 - y : y
                (base + y * stride).copyMemory(from: source.baseAddress! + sourceRow * row, byteCount: row)
            }
        }

        guard let packet = av_packet_alloc() else {
            throw MediaError(uri: what, call: "av_packet_alloc", reason: "out of memory")
        }
        var packetOwner: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetOwner) }
        r = avcodec_send_frame(context, frame)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_send_frame", averror: r) }
        r = avcodec_send_frame(context, nil)  // flush: the one packet comes out now
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_send_frame(flush)", averror: r) }
        r = avcodec_receive_packet(context, packet)
        guard r >= 0 else { throw MediaError(uri: what, call: "avcodec_receive_packet", averror: r) }
        defer { av_packet_unref(packet) }
        return Data(bytes: packet.pointee.data, count: Int(packet.pointee.size))
    }
}
