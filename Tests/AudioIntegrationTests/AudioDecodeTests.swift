import Audio
import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import AudioTests

@Suite struct AudioDecodeTests {
    @Test func aSeamlessAACLoopIsSampleContinuousOver100Loops() throws {
        let clip = try ToneClips.aac()
        let decoder = try AudioDecoder(path: clip)
        var frames = 0
        while let buffer = try decoder.nextBuffer() { frames += buffer.frames }
        // The priming samples (1024) and the padding of the last AAC frame are not sound.
        #expect(frames == 48_000, "one pass decodes \(frames) frames")
        guard let (left, corrupt) = try playThrough(Array(repeating: clip, count: 100), label: "loop") else { return }
        #expect(corrupt == 0)
        #expect(abs(left.count - 4_800_000) <= 64, "captured \(left.count) frames for 100 s")
        // Leave out the first and last 10 ms (the tone's own start and end).
        let worst = sineBreak(left, frequency: 1000, rate: 48_000, from: 480, to: left.count - 480)
        print("100 loops of AAC: largest break \(worst.value) at frame \(worst.at) (loop \(worst.at / 48_000))")
        #expect(worst.value < breakLimit, "break of \(worst.value) at frame \(worst.at)")
        for loop in [1, 50, 99] {
            let step = phaseStep(left, at: loop * 48_000, frequency: 1000, rate: 48_000)
            #expect(abs(step.samples) < 0.05 && abs(step.gain - 1) < 0.01, "loop point \(loop): \(step)")
        }
    }

    @Test func theContinuityCheckSeesAACPrimingWhereNothingTrimsIt() throws {
        // ADTS carries no edit list: each pass starts with the encoder's priming, a gap the check must see.
        let clip = try ToneClips.adts()
        guard let (left, _) = try playThrough([clip, clip], label: "adts") else { return }
        let worst = sineBreak(left, frequency: 1000, rate: 48_000, from: 480, to: left.count - 480)
        #expect(worst.value > breakLimit, "largest break \(worst.value): the check would miss a gap")
        #expect(left.count > 2 * 48_000 + 1000, "the priming samples are in the capture: \(left.count) frames")
    }

    @Test func itemsOfDifferentRatesAndLayoutsFollowOnWithoutAGap() throws {
        let a = try ToneClips.flac(rate: 44_100, channels: 1)
        let b = try ToneClips.flac(rate: 48_000, channels: 2)
        let c = try ToneClips.aac(rate: 32_000, channels: 1)
        guard let (left, corrupt) = try playThrough([a, b, c, a, b], label: "mixed") else { return }
        #expect(corrupt == 0)
        // Not a sample more or less than the five seconds (the resampler's delay is drained at the end).
        #expect(abs(left.count - 5 * 48_000) <= 2, "captured \(left.count) frames for 5 s")
        // At each change of format the tone goes on in phase and level: a lost or added sample
        // would step it by a whole sample, a gap by many (measured: under 0.05 samples). The old
        // resampler's flush and the new one's start do leave a deviation over a few samples
        // right at the change (sineBreak up to 0.007 on this 1/8 tone between 32 and 48 kHz).
        for junction in stride(from: 48_000, to: 5 * 48_000, by: 48_000) {
            let step = phaseStep(left, at: junction, frequency: 1000, rate: 48_000)
            print("items of 44.1/48/32 kHz, mono/stereo: at \(junction / 48_000) s the tone steps \(step.samples) samples, level x\(step.gain)")
            #expect(abs(step.samples) < 0.75, "at frame \(junction): a step of \(step.samples) samples")
            #expect(abs(step.gain - 1) < 0.05, "at frame \(junction): level x\(step.gain)")
        }
        // Within each item the tone is unbroken (the first and last 1 ms of each left out).
        for item in 0..<5 {
            let worst = sineBreak(left, frequency: 1000, rate: 48_000, from: item * 48_000 + 48, to: (item + 1) * 48_000 - 48)
            #expect(worst.value < breakLimit, "item \(item + 1): break of \(worst.value) at frame \(worst.at)")
        }
        // No stretch of silence anywhere: a window of 2 ms always holds the tone.
        let quiet = stride(from: 480, to: left.count - 576, by: 96).filter { start in
            left[start..<start + 96].map(abs).max() ?? 0 < 0.02
        }
        #expect(quiet.isEmpty, "silent windows at \(quiet.prefix(5))")
    }

    @Test("with the sync's ratio applied, items of other rates join as cleanly as without it")
    func aJoinKeepsTheResamplersFractionOfASample() throws {
        let a = try ToneClips.aac(rate: 48_000, channels: 1)
        let b = try ToneClips.flac(rate: 44_100, channels: 1)
        for ratio in [1.0, 1.004, 0.9965] {
            guard let (left, _) = try playThrough([a, b, a, b, a], label: "ratio-\(ratio)", ratio: ratio) else { return }
            // Played `ratio` times longer: the tone is lower by as much, and each join that much later.
            let steps = (1..<5).map { k in
                phaseStep(left, at: Int((Double(k) * 48_000 * ratio).rounded()), frequency: 1000 / ratio, rate: 48_000).samples
            }
            print("AAC 48 kHz / FLAC 44.1 kHz joins at ratio \(ratio): steps \(steps.map { $0.formatted(decimals: 3) }) samples")
            // A fraction of a sample dropped at a join steps the tone by up to a whole sample.
            #expect(steps.allSatisfy { abs($0) < 0.1 }, "ratio \(ratio): steps \(steps) samples")
        }
    }

    @Test func buffersCarryTimesThatFollowOnAndMatchThePictures() throws {
        let clip = try ToneClips.withPictures()
        let decoder = try AudioDecoder(path: clip)
        #expect(decoder.info.format.sampleRate == 44_100)
        #expect(decoder.info.codec == "aac")
        #expect(abs(decoder.info.duration.seconds - 2) < 0.05)
        var expected: MediaTime?
        var count = 0
        var last = MediaTime.zero
        while let buffer = try decoder.nextBuffer() {
            if let expected { #expect(buffer.pts == expected) } else { #expect(abs(buffer.pts.seconds) < 0.001, "first pts \(buffer.pts)") }
            expected = buffer.end
            last = buffer.end
            count += 1
        }
        #expect(count > 50)
        #expect(abs(last.seconds - 2) < 0.03, "sound ends at \(last.seconds) s")
        #expect(decoder.discontinuities == 0)
    }

    @Test func soundThatStartsAfterThePicturesIsTimedFromThePictures() throws {
        // The sound starts half a second into the clip (an empty edit in the MP4).
        let clip = try TestMedia.make("av-late-sound.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2", "-itsoffset", "0.5",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.5",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mp4",
        ])
        let video = try VideoDecoder(path: clip)
        let picture = try #require(try video.nextFrame())
        let decoder = try AudioDecoder(path: clip)
        let first = try #require(try decoder.nextBuffer())
        print("late sound: first picture at \(picture.pts.seconds) s, first sample at \(first.pts.seconds) s")
        #expect(abs(picture.pts.seconds) < 0.001)
        // Where ffmpeg puts the sound behind an empty edit it leaves the AAC priming frame in
        // (ffmpeg's own decoding of this file plays it too): the sound starts 0.5 s in, less at
        // most that frame (1024 samples).
        #expect(first.pts.seconds > 0.5 - 1024.0 / 48_000 - 0.001 && first.pts.seconds < 0.501, "first sample at \(first.pts.seconds) s")
    }

    @Test func aSeekStartsAtItsTimeToTheSample() throws {
        let clip = try ToneClips.flac(rate: 48_000, channels: 1)
        let decoder = try AudioDecoder(path: clip)
        for target in [MediaTime(value: 1, timescale: 2), MediaTime(value: 12_345, timescale: 48_000), .zero] {
            try decoder.seek(to: target)
            var samples: [Float] = []
            var first: MediaTime?
            while let buffer = try decoder.nextBuffer() {
                if first == nil { first = buffer.pts }
                samples += buffer.floatSamples
            }
            let start = Int(target.convertScale(48_000).value)
            #expect(first == target, "after a seek to \(target) the first buffer is at \(String(describing: first))")
            #expect(samples.count == 48_000 - start)
            // The samples are the tone's from that point on (lavfi's sine: amplitude 1/8).
            var off = 0.0
            for (k, sample) in samples.enumerated() {
                let phase: Double = 2 * Double.pi * 1000 * Double(start + k) / 48_000
                off = max(off, abs(Double(sample) - 0.125 * sin(phase)))
            }
            #expect(off < 0.001, "after a seek to \(target): \(off) off the tone")
        }
        // Past the end: nothing, and no error.
        try decoder.seek(to: MediaTime(value: 5, timescale: 1))
        #expect(try decoder.nextBuffer() == nil)
    }

    @Test func corruptAudioPacketsAreSkippedAndCounted() throws {
        let clip = try ToneClips.aac(rate: 48_000, channels: 2, frequency: 500)
        var data = try Data(contentsOf: URL(fileURLWithPath: clip))
        // Overwrite some of the sound data in the middle of the file (the index is at its end).
        for fraction in [0.3, 0.45, 0.6] {
            let at = Int(Double(data.count) * fraction)
            data.replaceSubrange(at..<at + 200, with: [UInt8](repeating: 0xA5, count: 200))
        }
        let broken = TestMedia.folder + "/tone-corrupt.m4a"
        try data.write(to: URL(fileURLWithPath: broken))
        let decoder = try AudioDecoder(path: broken)
        var frames = 0
        var end = MediaTime.zero
        while let buffer = try decoder.nextBuffer() {
            frames += buffer.frames
            end = buffer.end
        }
        print("corrupt AAC: \(decoder.corruptPackets) packets skipped, \(frames) of 48000 frames decoded, "
              + "\(decoder.discontinuities) gaps kept, ends at \(end.seconds) s")
        #expect(decoder.corruptPackets > 0)
        #expect(frames > 40_000, "decoded \(frames) frames")
        // The sound after a lost packet keeps its time: the gap stays, the end is where it was.
        #expect(decoder.discontinuities > 0)
        #expect(abs(end.seconds - 1) < 0.001, "ends at \(end.seconds) s")
    }

    @Test func aFileWithoutSoundSaysSo() throws {
        let clip = try TestMedia.clip(seconds: 0.5, fps: 25)
        #expect { try AudioDecoder(path: clip) } throws: { error in
            (error as? MediaError)?.description == "\(clip): av_find_best_stream failed: no audio stream"
        }
        #expect(throws: MediaError.self) { try AudioDecoder(path: TestMedia.folder + "/no-such-file.m4a") }
    }

    @Test func theResamplingRatioPlaysFasterOrSlower() throws {
        let out = PCMFormat(sampleRate: 48_000, channels: 2, encoding: .int16)!
        for ratio in [1.0, 1.002, 0.995] {
            let clip = try ToneClips.flac(rate: 48_000, channels: 2)
            let decoder = try AudioDecoder(path: clip)
            let resampler = AudioResampler(output: out)
            try resampler.setRatio(ratio)
            var frames = 0
            while let buffer = try decoder.nextBuffer() { frames += try resampler.convert(buffer).frames }
            frames += try resampler.drain().frames
            print("ratio \(ratio): 48000 frames in, \(frames) out")
            #expect(abs(Double(frames) - 48_000 * ratio) <= 8, "ratio \(ratio): \(frames) frames")
        }
    }
}
