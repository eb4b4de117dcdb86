import CFFmpeg
import CShim
import Playback

/// Converts PCM audio to one output format (the sound device's rate, channel layout and sample
/// encoding) with libswresample, and plays it a little faster or slower on request (`ratio`,
/// `swr_set_compensation`: what keeps sound locked to the display clock).
///
/// Two stages: the first converts each input format to float32 at the output's rate and layout
/// (none when the input is that already); the second, which plays faster or slower, lives as long
/// as the sound output, across items. An item change starts a new first stage (the old one's
/// tail flushed ahead of the new samples) but never the second, so the fraction of a sample the
/// ratio has built up carries on: a join is as clean as joining the items' own conversions, and
/// a loop of one format is sample-continuous. Owns its `SwrContext`s; used from one thread at a time.
public final class AudioResampler {
    public let output: PCMFormat
    /// The input format of the conversion in use; nil before the first buffer.
    public private(set) var input: PCMFormat?
    /// What the first stage gives: float32 at the output's rate and layout.
    private let intermediate: PCMFormat
    /// The first stage; nil while the input is `intermediate` already.
    private var formatStage: OpaquePointer?
    private var clockStage: OpaquePointer?
    /// Output frames per input frame on top of the rate conversion (1: none). Clamped to
    /// 0.9...1.1; `AudioClockSync` asks for at most ±0.5 %.
    public private(set) var ratio = 1.0
    /// The distance over which a compensation is spread: ten seconds of output, so that the
    /// ratio's step is 1/(10 * rate) (2 ppm at 48 kHz; a one-second distance would give 21).
    private var compensationDistance: Int32 { Int32(output.sampleRate * 10) }

    public init(output: PCMFormat) {
        self.output = output
        intermediate = PCMFormat(sampleRate: output.sampleRate, channels: output.channels, channelMask: output.channelMask,
                                 encoding: .float32)!
    }

    deinit {
        swr_free(&formatStage)
        swr_free(&clockStage)
    }

    /// Sets the resampling ratio (output frames per input frame); takes effect from the next
    /// samples. A value that is not finite is ignored.
    public func setRatio(_ newRatio: Double) throws {
        guard newRatio.isFinite else { return }
        ratio = min(max(newRatio, 0.9), 1.1)
        if let clockStage { try applyCompensation(clockStage) }
    }

    private func applyCompensation(_ context: OpaquePointer) throws {
        let distance = compensationDistance
        let delta = Int32(((ratio - 1) * Double(distance)).rounded())
        let r = swr_set_compensation(context, delta, delta == 0 ? 0 : distance)
        guard r >= 0 else { throw MediaError(uri: "audio output", call: "swr_set_compensation", averror: r) }
    }

    /// `buffer` in the output format (with `ratio` applied). Its `pts` is the input time of its
    /// first sample (the stages' delays taken off). May hold no frames while the resampler
    /// fills its filter.
    public func convert(_ buffer: PCMBuffer) throws -> PCMBuffer {
        var flushed: [UInt8] = []
        if buffer.format != input {
            // The old first stage's tail goes ahead of the new format's samples.
            if let formatStage { flushed = try run(formatStage, [], frames: 0, to: intermediate) }
            swr_free(&formatStage)
            if buffer.format != intermediate {
                formatStage = try Self.make(from: buffer.format, to: intermediate, resampling: false)
            }
            input = buffer.format
        }
        if clockStage == nil {
            let made = try Self.make(from: intermediate, to: output, resampling: true)
            clockStage = made
            try applyCompensation(made)
        }
        let clockStage = clockStage!
        var uniform = buffer.bytes
        if let formatStage { uniform = try run(formatStage, buffer.bytes, frames: buffer.frames, to: intermediate) }
        if !flushed.isEmpty { uniform = flushed + uniform }
        let converted = try run(clockStage, uniform, frames: uniform.count / intermediate.bytesPerFrame, to: output)
        let rate = Int64(output.sampleRate)
        let delay = swr_get_delay(clockStage, rate) + (formatStage.map { swr_get_delay($0, rate) } ?? 0)
        let outFrames = converted.count / output.bytesPerFrame
        let start = buffer.end.seconds - Double(delay + Int64(outFrames)) / Double(output.sampleRate)
        let pts = MediaTime(seconds: start, preferredTimescale: Int32(output.sampleRate))
        guard let result = PCMBuffer(format: output, bytes: converted, pts: pts) else {
            throw MediaError(uri: "audio output", call: "swr_convert", reason: "gave a part of a frame")
        }
        return result
    }

    /// What the conversion still holds, to its end (at the end of the last item); the next
    /// buffer starts a new conversion.
    public func drain() throws -> PCMBuffer {
        var bytes: [UInt8] = []
        if let clockStage {
            var tail: [UInt8] = []
            if let formatStage { tail = try run(formatStage, [], frames: 0, to: intermediate) }
            if !tail.isEmpty { bytes = try run(clockStage, tail, frames: tail.count / intermediate.bytesPerFrame, to: output) }
            bytes += try run(clockStage, [], frames: 0, to: output)
        }
        swr_free(&formatStage)
        swr_free(&clockStage)
        input = nil
        return PCMBuffer(format: output, bytes: bytes, pts: .zero)
            ?? PCMBuffer(format: output, bytes: [], pts: .zero)!
    }

    /// A converter from `format` to `target`; `resampling`: always through the resampler, so that
    /// a compensation can start at any time without initialising it again (which would lose the
    /// samples it holds). The caller owns it.
    private static func make(from format: PCMFormat, to target: PCMFormat, resampling: Bool) throws -> OpaquePointer {
        var inLayout = AVChannelLayout.make(format)
        var outLayout = AVChannelLayout.make(target)
        defer {
            av_channel_layout_uninit(&inLayout)
            av_channel_layout_uninit(&outLayout)
        }
        var made: OpaquePointer?
        var r = swr_alloc_set_opts2(&made, &outLayout, target.encoding.sampleFormat, Int32(target.sampleRate),
                                    &inLayout, format.encoding.sampleFormat, Int32(format.sampleRate), 0, nil)
        guard r >= 0, let made else { throw MediaError(uri: "audio output", call: "swr_alloc_set_opts2", averror: r) }
        if resampling { av_opt_set_int(UnsafeMutableRawPointer(made), "flags", Int64(SWR_FLAG_RESAMPLE), 0) }
        r = swr_init(made)
        guard r >= 0 else {
            var failed: OpaquePointer? = made
            swr_free(&failed)
            throw MediaError(uri: "audio output", call: "swr_init (\(format) to \(target))", averror: r)
        }
        return made
    }

    /// Converts `frames` frames (none: flush) into `target`'s format and returns its bytes.
    private func run(_ context: OpaquePointer, _ bytes: [UInt8], frames: Int, to target: PCMFormat) throws -> [UInt8] {
        let room = Int(swr_get_out_samples(context, Int32(clamping: frames)))
        // Room for the compensation's extra samples as well.
        let capacity = max(0, room) + 64 + frames / 50
        var out = [UInt8](repeating: 0, count: capacity * target.bytesPerFrame)
        let produced: Int32 = out.withUnsafeMutableBytes { outRaw in
            bytes.withUnsafeBytes { inRaw in
                var outPlane: UnsafeMutablePointer<UInt8>? = outRaw.baseAddress?.assumingMemoryBound(to: UInt8.self)
                var inPlane: UnsafePointer<UInt8>? = frames > 0 ? inRaw.baseAddress?.assumingMemoryBound(to: UInt8.self) : nil
                return withUnsafeMutablePointer(to: &outPlane) { outPlanes in
                    withUnsafeMutablePointer(to: &inPlane) { inPlanes in
                        swr_convert(context, outPlanes, Int32(clamping: capacity), frames > 0 ? inPlanes : nil, Int32(clamping: frames))
                    }
                }
            }
        }
        guard produced >= 0 else { throw MediaError(uri: "audio output", call: "swr_convert", averror: produced) }
        out.removeSubrange((Int(produced) * target.bytesPerFrame)...)
        return out
    }
}

extension SampleEncoding {
    /// FFmpeg's interleaved sample format for this encoding.
    var sampleFormat: AVSampleFormat {
        switch self {
        case .int16: AV_SAMPLE_FMT_S16
        case .int32: AV_SAMPLE_FMT_S32
        case .float32: AV_SAMPLE_FMT_FLT
        }
    }
}

extension AVChannelLayout {
    /// The layout of `format`: its mask where it has one, else FFmpeg's default for the count.
    /// The caller uninitialises it.
    static func make(_ format: PCMFormat) -> AVChannelLayout {
        var layout = AVChannelLayout()
        if format.channelMask != 0, av_channel_layout_from_mask(&layout, format.channelMask) == 0,
           layout.nb_channels == Int32(format.channels) {
            return layout
        }
        av_channel_layout_uninit(&layout)
        av_channel_layout_default(&layout, Int32(format.channels))
        return layout
    }

    /// FFmpeg's native channel mask of this layout; 0 when it has none (unspecified or custom order).
    var nativeMask: UInt64 { order == AV_CHANNEL_ORDER_NATIVE ? u.mask : 0 }
}
