import CFFmpeg
import Foundation
import SystemCalls

/// Decodes a picture file (PNG with alpha, or any image libavcodec knows by its contents) into
/// straight RGBA with swscale, and scales RGBA pictures: for overlays, read once when the config
/// is read. Failures name the file, the call and FFmpeg's reason.
public enum StillImageDecoder {
    /// The largest file read (an overlay is a logo, not a poster).
    public static let largestFile = 64 << 20

    public struct Picture: Sendable {
        public let width: Int
        public let height: Int
        /// `width * height * 4` bytes, rows top-down, not premultiplied.
        public let pixels: [UInt8]
    }

    /// The picture in the file at `path`.
    public static func decodeRGBA(path: String) throws -> Picture {
        // Opened as a playlist item is: a regular file only (a FIFO's open or a device's read
        // would wait for ever), never more than `largestFile` read.
        let data: [UInt8]
        do {
            data = try RegularFile.read(path, limit: largestFile)
        } catch {
            let reason = error.errno == ENOENT ? "no such file" : error.errno == EFBIG ? "larger than \(largestFile >> 20) MB" : error.reason
            throw MediaError(uri: path, call: error.errno == EFBIG ? "read" : "open", reason: reason)
        }
        guard !data.isEmpty else { throw MediaError(uri: path, call: "read", reason: "the file is empty") }
        // PNG by its signature; other pictures by what libavcodec's image decoders would take.
        let isPNG = data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let isJPEG = data.starts(with: [0xFF, 0xD8, 0xFF])
        let id = isPNG ? AV_CODEC_ID_PNG : isJPEG ? AV_CODEC_ID_MJPEG : AV_CODEC_ID_PNG
        guard let codec = avcodec_find_decoder(id) else {
            throw MediaError(uri: path, call: "avcodec_find_decoder", reason: "this FFmpeg has no decoder for it")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw MediaError(uri: path, call: "avcodec_alloc_context3", reason: "out of memory")
        }
        var contextOwner: UnsafeMutablePointer<AVCodecContext>? = context
        defer { avcodec_free_context(&contextOwner) }
        context.pointee.thread_count = 1
        var r = avcodec_open2(context, codec, nil)
        guard r >= 0 else { throw MediaError(uri: path, call: "avcodec_open2", averror: r) }
        guard let packet = av_packet_alloc() else { throw MediaError(uri: path, call: "av_packet_alloc", reason: "out of memory") }
        var packetOwner: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetOwner) }
        r = av_new_packet(packet, Int32(data.count))
        guard r >= 0 else { throw MediaError(uri: path, call: "av_new_packet", averror: r) }
        data.withUnsafeBytes { bytes in
            UnsafeMutableRawPointer(packet.pointee.data).copyMemory(from: bytes.baseAddress!, byteCount: data.count)
        }
        r = avcodec_send_packet(context, packet)
        guard r >= 0 else { throw MediaError(uri: path, call: "avcodec_send_packet", averror: r) }
        _ = avcodec_send_packet(context, nil)
        guard let frame = av_frame_alloc() else { throw MediaError(uri: path, call: "av_frame_alloc", reason: "out of memory") }
        var frameOwner: UnsafeMutablePointer<AVFrame>? = frame
        defer { av_frame_free(&frameOwner) }
        r = avcodec_receive_frame(context, frame)
        guard r >= 0 else {
            throw MediaError(uri: path, call: "avcodec_receive_frame", code: r,
                             reason: r == averrorEOF ? "no picture in the file" : ffmpegErrorString(r))
        }
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        // At most 64 megapixels (256 MB as RGBA): a picture the file says is larger is refused
        // before its pixels are allocated.
        guard (1...32768).contains(width), (1...32768).contains(height), width * height <= 1 << 26 else {
            throw MediaError(uri: path, call: "avcodec_receive_frame", reason: "picture size \(width)x\(height) out of range (at most 64 megapixels)")
        }
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        try convert(source: frame.pointee, format: AVPixelFormat(rawValue: frame.pointee.format), width: width, height: height,
                    into: &pixels, outWidth: width, outHeight: height, name: path)
        return Picture(width: width, height: height, pixels: pixels)
    }

    /// `pixels` (RGBA, `width` x `height`, no padding) scaled to `toWidth` x `toHeight` (area
    /// average when smaller, bicubic when larger), channel by channel: premultiplied pictures stay so.
    public static func scaleRGBA(_ pixels: [UInt8], width: Int, height: Int, toWidth: Int, toHeight: Int) throws -> [UInt8] {
        let name = "\(width)x\(height) RGBA picture"
        guard (1...32768).contains(width), (1...32768).contains(height), (1...32768).contains(toWidth), (1...32768).contains(toHeight),
              pixels.count == width * height * 4 else {
            throw MediaError(uri: name, call: "StillImageDecoder.scaleRGBA", reason: "size out of range")
        }
        var out = [UInt8](repeating: 0, count: toWidth * toHeight * 4)
        var source = AVFrame()
        try pixels.withUnsafeBufferPointer { input in
            source.data.0 = UnsafeMutablePointer(mutating: input.baseAddress)
            source.linesize.0 = Int32(width * 4)
            try convert(source: source, format: AV_PIX_FMT_RGBA, width: width, height: height,
                        into: &out, outWidth: toWidth, outHeight: toHeight, name: name)
        }
        return out
    }

    private static func convert(source: AVFrame, format: AVPixelFormat, width: Int, height: Int, into out: inout [UInt8],
                                outWidth: Int, outHeight: Int, name: String) throws {
        let flags = outWidth < width || outHeight < height ? SWS_AREA : SWS_BICUBIC
        guard let sws = sws_getContext(Int32(width), Int32(height), format, Int32(outWidth), Int32(outHeight), AV_PIX_FMT_RGBA,
                                       Int32(flags | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT), nil, nil, nil) else {
            throw MediaError(uri: name, call: "sws_getContext", reason: "cannot convert \(av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "an unknown format") to RGBA")
        }
        defer { sws_freeContext(sws) }
        var source = source
        let r = out.withUnsafeMutableBufferPointer { target -> Int32 in
            var dst: [UnsafeMutablePointer<UInt8>?] = [target.baseAddress, nil, nil, nil]
            var dstStride: [Int32] = [Int32(outWidth * 4), 0, 0, 0]
            return withUnsafePointer(to: &source.data) { dataTuple in
                withUnsafePointer(to: &source.linesize) { strideTuple in
                    dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { data in
                        strideTuple.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            sws_scale(sws, data, strides, 0, Int32(height), &dst, &dstStride)
                        }
                    }
                }
            }
        }
        guard r == Int32(outHeight) else {
            throw MediaError(uri: name, call: "sws_scale", code: r, reason: r < 0 ? ffmpegErrorString(r) : "converted \(r) of \(outHeight) rows")
        }
    }
}
