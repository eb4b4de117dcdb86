import CFFmpeg
import CShim
import Playback

/// Converts PCM audio to one output format (the sound device's rate, channel layout and sample
/// encoding) with libswresample, and plays it a little faster or slower on request (`ratio`,
/// `swr_set_compensation`: what keeps sound locked to the display clock).
///
/// It lives as long as the sound output, across items: consecutive buffers of the same input
/// format go through one resampler, so a loop or an item change between files of one format is
/// sample-continuous; a buffer in another format (an item of another rate or layout) first
/// flushes what the old conversion still holds (returned ahead of the new samples) and then
/// starts a new one. Owns its `SwrContext`; used from one thread at a time.
public final class AudioResampler {
    public let output: PCMFormat
    /// The input format of the conversion in use; nil before the first buffer.
    public private(set) var input: PCMFormat?
    private var context: OpaquePointer?
    /// Output frames per input frame on top of the rate conversion (1: none). Clamped to
    /// 0.9...1.1; `AudioClockSync` asks for at most ±0.5 %.
    public private(set) var ratio = 1.0
    /// The distance over which a compensation is spread: ten seconds of output, so that the
    /// ratio's step is 1/(10 * rate) (2 ppm at 48 kHz; a one-second distance would give 21).
    private var compensationDistance: Int32 { Int32(output.sampleRate * 10) }

    public init(output: PCMFormat) {
        self.output = output
    }

    deinit { swr_free(&context) }

    /// Sets the resampling ratio (output frames per input frame); takes effect from the next
    /// samples. A value that is not finite is ignored.
    public func setRatio(_ newRatio: Double) throws {
        guard newRatio.isFinite else { return }
        ratio = min(max(newRatio, 0.9), 1.1)
        if let context { try applyCompensation(context) }
    }

    private func applyCompensation(_ context: OpaquePointer) throws {
        let distance = compensationDistance
        let delta = Int32(((ratio - 1) * Double(distance)).rounded())
        let r = swr_set_compensation(context, delta, delta == 0 ? 0 : distance)
        guard r >= 0 else { throw MediaError(uri: "audio output", call: "swr_set_compensation", averror: r) }
    }

    /// `buffer` in the output format (with `ratio` applied). Its `pts` is the input time of its
    /// first sample (the resampler's own delay taken off). May hold no frames while the resampler
    /// fills its filter.
    public func convert(_ buffer: PCMBuffer) throws -> PCMBuffer {
        var flushed: [UInt8] = []
        if buffer.format != input {
            if context != nil { flushed = try drain().bytes }
            try start(for: buffer.format)
        }
        guard let context else { throw MediaError(uri: "audio output", call: "swr_init", reason: "no resampler") }
        var converted = try run(context, buffer.bytes, frames: buffer.frames)
        let delaySeconds = Double(swr_get_delay(context, Int64(output.sampleRate))) / Double(output.sampleRate)
        let outFrames = (flushed.count + converted.count) / output.bytesPerFrame
        let start = buffer.end.seconds - delaySeconds - Double(outFrames) / Double(output.sampleRate)
        if !flushed.isEmpty { converted = flushed + converted }
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
        if let context { bytes = try run(context, [], frames: 0) }
        swr_free(&context)
        input = nil
        return PCMBuffer(format: output, bytes: bytes, pts: .zero)
            ?? PCMBuffer(format: output, bytes: [], pts: .zero)!
    }

    private func start(for format: PCMFormat) throws {
        var inLayout = AVChannelLayout.make(format)
        var outLayout = AVChannelLayout.make(output)
        defer {
            av_channel_layout_uninit(&inLayout)
            av_channel_layout_uninit(&outLayout)
        }
        var made: OpaquePointer?
        var r = swr_alloc_set_opts2(&made, &outLayout, output.encoding.sampleFormat, Int32(output.sampleRate),
                                    &inLayout, format.encoding.sampleFormat, Int32(format.sampleRate), 0, nil)
        guard r >= 0, let made else { throw MediaError(uri: "audio output", call: "swr_alloc_set_opts2", averror: r) }
        // Always through the resampler, so that a compensation can start at any time without
        // initialising it again (which would lose the samples it holds).
        av_opt_set_int(UnsafeMutableRawPointer(made), "flags", Int64(SWR_FLAG_RESAMPLE), 0)
        r = swr_init(made)
        guard r >= 0 else {
            var failed: OpaquePointer? = made
            swr_free(&failed)
            throw MediaError(uri: "audio output", call: "swr_init (\(format) to \(output))", averror: r)
        }
        context = made
        input = format
        try applyCompensation(made)
    }

    /// Converts `frames` frames (none: flush) and returns the output bytes.
    private func run(_ context: OpaquePointer, _ bytes: [UInt8], frames: Int) throws -> [UInt8] {
        let room = Int(swr_get_out_samples(context, Int32(clamping: frames)))
        // Room for the compensation's extra samples as well.
        let capacity = max(0, room) + 64 + frames / 50
        var out = [UInt8](repeating: 0, count: capacity * output.bytesPerFrame)
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
        out.removeSubrange((Int(produced) * output.bytesPerFrame)...)
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
