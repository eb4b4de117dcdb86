import CFFmpeg
import CShim
import Foundation
import Playback

/// What a file's audio stream is, read when it is opened.
public struct AudioStreamInfo: Sendable {
    /// The decoder's name (`aac`, `mp3float`, `opus`, ...).
    public let codec: String
    /// The stream's own rate, channels and layout (samples come as float32 in it).
    public let format: PCMFormat
    /// Length of the stream; indefinite when the container does not say.
    public let duration: MediaTime
}

/// Demuxes and decodes the best audio stream of one file (libavcodec) into interleaved float32
/// `PCMBuffer`s at the stream's own rate and layout (`AudioResampler` converts them for the
/// device). Reads its packets from the item's `Demuxer` (shared with the pictures' decoder) and
/// checks the stream's numbers before using them.
///
/// Encoder delay and padding are FFmpeg's to honour: the demuxer turns MP4 edit lists and MP3's
/// LAME/Xing header into skip-samples side data (start and end), and libavcodec drops those
/// samples (AAC's 1024 priming samples, MP3's decoder delay), so a loop authored to be seamless
/// comes out sample-continuous. Timestamps: each buffer's `pts` is relative to the start of the
/// item's video stream when it has one (so samples line up with `VideoFrame.pts`), else of the
/// audio stream; consecutive buffers follow on sample for sample, unless the file's timestamps
/// say otherwise by more than `gapTolerance` (a gap or overlap in the file: `discontinuities`).
/// A packet that fails to decode is skipped and counted (`corruptPackets`); 16 in a row fail
/// the item. Used from one thread at a time.
public final class AudioDecoder {
    public let uri: String
    public let info: AudioStreamInfo
    /// Packets and frames that failed to decode and were skipped.
    public private(set) var corruptPackets = 0
    /// Times the file's timestamps moved the sound by more than `gapTolerance`.
    public private(set) var discontinuities = 0
    /// How far the file's timestamps may stray from the sample count before they are followed:
    /// above Matroska's 1 ms rounding, below any codec's frame (a lost packet leaves its gap, so
    /// the sound after it stays with its pictures).
    public static let gapTolerance = MediaTime(value: 1, timescale: 200)

    /// Reads this stream's packets from the item's demuxer and runs the decoder on them.
    private let loop: DecodeLoop
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    /// The timestamp (in this stream's time base) that `pts` zero stands for.
    private let origin: Int64
    /// Where the sound ends on the item's timeline when the container states it exactly (an MP4
    /// edit list): the encoder's padding after it is dropped.
    private let end: MediaTime?
    /// Converts decoded frames (any sample format, planar or not) to interleaved float32.
    private var packer: OpaquePointer?
    private var packerFormat: (format: Int32, rate: Int32, layout: PCMFormat)?
    /// The time of the next sample on the item's timeline, once a frame has been seen.
    private var next: MediaTime?
    private var finished = false
    private var consecutiveErrors = 0
    private var delivered = 0
    /// After a seek: samples before this time are decoded and dropped.
    private var skipBefore: MediaTime?
    /// Whether the decoder was positioned (`seek`): a seek past the end may rightly give nothing.
    private var sought = false
    private var lastFailure: MediaError?

    /// Opens `path`'s best audio stream and its decoder. Throws a `MediaError` naming the file
    /// and the reason: no audio stream, no decoder for its codec (FFmpeg's reason), numbers out
    /// of range, a decoder that does not open.
    public convenience init(path: String, limits: MediaIOLimits = .standard) throws {
        try self.init(demuxer: Demuxer(path: path, limits: limits))
    }

    /// Decodes the best audio stream of `demuxer`'s file, read through a cursor of its own.
    init(demuxer: Demuxer) throws {
        let path = demuxer.path
        uri = path
        let opened = try demuxer.withFormat { fmt in try Self.findAudioStream(fmt, path: path) }
        streamIndex = opened.index
        timeBase = opened.timeBase
        origin = opened.origin
        end = opened.end
        let stream = opened.stream
        loop = try DecodeLoop(cursor: PacketCursor(demuxer: demuxer, stream: opened.index), uri: path)
        let decoder = opened.decoder

        guard let context = avcodec_alloc_context3(decoder) else {
            throw MediaError(uri: path, call: "avcodec_alloc_context3", reason: "out of memory")
        }
        codec = context
        var r = avcodec_parameters_to_context(context, stream.pointee.codecpar)
        guard r >= 0 else { throw MediaError(uri: path, call: "avcodec_parameters_to_context", averror: r) }
        context.pointee.pkt_timebase = timeBase  // so that skipped samples move the frame's pts
        r = avcodec_open2(context, decoder, nil)
        guard r >= 0 else {
            throw MediaError(uri: path, call: "avcodec_open2", code: r,
                             reason: "cannot open the \(String(cString: decoder.pointee.name)) decoder: \(ffmpegErrorString(r))")
        }
        guard let frame = av_frame_alloc() else {
            throw MediaError(uri: path, call: "av_frame_alloc", reason: "out of memory")
        }
        self.frame = frame
        info = AudioStreamInfo(codec: String(cString: decoder.pointee.name), format: opened.format, duration: opened.duration)
    }

    /// What opening the audio stream finds in the container.
    private struct Found {
        let index: Int32
        let decoder: UnsafePointer<AVCodec>
        let stream: UnsafeMutablePointer<AVStream>
        let timeBase: AVRational
        let origin: Int64
        let end: MediaTime?
        let format: PCMFormat
        let duration: MediaTime
    }

    /// The best audio stream of `fmt` (`path`'s), its decoder and its numbers, checked.
    private static func findAudioStream(_ fmt: UnsafeMutablePointer<AVFormatContext>, path: String) throws -> Found {
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
        guard index >= 0 else {
            if index == mq_averror_decoder_not_found() {
                let stream = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
                let name = stream >= 0 ? Self.codecName(fmt, stream) : "unknown"
                throw MediaError(uri: path, call: "av_find_best_stream", code: index,
                                 reason: "no decoder for the audio stream's codec (\(name)): \(ffmpegErrorString(index))")
            }
            throw MediaError(uri: path, call: "av_find_best_stream", code: index, reason: "no audio stream")
        }
        guard let decoder, index < fmt.pointee.nb_streams, let stream = fmt.pointee.streams[Int(index)] else {
            throw MediaError(uri: path, call: "av_find_best_stream", code: index,
                             reason: "no decoder for the audio stream's codec (\(Self.codecName(fmt, index)))")
        }
        let timeBase = stream.pointee.time_base
        guard ContainerValue.isUsable(timeBase) else {
            throw MediaError(uri: path, call: "stream \(index)", reason: "time base \(timeBase.num)/\(timeBase.den) is not positive")
        }
        let parameters = stream.pointee.codecpar.pointee
        let channels = Int(parameters.ch_layout.nb_channels)
        guard let format = PCMFormat(sampleRate: Int(parameters.sample_rate), channels: channels,
                                     channelMask: parameters.ch_layout.nativeMask.nonzeroBitCount == channels ? parameters.ch_layout.nativeMask : 0,
                                     encoding: .float32) else {
            throw MediaError(uri: path, call: "stream \(index)",
                             reason: "\(parameters.sample_rate) Hz, \(channels) channels is out of range "
                                 + "(\(PCMFormat.sampleRates.lowerBound) to \(PCMFormat.sampleRates.upperBound) Hz, 1 to \(PCMFormat.maxChannels) channels)")
        }
        // pts zero: the start of the video stream the item's pictures are timed from, when there is one.
        let videoIndex = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        var origin = stream.pointee.start_time == noPTS ? 0 : stream.pointee.start_time
        if videoIndex >= 0, videoIndex < fmt.pointee.nb_streams, let video = fmt.pointee.streams[Int(videoIndex)],
           ContainerValue.isUsable(video.pointee.time_base), video.pointee.start_time != noPTS {
            origin = av_rescale_q(video.pointee.start_time, video.pointee.time_base, timeBase)
        }
        let duration = ContainerValue.duration(of: stream, in: fmt)
        // FFmpeg's MP4 demuxer applies the edit list's start (the priming samples are skipped) but
        // leaves the last frame's padding: the edit list's length, the stream's duration, ends it.
        let demuxer = String(cString: fmt.pointee.iformat.pointee.name)
        let start = stream.pointee.start_time == noPTS ? 0 : stream.pointee.start_time
        var end: MediaTime?
        if demuxer.hasPrefix("mov,"), stream.pointee.duration > 0,
           let last = ContainerValue.sum(start, stream.pointee.duration).flatMap({ ContainerValue.difference($0, origin) }) {
            end = ContainerValue.time(ticks: last, timeBase: timeBase)
        }
        return Found(index: index, decoder: decoder, stream: stream, timeBase: timeBase, origin: origin,
                     end: end, format: format, duration: duration)
    }

    deinit {
        swr_free(&packer)
        av_frame_free(&frame)
        avcodec_free_context(&codec)
    }

    private static func codecName(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ index: Int32) -> String {
        guard index >= 0, index < fmt.pointee.nb_streams, let stream = fmt.pointee.streams[Int(index)] else { return "unknown" }
        let id = stream.pointee.codecpar.pointee.codec_id
        if id == AV_CODEC_ID_NONE {
            return "codec tag 0x\(String(stream.pointee.codecpar.pointee.codec_tag, radix: 16)), unknown to FFmpeg"
        }
        return avcodec_get_name(id).map { String(cString: $0) } ?? "unknown"
    }

    /// Ends the decoder's waits for data from any thread (as `VideoDecoder.canceller`).
    public var canceller: @Sendable () -> Void { loop.cursor.canceller }

    /// Positions the decoder so that the next buffer starts at `time` (relative to the item's
    /// start, as `pts`), to the sample: it seeks to the packet at or before it and drops the
    /// decoded samples before it.
    public func seek(to time: MediaTime) throws {
        guard let codec, time.isNumeric else {
            throw MediaError(uri: uri, call: "av_seek_frame", reason: "cannot seek to \(time)")
        }
        let target = max(time, .zero)
        let ticks = ContainerValue.ticks(seconds: target.seconds, timeBase: timeBase).flatMap { ContainerValue.sum($0, origin) } ?? .max
        // The start is the stream's first packet: its priming samples decode as when it opened.
        if target == .zero { try loop.seekToStart() } else { try loop.seek(to: ticks) }
        avcodec_flush_buffers(codec)
        next = nil
        finished = false
        consecutiveErrors = 0
        sought = true
        skipBefore = target
    }

    /// The next block of samples (one decoded frame), or nil at the end of the stream.
    public func nextBuffer() throws -> PCMBuffer? {
        while let raw = try decodeFrame() {
            defer { av_frame_unref(raw) }
            guard raw.pointee.nb_samples > 0 else { continue }
            let samples = try pack(raw)
            guard samples.frames > 0 else { continue }
            return samples
        }
        return nil
    }

    /// The next decoded frame (owned by the decoder: unref'd by the caller), or nil at the end.
    private func decodeFrame() throws -> UnsafeMutablePointer<AVFrame>? {
        guard let codec, let frame, !finished else { return nil }
        let step = try loop.next(codec: { codec }, receive: { avcodec_receive_frame(codec, frame) }, accept: {
            consecutiveErrors = 0
            delivered += 1
            return true
        }, fail: { call, code in try countError(call: call, code: code) })
        switch step {
        case .frame:
            return frame
        case .end:
            finished = true
            guard delivered > 0 || sought else {
                throw lastFailure ?? MediaError(uri: uri, call: "avcodec_receive_frame", reason: "the audio stream has no decodable frame")
            }
            return nil
        }
    }

    /// A packet that fails is skipped and counted; 16 failures in a row fail the item.
    private func countError(call: String, code: Int32) throws {
        corruptPackets += 1
        consecutiveErrors += 1
        lastFailure = MediaError(uri: uri, call: call, averror: code)
        if consecutiveErrors >= 16 { throw MediaError(uri: uri, call: call, averror: code) }
    }

    /// The frame as interleaved float32 at its own rate and layout, with its time on the item's timeline.
    private func pack(_ raw: UnsafeMutablePointer<AVFrame>) throws -> PCMBuffer {
        let channels = Int(raw.pointee.ch_layout.nb_channels)
        let mask = raw.pointee.ch_layout.nativeMask
        guard let format = PCMFormat(sampleRate: Int(raw.pointee.sample_rate), channels: channels,
                                     channelMask: mask.nonzeroBitCount == channels ? mask : 0, encoding: .float32) else {
            throw MediaError(uri: uri, call: "stream \(streamIndex)",
                             reason: "a frame of \(raw.pointee.sample_rate) Hz, \(channels) channels is out of range")
        }
        if packerFormat.map({ $0.format != raw.pointee.format || $0.rate != raw.pointee.sample_rate || $0.layout != format }) ?? true {
            swr_free(&packer)
            var made: OpaquePointer?
            var layout = AVChannelLayout.make(format)
            var sameLayout = AVChannelLayout.make(format)
            defer {
                av_channel_layout_uninit(&layout)
                av_channel_layout_uninit(&sameLayout)
            }
            var r = swr_alloc_set_opts2(&made, &layout, AV_SAMPLE_FMT_FLT, raw.pointee.sample_rate,
                                        &sameLayout, AVSampleFormat(rawValue: raw.pointee.format), raw.pointee.sample_rate, 0, nil)
            guard r >= 0, let made else { throw MediaError(uri: uri, call: "swr_alloc_set_opts2", averror: r) }
            packer = made
            r = swr_init(made)
            guard r >= 0 else { throw MediaError(uri: uri, call: "swr_init", averror: r) }
            packerFormat = (raw.pointee.format, raw.pointee.sample_rate, format)
        }
        let frames = Int(raw.pointee.nb_samples)
        var bytes = [UInt8](repeating: 0, count: frames * format.bytesPerFrame)
        let converted: Int32 = bytes.withUnsafeMutableBytes { out in
            var plane: UnsafeMutablePointer<UInt8>? = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return withUnsafeMutablePointer(to: &plane) { planes in
                raw.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 1) { input in
                    swr_convert(packer, planes, Int32(frames), input, raw.pointee.nb_samples)
                }
            }
        }
        guard converted >= 0 else { throw MediaError(uri: uri, call: "swr_convert", averror: converted) }
        var kept = Int(converted)
        var pts = timing(of: raw, rate: format.sampleRate)
        if let skip = skipBefore {
            // After a seek: drop what comes before the target.
            let early = (skip - pts).convertScale(Int32(format.sampleRate), rounding: .roundHalfAwayFromZero)
            let drop = early.isNumeric ? min(kept, max(0, Int(clamping: early.value))) : 0
            if drop > 0 {
                bytes.removeSubrange(0..<(drop * format.bytesPerFrame))
                kept -= drop
                pts = pts + format.duration(frames: drop)
            }
            if kept > 0 { skipBefore = nil }
        }
        if let end {
            // Frames from the stated end on are the encoder's padding.
            let room = (end - pts).convertScale(Int32(format.sampleRate), rounding: .roundHalfAwayFromZero)
            if room.isNumeric { kept = min(kept, max(0, Int(clamping: room.value))) }
        }
        bytes.removeSubrange((kept * format.bytesPerFrame)...)
        guard let buffer = PCMBuffer(format: format, bytes: bytes, pts: pts) else {
            throw MediaError(uri: uri, call: "swr_convert", reason: "gave a part of a frame")
        }
        next = buffer.end.convertScale(Int32(format.sampleRate))
        return buffer
    }

    /// The frame's time: where the last one ended, unless the file's timestamp differs from that
    /// by more than `gapTolerance` (then the file's, counted in `discontinuities`).
    private func timing(of raw: UnsafeMutablePointer<AVFrame>, rate: Int) -> MediaTime {
        let stated: MediaTime? = ContainerValue.difference(raw.pointee.best_effort_timestamp, origin)
            .flatMap { raw.pointee.best_effort_timestamp == noPTS ? nil : ContainerValue.time(ticks: $0, timeBase: timeBase) }
            .map { $0.convertScale(Int32(rate)) }
        guard let expected = next else { return stated ?? .zero }
        guard let stated else { return expected }
        let off = stated - expected
        if off > Self.gapTolerance || off < -Self.gapTolerance {
            discontinuities += 1
            return stated
        }
        return expected
    }
}
