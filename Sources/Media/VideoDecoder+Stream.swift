import CFFmpeg
import CShim
import Foundation
import Playback

// Opening a file's video stream and describing it: the best video stream and its software
// decoder, its time base checked, its size, rate, duration and kind (a video or a still).

extension VideoDecoder {
    /// The best video stream of `fmt` (`path`'s) and that stream's software decoder.
    static func findVideoStream(_ fmt: UnsafeMutablePointer<AVFormatContext>, path: String) throws
        -> (stream: Int32, decoder: UnsafePointer<AVCodec>)
    {
        var decoder: UnsafePointer<AVCodec>?
        // An input that discards some video streams (HLS variants not chosen, `HLSVariants`): the
        // best of the program of one it keeps.
        let video = (0..<Int(fmt.pointee.nb_streams)).compactMap { i -> (index: Int32, kept: Bool)? in
            guard let st = fmt.pointee.streams[i], st.pointee.codecpar?.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { return nil }
            return (Int32(i), st.pointee.discard != AVDISCARD_ALL)
        }
        let related = video.contains { !$0.kept } ? video.first { $0.kept }?.index ?? -1 : -1
        let r = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, related, &decoder, 0)
        guard r >= 0, let decoder else {
            throw MediaError(uri: path, call: "av_find_best_stream", code: r,
                             reason: r == mq_averror_decoder_not_found() ? "no decoder for the video stream" : "no video stream")
        }
        return (r, decoder)
    }

    /// Stream `index` of `fmt`, when its time base can time its frames; otherwise a `MediaError`
    /// naming the file and the stream.
    static func checkedStream(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ index: Int32,
                                      path: String) throws -> UnsafeMutablePointer<AVStream> {
        guard index >= 0, index < fmt.pointee.nb_streams, let stream = fmt.pointee.streams[Int(index)] else {
            throw MediaError(uri: path, call: "stream \(index)", reason: "no such stream (\(fmt.pointee.nb_streams) in the file)")
        }
        let timeBase = stream.pointee.time_base
        guard ContainerValue.isUsable(timeBase) else {
            throw MediaError(uri: path, call: "stream \(index)", reason: "time base \(timeBase.num)/\(timeBase.den) is not positive")
        }
        return stream
    }

    /// The stream's description from what the demuxer and the decoder (or, without one, the
    /// stream's parameters) say. A picture size out of range fails, naming the file and stream.
    static func describe(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ stream: UnsafeMutablePointer<AVStream>,
                                 _ decoder: UnsafePointer<AVCodec>, width: Int32, height: Int32,
                                 pixelFormat: AVPixelFormat, threads: Int32, uri: String, index: Int32) throws -> VideoStreamInfo {
        guard let size = ContainerValue.pictureSize(width: width, height: height) else {
            throw MediaError(uri: uri, call: "stream \(index)",
                             reason: "picture size \(width)x\(height) is out of range (1 to \(ContainerValue.maxPictureSide) a side)")
        }
        let rate = av_guess_frame_rate(fmt, stream, nil)
        let duration = ContainerValue.duration(of: stream, in: fmt)
        // Pictures come through FFmpeg's image demuxers ("image2", "png_pipe", "jpeg_pipe", ...).
        let demuxer = String(cString: fmt.pointee.iformat.pointee.name)
        return VideoStreamInfo(width: size.width, height: size.height, codec: String(cString: decoder.pointee.name),
                               pixelFormat: av_get_pix_fmt_name(pixelFormat).map { String(cString: $0) } ?? "unknown",
                               frameRate: ContainerValue.framesPerSecond(rate) ?? 0,
                               duration: duration, threads: Int(threads),
                               isStillImage: demuxer == "image2" || demuxer.hasSuffix("_pipe"))
    }

    /// What `path`'s video stream is, from the container and the stream's parameters alone: no
    /// decoder is opened and nothing is decoded (an asset's probe; the item's decode thread opens
    /// the decoder when it plays). Also the stream's display rotation and its colour matrix.
    public static func describe(path: String, limits: MediaIOLimits = .standard) throws
        -> (info: VideoStreamInfo, rotation: Rotation, colorMatrix: ColorMatrix)
    {
        let input = try FileInput(path: path, limits: limits)
        return try withExtendedLifetime(input) { try describe(input.format, path: path) }
    }

    /// `describe(path:)` for a file already open (`fmt`, `path`'s); the caller keeps other
    /// readers of it away.
    static func describe(_ opened: UnsafeMutablePointer<AVFormatContext>, path: String) throws
        -> (info: VideoStreamInfo, rotation: Rotation, colorMatrix: ColorMatrix)
    {
        let (index, decoder) = try findVideoStream(opened, path: path)
        let stream = try checkedStream(opened, index, path: path)
        let parameters = stream.pointee.codecpar.pointee
        let pixelFormat = AVPixelFormat(rawValue: parameters.format)
        let info = try describe(opened, stream, decoder, width: parameters.width, height: parameters.height,
                                pixelFormat: pixelFormat, threads: 0, uri: path, index: index)
        // RGB pictures become BT.709 frames (FrameConverter); Y'CbCr ones keep their own tags.
        let isRGB = av_pix_fmt_desc_get(pixelFormat)
            .map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        return (info, Rotation(degrees: -mq_stream_display_rotation(stream)),
                isRGB ? .bt709 : ColorMatrix(parameters.color_space, height: Int(parameters.height)))
    }
}
