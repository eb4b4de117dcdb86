import Foundation
import Playback
import Synchronization

/// A sound device as the player's audio path drives it: interleaved samples in its `format`,
/// written from one thread (the audio thread), and the latency of what it holds. The ALSA output
/// (module Audio) implements it; `VirtualAudioSink` plays on a virtual clock for tests.
public protocol AudioSink: AnyObject {
    /// The device's name (`default`, `hdmi:CARD=PCH,DEV=0`, ...): mpv's `audio-device`.
    var name: String { get }
    /// The format the device takes: what `write` is given.
    var format: PCMFormat { get }
    /// Writes every frame of `buffer`, waiting (bounded) while the device has no room. Throws when
    /// the device fails.
    func write(_ buffer: PCMBuffer) throws
    /// Seconds until a sample written now is heard (what the device still holds: ALSA's delay).
    func delay() throws -> Double
    /// Drops what the device holds, at once (a seek, a pause): the next write starts afresh.
    func drop() throws
    /// Underruns (the device ran out of samples while playing) so far.
    var underruns: Int { get }
}

/// Converts decoded audio (any rate and layout, float32) to a sink's format, a little faster or
/// slower on request: Media's `AudioResampler` (libswresample).
public protocol AudioConverter: AnyObject {
    /// `buffer` in the sink's format; its `pts` is the input time of its first sample.
    func convert(_ buffer: PCMBuffer) throws -> PCMBuffer
    /// Output frames per input frame on top of the rate conversion (1: none).
    func setRatio(_ ratio: Double) throws
}

/// A sound device on a virtual clock, for tests and tools that drive time by hand: it starts
/// playing once it holds `startThreshold` seconds (at the first write by default; ALSA's start
/// threshold, before which its delay reads 0), plays `rate * speed` frames per second of the
/// time it is told (`advance(to:)`), keeps every frame it played (`captured`, silence where it
/// ran dry: an underrun) and never blocks. `speed` other than 1 is a device whose clock runs
/// fast or slow against the display's; `shortAfterStart` makes its delay read `seconds` short
/// for `during` seconds after it starts (as snd-aloop's did in the guest).
public final class VirtualAudioSink: AudioSink, @unchecked Sendable {
    // @unchecked: all state is in `state`.
    public let name: String
    public let format: PCMFormat
    public let speed: Double
    /// Seconds of sound it must hold before it starts playing; its delay reads 0 until then.
    public let startThreshold: Double
    public let shortAfterStart: (seconds: Double, during: Double)

    private struct State {
        var queued: [UInt8] = []
        var captured: [UInt8] = []
        var now = 0.0
        /// Device time when playing began (the first write), and frames played since.
        var started: Double?
        var played = 0
        var underruns = 0
        /// Dropped: it plays silence, not counted as underruns, until the next write.
        var idle = false
    }
    private let state = Mutex(State())

    public init(format: PCMFormat, speed: Double = 1, startThreshold: Double = 0,
                shortAfterStart: (seconds: Double, during: Double) = (0, 0), name: String = "virtual") {
        self.format = format
        self.speed = speed.isFinite && speed > 0.5 && speed < 2 ? speed : 1
        self.startThreshold = startThreshold.isFinite ? min(max(startThreshold, 0), 10) : 0
        self.shortAfterStart = shortAfterStart.seconds.isFinite && shortAfterStart.during.isFinite ? shortAfterStart : (0, 0)
        self.name = name
    }

    public func write(_ buffer: PCMBuffer) throws {
        guard buffer.format == format else {
            throw AudioPathError(device: name, reason: "samples in \(buffer.format), the device takes \(format)")
        }
        state.withLock { s in
            s.idle = false
            s.queued.append(contentsOf: buffer.bytes)
            if s.started == nil, Double(s.queued.count / format.bytesPerFrame) >= startThreshold * Double(format.sampleRate) {
                s.started = s.now
            }
        }
    }

    public func delay() throws -> Double {
        state.withLock { s in
            guard let started = s.started else { return 0 }
            let held = Double(s.queued.count / format.bytesPerFrame) / (Double(format.sampleRate) * speed)
            return s.now - started < shortAfterStart.during ? max(0, held - shortAfterStart.seconds) : held
        }
    }

    public func drop() throws {
        state.withLock { s in
            // What it held is not played; silence until the next write (the capture's frames stay
            // on one clock).
            s.queued.removeAll()
            s.idle = true
        }
    }

    public var underruns: Int { state.withLock { $0.underruns } }

    /// Device time it started playing (nil before it).
    public var startTime: Double? { state.withLock { $0.started } }

    /// Device time `seconds` has come: what was due by then is played (silence and an underrun
    /// where nothing was queued).
    public func advance(to seconds: Double) {
        state.withLock { s in
            guard seconds.isFinite, seconds > s.now else { return }
            s.now = seconds
            guard let started = s.started else { return }
            let due = Int(((seconds - started) * Double(format.sampleRate) * speed).rounded(.down))
            let frames = due - s.played
            guard frames > 0 else { return }
            let bytes = frames * format.bytesPerFrame
            if s.queued.count >= bytes {
                s.captured.append(contentsOf: s.queued.prefix(bytes))
                s.queued.removeFirst(bytes)
            } else {
                s.captured.append(contentsOf: s.queued)
                s.captured.append(contentsOf: [UInt8](repeating: 0, count: bytes - s.queued.count))
                s.queued.removeAll()
                if !s.idle { s.underruns += 1 }
            }
            s.played = due
        }
    }

    /// Everything played so far, in `format`, from the first write on: frame k was heard at
    /// device time `startTime + k / (rate * speed)`.
    public var captured: PCMBuffer {
        state.withLock { s in PCMBuffer(format: format, bytes: s.captured, pts: .zero)! }
    }
}

/// A failure of the audio path that is not a device's or a decoder's own error.
public struct AudioPathError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let device: String
    public let reason: String
    public init(device: String, reason: String) {
        self.device = device
        self.reason = reason
    }
    public var description: String { "audio device \"\(device)\": \(reason)" }
}
