import CALSA
import Foundation
import Playback

/// The period and buffer asked of the device. The defaults (10 ms periods, 60 ms buffer: six
/// periods) keep the output latency low while a writer that is held up for up to 50 ms does not
/// underrun; the latency itself is measured (`AudioOutput.delay`) and corrected for, so a
/// device that grants larger sizes only costs responsiveness, not sync.
public struct AudioLatency: Sendable, Hashable {
    /// Seconds per period (the device wakes the writer once per period).
    public var period: Double
    /// Seconds of sound the device buffer holds.
    public var buffer: Double

    public init(period: Double = 0.010, buffer: Double = 0.060) {
        self.period = period
        self.buffer = buffer
    }

    public static let standard = AudioLatency()
}

/// One ALSA playback device (`snd_pcm_t`), opened non-blocking: interleaved samples in, the
/// output latency out. It owns the handle and closes it (`close()` or when it goes); it is used
/// from one thread at a time (the audio thread).
///
/// Every wait is bounded: a write waits for room at most `writeTimeout` (`snd_pcm_wait`), a
/// drain at most the sound it holds plus one second. An underrun (EPIPE) is recovered by
/// preparing the device again, a suspend (ESTRPIPE) by resuming it (or preparing it when it
/// cannot resume); both are counted and the write goes on.
public final class AudioOutput {
    /// The device name as given.
    public let device: String
    /// The format the device accepted: what `write` takes.
    public let format: PCMFormat
    /// Frames per period and in the whole buffer, as the device granted them.
    public let periodFrames: Int
    public let bufferFrames: Int
    /// How long a write waits for room in the device buffer before it fails.
    public var writeTimeout: Double = 1
    /// Underruns (the device ran out of samples) and suspends recovered so far.
    public private(set) var underruns = 0
    public private(set) var suspends = 0
    /// Frames written so far.
    public private(set) var framesWritten = 0

    private var pcm: OpaquePointer?
    /// Set by `interrupter`: drains and resumes stop waiting.
    private let closing = Latch<Void>()
    /// The configuration the device was opened from, when it was given as text; freed after the
    /// device is closed.
    private var config: OpaquePointer?

    /// Opens playback device `device` (an ALSA name: `default`, `hw:0,3`, `hdmi:CARD=PCH,DEV=0`,
    /// ...) for `format` (a device that cannot take it gets the nearest rate and channel count
    /// and the first encoding it takes of float32, int32, int16: `format` says what was granted).
    /// - Parameter definitions: ALSA configuration text to open `device` from instead of the
    ///   system's (e.g. `pcm.capture { type file ... }`); nil: the system's configuration.
    /// Throws an `AudioError` naming the device, the call and ALSA's reason.
    public init(device: String, format wanted: PCMFormat, latency: AudioLatency = .standard, definitions: String? = nil) throws {
        self.device = device
        var handle: OpaquePointer?
        var top: OpaquePointer?
        if let definitions {
            let loaded = definitions.withCString { snd_config_load_string(&top, $0, definitions.utf8.count) }
            guard loaded >= 0, top != nil else { throw AudioError(device: device, call: "snd_config_load_string", alsa: loaded) }
            let r = snd_pcm_open_lconf(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK, top)
            guard r >= 0, handle != nil else {
                snd_config_delete(top)
                throw AudioError(device: device, call: "snd_pcm_open", alsa: r)
            }
        } else {
            let r = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
            guard r >= 0, handle != nil else { throw AudioError(device: device, call: "snd_pcm_open", alsa: r) }
        }
        guard let handle else { throw AudioError(device: device, call: "snd_pcm_open", code: -ENODEV, reason: "no handle") }
        let granted: (format: PCMFormat, period: Int, buffer: Int)
        do {
            granted = try Self.configure(handle, device: device, wanted: wanted, latency: latency)
        } catch {
            snd_pcm_close(handle)
            if let top { snd_config_delete(top) }
            throw error
        }
        pcm = handle
        config = top
        format = granted.format
        periodFrames = granted.period
        bufferFrames = granted.buffer
    }

    deinit {
        if let pcm { snd_pcm_close(pcm) }
        if let config { snd_config_delete(config) }
    }

    /// Sets the hardware and software parameters; returns what the device granted.
    private static func configure(_ pcm: OpaquePointer, device: String, wanted: PCMFormat, latency: AudioLatency) throws
        -> (format: PCMFormat, period: Int, buffer: Int)
    {
        func check(_ call: String, _ r: Int32) throws {
            if r < 0 { throw AudioError(device: device, call: call, alsa: r) }
        }
        var hw: OpaquePointer?
        try check("snd_pcm_hw_params_malloc", snd_pcm_hw_params_malloc(&hw))
        defer { snd_pcm_hw_params_free(hw) }
        try check("snd_pcm_hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try check("snd_pcm_hw_params_set_access", snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED))
        let order: [SampleEncoding] = [wanted.encoding] + [.float32, .int32, .int16].filter { $0 != wanted.encoding }
        guard let encoding = order.first(where: { snd_pcm_hw_params_test_format(pcm, hw, alsaFormat($0)) == 0 }) else {
            throw AudioError(device: device, call: "snd_pcm_hw_params_set_format", code: -EINVAL,
                             reason: "the device takes none of float32, int32 or int16 samples")
        }
        try check("snd_pcm_hw_params_set_format", snd_pcm_hw_params_set_format(pcm, hw, alsaFormat(encoding)))
        var channels = UInt32(wanted.channels)
        try check("snd_pcm_hw_params_set_channels_near", snd_pcm_hw_params_set_channels_near(pcm, hw, &channels))
        var rate = UInt32(wanted.sampleRate)
        var direction: Int32 = 0
        try check("snd_pcm_hw_params_set_rate_near", snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction))
        var bufferTime = microseconds(latency.buffer, default: 60_000)
        var periodTime = min(microseconds(latency.period, default: 10_000), bufferTime / 2)
        direction = 0
        try check("snd_pcm_hw_params_set_buffer_time_near", snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &bufferTime, &direction))
        direction = 0
        try check("snd_pcm_hw_params_set_period_time_near", snd_pcm_hw_params_set_period_time_near(pcm, hw, &periodTime, &direction))
        try check("snd_pcm_hw_params", snd_pcm_hw_params(pcm, hw))

        var periodSize: snd_pcm_uframes_t = 0
        var bufferSize: snd_pcm_uframes_t = 0
        direction = 0
        try check("snd_pcm_hw_params_get_period_size", snd_pcm_hw_params_get_period_size(hw, &periodSize, &direction))
        try check("snd_pcm_hw_params_get_buffer_size", snd_pcm_hw_params_get_buffer_size(hw, &bufferSize))
        guard periodSize > 0, bufferSize >= periodSize, bufferSize < 1 << 30,
              let granted = PCMFormat(sampleRate: Int(rate), channels: Int(channels),
                                      channelMask: Int(channels) == wanted.channels ? wanted.channelMask : 0, encoding: encoding)
        else {
            throw AudioError(device: device, call: "snd_pcm_hw_params", code: -EINVAL,
                             reason: "the device granted \(rate) Hz, \(channels) channels, period \(periodSize), buffer \(bufferSize) frames")
        }

        var sw: OpaquePointer?
        try check("snd_pcm_sw_params_malloc", snd_pcm_sw_params_malloc(&sw))
        defer { snd_pcm_sw_params_free(sw) }
        try check("snd_pcm_sw_params_current", snd_pcm_sw_params_current(pcm, sw))
        // Start once the buffer is all but full; wake the writer when a period is free.
        try check("snd_pcm_sw_params_set_start_threshold",
                  snd_pcm_sw_params_set_start_threshold(pcm, sw, bufferSize - periodSize))
        try check("snd_pcm_sw_params_set_avail_min", snd_pcm_sw_params_set_avail_min(pcm, sw, periodSize))
        try check("snd_pcm_sw_params", snd_pcm_sw_params(pcm, sw))
        try check("snd_pcm_prepare", snd_pcm_prepare(pcm))
        return (granted, Int(periodSize), Int(bufferSize))
    }

    private static func microseconds(_ seconds: Double, default fallback: UInt32) -> UInt32 {
        guard seconds.isFinite, seconds >= 0.001, seconds <= 10 else { return fallback }
        return UInt32((seconds * 1_000_000).rounded())
    }

    private static func alsaFormat(_ encoding: SampleEncoding) -> snd_pcm_format_t {
        #if _endian(big)
        switch encoding {
        case .int16: SND_PCM_FORMAT_S16_BE
        case .int32: SND_PCM_FORMAT_S32_BE
        case .float32: SND_PCM_FORMAT_FLOAT_BE
        }
        #else
        switch encoding {
        case .int16: SND_PCM_FORMAT_S16_LE
        case .int32: SND_PCM_FORMAT_S32_LE
        case .float32: SND_PCM_FORMAT_FLOAT_LE
        }
        #endif
    }

    private func open() throws -> OpaquePointer {
        guard let pcm else { throw AudioError(device: device, call: "write", code: -EBADFD, reason: "the device is closed") }
        return pcm
    }

    /// Writes every frame of `buffer` (which must be in `format`), waiting for room as the device
    /// plays; the device starts playing once its buffer is nearly full. Recovers underruns and
    /// suspends (counted) and goes on. Throws when the device fails otherwise, or when it makes no
    /// room for `writeTimeout` seconds.
    public func write(_ buffer: PCMBuffer) throws {
        let pcm = try open()
        guard buffer.format.sampleRate == format.sampleRate, buffer.format.channels == format.channels,
              buffer.format.encoding == format.encoding else {
            throw AudioError(device: device, call: "write", code: -EINVAL,
                             reason: "samples in \(buffer.format), the device takes \(format)")
        }
        let timeout = writeTimeout.isFinite && writeTimeout > 0 ? Int32(min(writeTimeout, 60) * 1000) : 1000
        var calls = DeviceCalls(pcm: pcm, closing: closing)
        var counters = WriteCounters(framesWritten: framesWritten, underruns: underruns, suspends: suspends)
        defer {
            framesWritten = counters.framesWritten
            underruns = counters.underruns
            suspends = counters.suspends
        }
        try buffer.bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            try writeAll(base, frames: buffer.frames, frameBytes: format.bytesPerFrame, calls: &calls, counters: &counters,
                         timeoutMilliseconds: timeout, device: device)
        }
    }

    /// Ends a drain, or a suspended device's retries, in progress and later ones at once (they
    /// drop what the device holds); callable from any thread, for stopping.
    public var interrupter: @Sendable () -> Void {
        let closing = closing
        return { closing.set(()) }
    }

    /// Frames written to the device and not yet heard: the output latency of the next sample
    /// written (`snd_pcm_delay`). 0 when the device is not playing (prepared, or after an underrun).
    public func delayFrames() throws -> Int {
        let pcm = try open()
        var frames: snd_pcm_sframes_t = 0
        let r = snd_pcm_delay(pcm, &frames)
        if r == -EPIPE || r == -ESTRPIPE { return 0 }  // the next write recovers and counts it
        if r < 0 { throw AudioError(device: device, call: "snd_pcm_delay", alsa: r) }
        return max(0, frames)
    }

    /// `delayFrames()` in seconds.
    public func delay() throws -> Double {
        Double(try delayFrames()) / Double(format.sampleRate)
    }

    /// Plays what the device holds to its end, then stops: waits at most the sound it holds plus
    /// one second; past that it drops the rest and throws.
    public func drain() throws {
        let pcm = try open()
        let state = snd_pcm_state(pcm)
        if state == SND_PCM_STATE_PREPARED && framesWritten > 0 {
            // Less than the start threshold was written: start it so that it plays out.
            let r = snd_pcm_start(pcm)
            if r < 0 { throw AudioError(device: device, call: "snd_pcm_start", alsa: r) }
        }
        let limit = Double(bufferFrames) / Double(format.sampleRate) + 1
        var r = snd_pcm_drain(pcm)
        if r == -EAGAIN {
            // Non-blocking: the drain goes on in the device, which gives no event for its end
            // (its poll answers at once while draining): look at its state every 10 ms, for at
            // most `limit`, or until `interrupter` is called.
            var finished = false
            let interrupted = closing.wait(timeout: limit, slice: 0.01) {
                let now = snd_pcm_state(pcm)
                finished = now != SND_PCM_STATE_DRAINING && now != SND_PCM_STATE_RUNNING
                return finished
            } != nil
            if interrupted || !finished {
                snd_pcm_drop(pcm)
                if !interrupted {
                    throw AudioError(device: device, call: "snd_pcm_drain", code: -ETIMEDOUT,
                                     reason: "timed out: the device did not finish playing in \(limit) s")
                }
            }
            r = 0
        }
        if r < 0 && r != -EPIPE && r != -EBADFD { throw AudioError(device: device, call: "snd_pcm_drain", alsa: r) }
        let prepared = snd_pcm_prepare(pcm)
        if prepared < 0 { throw AudioError(device: device, call: "snd_pcm_prepare", alsa: prepared) }
    }

    /// Stops at once, dropping what the device holds (a seek, an item change that re-aligns).
    public func drop() throws {
        let pcm = try open()
        let r = snd_pcm_drop(pcm)
        if r < 0 { throw AudioError(device: device, call: "snd_pcm_drop", alsa: r) }
        let prepared = snd_pcm_prepare(pcm)
        if prepared < 0 { throw AudioError(device: device, call: "snd_pcm_prepare", alsa: prepared) }
    }

    /// False for a device that takes samples as fast as they come instead of playing them in
    /// time: ALSA's `null` plugin, and its `file` plugin (usually over `null`).
    public var keepsTime: Bool {
        guard let pcm else { return true }
        let type = snd_pcm_type(pcm)
        return type != SND_PCM_TYPE_NULL && type != SND_PCM_TYPE_FILE
    }

    /// Closes the device (without playing what it holds: `drain()` first for that). Further
    /// calls throw; closing twice does nothing.
    public func close() throws {
        guard let pcm else { return }
        self.pcm = nil
        let r = snd_pcm_close(pcm)
        if let config {
            snd_config_delete(config)
            self.config = nil
        }
        if r < 0 { throw AudioError(device: device, call: "snd_pcm_close", alsa: r) }
    }
}
