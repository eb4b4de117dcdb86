import Foundation
import Synchronization
@testable import Media
import Playback
import Testing
import TestSupport

/// One demuxer read by several decoders (`Demuxer`, `PacketCursor`): each gets its stream's
/// packets as if it had the file to itself, whatever the others read or seek.
@Suite struct DemuxerTests {
    /// 2 s of pictures (30 fps, a keyframe a second) and a tone in AAC (priming, an edit list).
    static func clip() throws -> String {
        try TestMedia.make("demuxer-av-2s.mp4", [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=30:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=2",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "30",
            "-c:a", "aac", "-b:a", "128k", "-f", "mp4",
        ])
    }

    static func samples(_ decoder: AudioDecoder, buffers: Int = .max) throws -> [Float] {
        var all: [Float] = []
        var n = 0
        while n < buffers, let buffer = try decoder.nextBuffer() {
            all += buffer.floatSamples
            n += 1
        }
        return all
    }

    /// The sound decoded alone, and decoded while the pictures' decoders of the same demuxer
    /// read ahead, open again from the start (a preroll's hand-over) and seek back (a loop's
    /// primed start): the same samples, to the bit; and the file was opened once.
    @Test func soundIsTheSameWhateverThePicturesDo() throws {
        // A copy of its own: the open count is this test's alone.
        let path = TestMedia.folder + "/demuxer-shared-\(UUID().uuidString).mp4"
        try FileManager.default.copyItem(atPath: try Self.clip(), toPath: path)
        let alone = try Self.samples(AudioDecoder(path: path))
        let opensBefore = FileOpens.of(path)
        let demuxer = try Demuxer(path: path)
        let sound = try AudioDecoder(demuxer: demuxer)
        var pictures: VideoDecoder? = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        var shared: [Float] = []
        var step = 0
        while let buffer = try sound.nextBuffer() {
            shared += buffer.floatSamples
            step += 1
            switch step % 7 {
            case 0: pictures = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())  // a new reader from the start
            case 3: try pictures?.seek(to: MediaTime(seconds: Double(step % 2), preferredTimescale: 90_000))
            default: for _ in 0..<3 { _ = try pictures?.nextFrame() }
            }
        }
        #expect(FileOpens.of(path) == opensBefore + 1)
        #expect(shared.count == alone.count)
        let differing = zip(shared, alone).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(differing == nil, "first difference at sample \(differing?.offset ?? -1) of \(alone.count); refresh seeks \(demuxer.stats)")
        print("demuxer shared by sound and pictures: \(shared.count) samples, \(demuxer.stats)")
    }

    /// A loop's two passes of the sound at once on one demuxer: the end of one pass and the
    /// start of the next, read in turns, are each the file's own samples.
    @Test func twoPassesOfTheSoundReadInTurns() throws {
        let path = try Self.clip()
        let alone = try Self.samples(AudioDecoder(path: path))
        let demuxer = try Demuxer(path: path)
        let first = try AudioDecoder(demuxer: demuxer)
        var a = try Self.samples(first, buffers: 60)
        let second = try AudioDecoder(demuxer: demuxer)
        try second.seek(to: .zero)
        var b: [Float] = []
        var going = (true, true)
        while going.0 || going.1 {
            if going.0 { if let buffer = try first.nextBuffer() { a += buffer.floatSamples } else { going.0 = false } }
            if going.1 { if let buffer = try second.nextBuffer() { b += buffer.floatSamples } else { going.1 = false } }
        }
        for (name, got) in [("first", a), ("second", b)] {
            let differing = zip(got, alone).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(got.count == alone.count, "\(name): \(got.count) samples of \(alone.count)")
            #expect(differing == nil, "\(name): first difference at \(differing?.offset ?? -1); \(demuxer.stats)")
        }
    }

    /// Sound nobody asks for while the pictures are decoded to the end: its queue stops at its
    /// bound (8 packets here), and once asked for it still gets every packet in order (its
    /// cursor comes back by a refresh seek): the samples are the file's.
    @Test func aLaggingStreamStaysWithinItsBoundAndLosesNothing() throws {
        let path = try Self.clip()
        let alone = try Self.samples(AudioDecoder(path: path))
        let demuxer = try Demuxer(path: path, limit: .init(bytes: 1 << 20, packets: 8))
        let sound = try AudioDecoder(demuxer: demuxer)
        let pictures = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        var frames = 0
        while try pictures.nextFrame() != nil { frames += 1 }
        let lagging = try Self.samples(sound)
        let stats = demuxer.stats
        print("a lagging stream: \(frames) frames, then \(lagging.count) samples; \(stats)")
        #expect(frames == 60)
        #expect(stats.peakQueued <= 8)
        #expect(stats.refreshSeeks >= 1)
        #expect(lagging == alone, "\(lagging.count) samples of \(alone.count)")
    }

    /// Cancelling one decoder (its item run was stopped) ends its reads only: the sound of the
    /// same demuxer reads on to its end, the file's own samples.
    @Test func aCancelledCursorStopsAloneTheOthersReadOn() throws {
        let path = try Self.clip()
        let alone = try Self.samples(AudioDecoder(path: path))
        let demuxer = try Demuxer(path: path)
        let sound = try AudioDecoder(demuxer: demuxer)
        let pictures = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        var samples = try Self.samples(sound, buffers: 10)
        _ = try pictures.nextFrame()
        pictures.canceller()
        let error = try #require(throws: MediaError.self) { try pictures.nextFrame() }
        #expect(error.reason == "cancelled")
        samples += try Self.samples(sound)
        #expect(samples == alone, "\(samples.count) samples of \(alone.count)")
    }

    /// A cancel that lands while the cancelled decoder is reading (an audio output giving its
    /// device up mid-item) stops that read only: the other decoder's seek back is not stopped
    /// too, and its file ends as the end, not as "Immediate exit requested" (the item's last
    /// frame). `stopsTheRead`: the read under way sees the cancel (and fails), or ends first.
    @Test(arguments: ["mkv", "mp4"], [false, true])
    func aCancelDuringAReadLeavesTheOthersReadingToTheEnd(container: String, stopsTheRead: Bool) throws {
        // Noise: large enough for many reads past FFmpeg's buffer (64 KB).
        let path = try TestMedia.make("demuxer-av-2s-noise.\(container)", [
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=2,noise=alls=40:allf=t",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=2",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "30",
        ] + (container == "mkv" ? ["-c:a", "flac", "-f", "matroska"] : ["-c:a", "aac", "-f", "mp4"]))
        let alone = try Self.samples(AudioDecoder(path: path))
        // The file's reads call this: once armed, the first read cancels the decoder that is reading.
        let armed = Mutex<(@Sendable () -> Void)?>(nil)
        let demuxer = try Demuxer(path: path, limits: .standard, interrupt: {
            armed.withLock { cancel in
                guard let cancelling = cancel else { return false }
                cancelling()
                cancel = nil
                return stopsTheRead
            }
        })
        let sound = try AudioDecoder(demuxer: demuxer)
        let pictures = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        var samples = try Self.samples(sound, buffers: 10)
        armed.withLock { $0 = pictures.canceller }
        var frames = 0, failed = false
        while !failed && frames < 200 && armed.withLock({ $0 != nil }) {
            do { if try pictures.nextFrame() == nil { break } } catch { failed = true }
            frames += 1
        }
        #expect(armed.withLock { $0 == nil }, "no read of the pictures' came in \(frames) frames")
        #expect(throws: MediaError.self) { try pictures.nextFrame() }
        samples += try Self.samples(sound)
        #expect(samples == alone, "\(samples.count) samples of \(alone.count); \(demuxer.stats)")
    }

    /// MPEG-TS with B-frames (timestamps start at 1.4 s, decode times before them): a second
    /// reader that comes after the first has read, and the first sent back to the start, each
    /// decode every picture from the first (a timestamp seek to the start landed past it: the
    /// second reader found no picture at all).
    @Test func aTransportStreamComesBackToItsFirstPicture() throws {
        let path = try TestMedia.make("demuxer-bframes-50.ts", [
            "-f", "lavfi", "-i", "testsrc=size=64x64:rate=50", "-frames:v", "15",
            "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "50", "-pix_fmt", "yuv420p", "-f", "mpegts",
        ])
        func times(_ decoder: VideoDecoder, _ limit: Int = .max) throws -> [Double] {
            var all: [Double] = []
            while all.count < limit, let frame = try decoder.nextFrame() {
                all.append(frame.pts.seconds)
            }
            return all
        }
        let alone = try times(VideoDecoder(path: path, threads: 1))
        #expect(alone.count == 15)
        let demuxer = try Demuxer(path: path)
        let first = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        let head = try times(first, 5)
        let second = try VideoDecoder(demuxer: demuxer, threads: 1, sessions: FFmpegCodecSessions())
        #expect(try times(second) == alone, "\(demuxer.stats)")
        try first.seek(to: .zero)
        #expect(head + (try times(first)) == Array(alone.prefix(5)) + alone, "\(demuxer.stats)")
    }
}
