// Duplicated from Tests/AudioTests/AudioPathTests.swift (the unit target uses them too): the capture
// device and the sine checks of AudioDecodeTests and PlayerAudioTests.
import Audio
import Foundation
import Media
import Playback
import Testing
import TestSupport

/// The sound path without a sound card: ALSA's `file` plugin (over a `null` device), defined in
/// configuration text the test gives `AudioOutput`, writes every frame played into a file.
enum CaptureDevice {
    static let name = "marquee_capture"
    static let format = PCMFormat(sampleRate: 48_000, channels: 2, encoding: .int16)!

    static func definitions(file: String) -> String {
        """
        pcm.\(name) {
            type file
            slave.pcm { type null }
            file "\(file)"
            format "raw"
        }
        """
    }

    /// A capture device writing into a new file, or nil (with the reason printed) where this
    /// ALSA has no `file` plugin.
    static func open(_ label: String, latency: AudioLatency = .standard) throws -> (output: AudioOutput, file: String)? {
        let file = TestMedia.folder + "/capture-\(label)-\(UUID().uuidString).raw"
        do {
            return (try AudioOutput(device: name, format: format, latency: latency, definitions: definitions(file: file)), file)
        } catch let error as AudioError where error.call == "snd_pcm_open" && (error.code == -ENOENT || error.code == -ENXIO) {
            print("skipped: ALSA's file plugin is not available here (\(error))")
            return nil
        }
    }

    /// The captured left channel as floats.
    static func leftChannel(_ file: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        return data.withUnsafeBytes { raw in
            stride(from: 0, to: raw.count - 3, by: 4).map { Float(raw.loadUnaligned(fromByteOffset: $0, as: Int16.self)) / 32768 }
        }
    }
}

/// Where a sampled sine of `frequency` breaks: for any amplitude and phase, x[n+1] - 2cos(w) x[n]
/// + x[n-1] is zero; a gap, a click or a jump in phase makes it large. Returns the largest value
/// and where it is.
func sineBreak(_ x: [Float], frequency: Double, rate: Double, from start: Int = 1, to end: Int? = nil) -> (value: Float, at: Int) {
    let c = Float(2 * cos(2 * Double.pi * frequency / rate))
    var worst: (value: Float, at: Int) = (0, 0)
    for n in max(1, start)..<min(end ?? x.count, x.count) - 1 {
        let d = abs(x[n + 1] - c * x[n] + x[n - 1])
        if d > worst.value { worst = (d, n) }
    }
    return worst
}

/// The tone's phase step at frame `at`, in samples: a sine of `frequency` fitted to 10 ms before
/// and 10 ms after it (2 ms either side left out), and the amplitude after over the amplitude before.
func phaseStep(_ x: [Float], at junction: Int, frequency: Double, rate: Double) -> (samples: Double, gain: Double) {
    let w = 2 * Double.pi * frequency / rate
    func fit(_ range: Range<Int>) -> (phase: Double, amplitude: Double) {
        var ss = 0.0, sc = 0.0, cc = 0.0, xs = 0.0, xc = 0.0
        for n in range {
            let s = sin(w * Double(n)), c = cos(w * Double(n)), v = Double(x[n])
            ss += s * s; sc += s * c; cc += c * c; xs += v * s; xc += v * c
        }
        let det = ss * cc - sc * sc
        let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
        return (atan2(b, a), (a * a + b * b).squareRoot())
    }
    let span = Int(rate / 100), gap = Int(rate / 500)
    let before = fit(max(0, junction - gap - span)..<max(0, junction - gap))
    let after = fit((junction + gap)..<min(x.count, junction + gap + span))
    var step = after.phase - before.phase
    while step > Double.pi { step -= 2 * Double.pi }
    while step < -Double.pi { step += 2 * Double.pi }
    return (step / w, after.amplitude / before.amplitude)
}

/// A sine generated here, as int16 stereo blocks.
func sineBuffers(frequency: Double, seconds: Double, block: Int = 1000) -> [PCMBuffer] {
    let format = CaptureDevice.format
    let total = Int(seconds * Double(format.sampleRate))
    return stride(from: 0, to: total, by: block).map { first in
        var bytes: [UInt8] = []
        for n in first..<min(first + block, total) {
            let v = Int16(0.25 * 32767 * sin(2 * Double.pi * frequency * Double(n) / Double(format.sampleRate)))
            for _ in 0..<2 { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        }
        return PCMBuffer(format: format, bytes: bytes, pts: format.duration(frames: first))!
    }
}

