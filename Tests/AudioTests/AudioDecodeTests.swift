import Audio
import Foundation
import Media
import Playback
import Testing
import TestSupport

/// Clips with a continuous tone: an integer frequency over a whole second ends on a whole period,
/// so a clip looped, or followed by another clip of the same tone at any rate, is one unbroken
/// sine when its encoder delay and padding are honoured.
enum ToneClips {
    /// AAC in MP4 (edit list over the 1024 priming samples).
    static func aac(rate: Int = 48_000, channels: Int = 1, frequency: Int = 1000) throws -> String {
        try TestMedia.make("tone-\(frequency)Hz-\(rate)-\(channels)ch.m4a", [
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(rate):duration=1",
            "-ac", "\(channels)", "-c:a", "aac", "-b:a", "256k", "-f", "mp4",
        ])
    }

    /// The same AAC as a raw ADTS stream: no edit list, so nothing says the priming samples are not sound.
    static func adts(frequency: Int = 1000) throws -> String {
        try TestMedia.make("tone-\(frequency)Hz.aac", [
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=48000:duration=1",
            "-c:a", "aac", "-b:a", "256k", "-f", "adts",
        ])
    }

    /// Losslessly coded (FLAC in Matroska): every sample as generated.
    static func flac(rate: Int, channels: Int, frequency: Int = 1000) throws -> String {
        try TestMedia.make("tone-\(frequency)Hz-\(rate)-\(channels)ch.mkv", [
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(rate):duration=1",
            "-ac", "\(channels)", "-c:a", "flac", "-f", "matroska",
        ])
    }

    /// An H.264 + AAC clip (2 s), for timestamps against the pictures.
    static func withPictures() throws -> String {
        try TestMedia.make("av-clip-2s.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
            "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mp4",
        ])
    }
}

/// Plays `items` in turn (each opened afresh, as a looper does) through one resampler into the
/// capture device; returns the captured left channel and the decoders' corrupt-packet counts.
/// `ratio`: the sync's resampling ratio, held throughout.
func playThrough(_ items: [String], label: String, ratio: Double = 1) throws -> (left: [Float], corrupt: Int)? {
    guard let (output, file) = try CaptureDevice.open(label) else { return nil }
    let resampler = AudioResampler(output: output.format)
    try resampler.setRatio(ratio)
    var corrupt = 0
    for item in items {
        let decoder = try AudioDecoder(path: item)
        while let buffer = try decoder.nextBuffer() {
            let converted = try resampler.convert(buffer)
            if converted.frames > 0 { try output.write(converted) }
        }
        corrupt += decoder.corruptPackets
    }
    let tail = try resampler.drain()
    if tail.frames > 0 { try output.write(tail) }
    try output.drain()
    try output.close()
    return (try CaptureDevice.leftChannel(file), corrupt)
}

/// The largest `sineBreak` of an unbroken tone (amplitude 1/8) after AAC and int16: its
/// noise. A gap (AAC's priming: 1024 samples of near silence) measures about 0.011.
let breakLimit: Float = 0.004

@Suite struct AudioDecodeTests {

    @Test func anUnsupportedCodecNamesTheFileAndFFmpegsReason() throws {
        // A WAV file whose format tag (0x7777) no FFmpeg decoder knows.
        var wav = Data("RIFF".utf8)
        func le32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { wav.append(contentsOf: $0) } }
        func le16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { wav.append(contentsOf: $0) } }
        let payload = [UInt8](repeating: 0x11, count: 8000)
        le32(UInt32(4 + 24 + 8 + payload.count))
        wav.append(contentsOf: Array("WAVEfmt ".utf8))
        le32(16)
        le16(0x7777)  // format tag
        le16(1)  // channels
        le32(8000)  // rate
        le32(8000)  // bytes per second
        le16(1)  // block align
        le16(8)  // bits
        wav.append(contentsOf: Array("data".utf8))
        le32(UInt32(payload.count))
        wav.append(contentsOf: payload)
        let path = TestMedia.folder + "/unknown-codec.wav"
        try wav.write(to: URL(fileURLWithPath: path))
        do {
            _ = try AudioDecoder(path: path)
            Issue.record("opened an audio stream no decoder knows")
        } catch let error as MediaError {
            print("unsupported codec: \(error)")
            #expect(error.uri == path)
            #expect(error.description.contains("no decoder"), "\(error)")
            #expect(error.description.contains("Decoder not found"), "FFmpeg's reason: \(error)")
        }
    }

}
