import Foundation
import Playback
import Sound
import Synchronization

/// An ALSA device as a player's sound output (`AudioSink`): `AudioOutput` opened by name, and
/// opened again while it is missing or after it failed (at most every `reopenInterval`
/// seconds), so that a device that is absent at start or goes away costs the sound only: every
/// write until it is back throws, the audio path counts it and the picture plays on.
///
/// A device that does not keep time itself (ALSA's `null` and `file` plugins take samples as
/// fast as they come) is paced against the monotonic clock (`pacing`, found by itself): writes wait
/// while more than the buffer is ahead of real time, the delay is what real time has not played
/// yet, and a stretch it ran dry is filled with silence, as a real device plays it.
public final class ALSASink: AudioSink, @unchecked Sendable {
    // @unchecked: used from the audio thread only, except the Atomics (read for status).
    /// `device`: the device's own clock paces writes and says the delay; `realTime`: the
    /// monotonic clock does (for devices that keep no time); `automatic`: `realTime` for ALSA's
    /// `null` and `file` plugins, `device` otherwise.
    public enum Pacing: Sendable { case device, realTime, automatic }

    public let name: String
    public let format: PCMFormat
    private let latency: AudioLatency
    private let definitions: String?
    private var pacing: Pacing
    private let logger: Logger
    private var output: AudioOutput?
    private var lastAttempt: ContinuousClock.Instant?
    /// Seconds between two tries to open a missing device.
    public var reopenInterval = 2.0
    private let underrunCount = Atomic(0)
    private let missing = Atomic(false)
    private var baseUnderruns = 0
    /// Real-time pacing: when the device (re)started and frames written since.
    private var pacedStart: ContinuousClock.Instant?
    private var pacedFrames = 0
    private var pacedUnderruns = 0
    private let pause = Latch<Void>()
    /// The last failure, for status (nil while the device works).
    private let failure = Mutex<String?>(nil)

    /// Opens `device` for `format` (the device may grant another rate or channel count: `format`
    /// says what it took). A device that cannot be opened now is tried again at each write,
    /// every `reopenInterval`: `init` does not throw for it, `isMissing` says so.
    public init(device: String, format wanted: PCMFormat, latency: AudioLatency = .standard, definitions: String? = nil,
                pacing: Pacing = .automatic, logger: Logger) {
        name = device
        self.latency = latency
        self.definitions = definitions
        self.pacing = pacing
        self.logger = logger
        do {
            let opened = try AudioOutput(device: device, format: wanted, latency: latency, definitions: definitions)
            output = opened
            format = opened.format
            if pacing == .automatic { self.pacing = opened.keepsTime ? .device : .realTime }
        } catch {
            format = wanted
            missing.store(true, ordering: .relaxed)
            failure.withLock { $0 = "\(error)" }
            lastAttempt = .now
            logger.error("audio device cannot be opened; the picture plays without sound until it can",
                         ["device": device, "error": "\(error)"])
        }
    }

    /// True while the device is missing (it could not be opened, or failed and is not back).
    public var isMissing: Bool { missing.load(ordering: .relaxed) }
    public var lastFailure: String? { failure.withLock { $0 } }
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// The open device, opened again when it is due.
    private func device() throws -> AudioOutput {
        if let output { return output }
        if let last = lastAttempt, (ContinuousClock.now - last).seconds < reopenInterval {
            throw AudioPathError(device: name, reason: lastFailure ?? "the device is missing")
        }
        lastAttempt = .now
        do {
            let opened = try AudioOutput(device: name, format: format, latency: latency, definitions: definitions)
            guard opened.format == format else {
                throw AudioPathError(device: name, reason: "it came back taking \(opened.format), not \(format)")
            }
            output = opened
            if pacing == .automatic { pacing = opened.keepsTime ? .device : .realTime }
            missing.store(false, ordering: .relaxed)
            failure.withLock { $0 = nil }
            logger.info("audio device open again", ["device": name])
            return opened
        } catch {
            failure.withLock { $0 = "\(error)" }
            throw error
        }
    }

    /// The device failed: closed, and opened again later.
    private func lost(_ error: any Error) {
        if let output {
            baseUnderruns += output.underruns
            try? output.close()
        }
        output = nil
        pacedStart = nil
        lastAttempt = .now
        missing.store(true, ordering: .relaxed)
        failure.withLock { $0 = "\(error)" }
    }

    public func write(_ buffer: PCMBuffer) throws {
        let out = try device()
        do {
            if pacing == .realTime { try fillRanDry(out) }
            try out.write(buffer)
        } catch {
            lost(error)
            throw error
        }
        underrunCount.store(baseUnderruns + out.underruns + pacedUnderruns, ordering: .relaxed)
        guard pacing == .realTime else { return }
        let start = pacedStart ?? .now
        pacedStart = start
        pacedFrames += buffer.frames
        let ahead = Double(pacedFrames) / Double(format.sampleRate) - (ContinuousClock.now - start).seconds
        if ahead > latency.buffer { _ = pause.wait(timeout: ahead - latency.buffer) }
    }

    /// Real time has played all that was written: the device ran dry, as a real one would, and
    /// what it played meanwhile is silence, written now, so that the stream keeps real time's
    /// length (a capture's sample count stays the clock, and sound and pictures in it never drift
    /// apart). A gap of more than `longestFill` (a suspended machine) starts the pacing afresh.
    private func fillRanDry(_ out: AudioOutput) throws {
        guard let start = pacedStart else { return }
        let rate = Double(format.sampleRate)
        let behind = (ContinuousClock.now - start).seconds - Double(pacedFrames) / rate
        guard behind > 0 else { return }
        pacedUnderruns += 1
        guard behind <= Self.longestFill else {
            pacedStart = nil
            pacedFrames = 0
            return
        }
        let frames = Int((behind * rate).rounded(.up))
        // Range-checked above: at most `longestFill` seconds at the device's rate.
        let silence = [UInt8](repeating: 0, count: frames * format.bytesPerFrame)
        if let block = PCMBuffer(format: format, bytes: silence, pts: .zero) { try out.write(block) }
        pacedFrames += frames
    }

    /// The longest stretch a device that keeps no time is filled with silence for.
    static let longestFill = 5.0

    public func delay() throws -> Double {
        guard let output else { return 0 }
        if pacing == .realTime {
            guard let start = pacedStart else { return 0 }
            return max(0, Double(pacedFrames) / Double(format.sampleRate) - (ContinuousClock.now - start).seconds)
        }
        do {
            return try output.delay()
        } catch {
            lost(error)
            throw error
        }
    }

    public func drop() throws {
        pacedStart = nil
        pacedFrames = 0
        guard let output else { return }
        do {
            try output.drop()
        } catch {
            lost(error)
            throw error
        }
    }
}
