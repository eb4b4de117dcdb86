import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// How files are opened: only the `file` protocol, image names taken literally, and no open or
/// read that blocks longer than `MediaIOLimits` (FIFOs stand in for devices and stalled storage).
@Suite struct FileInputTests {
    let unit = MediaTests.FileInputTests()   // its fixtures: makeFIFO, transportStream, writeSlowly

    /// `c%d.png` is a file name, not an image-sequence pattern (`pattern_type none`): it opens as
    /// one still picture.
    @Test func anImageNamedLikeASequencePatternPlaysAsOneStill() throws {
        let path = try TestMedia.make("c%d.png", [
            "-f", "lavfi", "-i", "color=c=red:size=48x32", "-frames:v", "1", "-c:v", "png", "-f", "image2pipe",
        ])
        let (info, _, _) = try VideoDecoder.describe(path: path)
        #expect(info.isStillImage)
        #expect(info.width == 48 && info.height == 32)
        let decoder = try VideoDecoder(path: path, threads: 1)
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.width == 48 && frame.height == 32)
        #expect(try decoder.nextFrame() == nil)
    }

    /// A FIFO nobody writes to fails within the read limit (not never), saying it timed out.
    @Test func aFIFONobodyWritesToFailsWithinTheReadLimit() throws {
        let fifo = try unit.makeFIFO("silent")
        defer { unlink(fifo) }
        let started = Date()
        let error = try #require(throws: MediaError.self) { try VideoDecoder.describe(path: fifo) }
        let elapsed = Date().timeIntervalSince(started)
        #expect(error.reason.contains("timed out"), "\(error)")
        #expect(elapsed >= MediaIOLimits.standard.read - 0.2 && elapsed < MediaIOLimits.standard.read + 2, "failed after \(elapsed) s")
    }

    /// A FIFO that gets the start of a stream and then nothing fails one read limit after its
    /// data stops: while being opened, and (with a shorter limit) while frames are read.
    @Test func aFIFOWhoseDataStopsFailsOneReadLimitLater() throws {
        let clip = try Data(contentsOf: URL(fileURLWithPath: try unit.transportStream()))
        // Opening: a few packets, then silence.
        let fifo = try unit.makeFIFO("stalls-opening")
        defer { unlink(fifo) }
        let writer = unit.writeSlowly(fifo, clip.prefix(1880), holdFor: 9)
        let started = Date()
        let error = try #require(throws: MediaError.self) { try VideoDecoder.describe(path: fifo) }
        let elapsed = Date().timeIntervalSince(started)
        #expect(error.reason.contains("timed out"), "\(error)")
        #expect(elapsed < MediaIOLimits.standard.read + 2, "failed after \(elapsed) s")
        _ = writer.wait(timeout: .now() + 10)

        // Reading frames: half the clip, then silence; the decoder throws once, after one limit.
        let second = try unit.makeFIFO("stalls-reading")
        defer { unlink(second) }
        let limits = MediaIOLimits(open: 10, read: 1.5)
        let secondWriter = unit.writeSlowly(second, clip.prefix(clip.count / 2), holdFor: 8)
        let decoder = try VideoDecoder(path: second, threads: 1, limits: limits)
        var frames = 0
        // All the data written is there at once: the time to the failure is the wait for more.
        let readStarted = Date()
        let failure = try #require(throws: MediaError.self) {
            while try decoder.nextFrame() != nil { frames += 1 }
        }
        let stalled = Date().timeIntervalSince(readStarted)
        #expect(frames > 0)
        #expect(failure.reason.contains("timed out"), "\(failure)")
        #expect(stalled >= 1.3 && stalled < 3.5, "the stalled read failed after \(stalled) s")
        _ = secondWriter.wait(timeout: .now() + 10)
    }

    /// A read waiting on a stalled FIFO ends at once when the decoder is cancelled from another
    /// thread (the item was skipped or stopped), not at the read limit.
    @Test func aCancelEndsABlockedReadAtOnce() throws {
        let clip = try Data(contentsOf: URL(fileURLWithPath: try unit.transportStream()))
        let fifo = try unit.makeFIFO("cancelled")
        defer { unlink(fifo) }
        let writer = unit.writeSlowly(fifo, clip.prefix(clip.count / 2), holdFor: 3)
        let decoder = try VideoDecoder(path: fifo, threads: 1)
        let cancel = decoder.canceller
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { cancel() }
        let started = Date()
        let error = try #require(throws: MediaError.self) { while try decoder.nextFrame() != nil {} }
        let elapsed = Date().timeIntervalSince(started)
        #expect(error.reason == "cancelled", "\(error)")
        // Cancelled at 0.5 s: well before the writer gives up at 3 s or the read limit (5 s)
        // would end it, with room for a busy machine (1.51 s seen in CI, the suite in parallel).
        #expect(elapsed < 2.5, "the cancelled read ended after \(elapsed) s")
        _ = writer.wait(timeout: .now() + 10)
    }

    /// A FIFO whose writer sends a whole stream plays it to the end.
    @Test func aFIFOThatIsWrittenPlaysToItsEnd() throws {
        let clip = try Data(contentsOf: URL(fileURLWithPath: try unit.transportStream()))
        let fifo = try unit.makeFIFO("written")
        defer { unlink(fifo) }
        let writer = unit.writeSlowly(fifo, clip, holdFor: 0)
        let decoder = try VideoDecoder(path: fifo, threads: 1)
        var frames = 0
        while try decoder.nextFrame() != nil { frames += 1 }
        #expect(frames == 50)
        _ = writer.wait(timeout: .now() + 10)
    }

}

/// Frames larger than the output's largest texture are scaled down on the decode thread.
@Suite struct TextureLimitTests {
    @Test func aFrameWiderThanTheLimitIsScaledDownKeepingItsAspect() throws {
        let wide = try TestMedia.make("wide-16400x16.png", [
            "-f", "lavfi", "-i", "color=c=blue:size=16400x16", "-frames:v", "1", "-c:v", "png", "-f", "image2pipe",
        ])
        var output = OutputCapabilities.unconstrained
        output.maxTextureSize = 16384
        let backend = FFmpegBackend(threads: 1, output: output)
        let reader = try backend.openReader(URL(fileURLWithPath: wide))
        let frame = try #require(try reader.nextFrame() as? VideoFrame)
        #expect(frame.width == 16384 && frame.height == 16)
        // Without a limit the frame keeps its size.
        let plain = try FFmpegBackend(threads: 1).openReader(URL(fileURLWithPath: wide))
        let whole = try #require(try plain.nextFrame() as? VideoFrame)
        #expect(whole.width == 16400 && whole.height == 16)
    }

}

/// Files that open but give no frame fail their item with FFmpeg's reason (before: the item
/// ended as if played, without a word).
@Suite struct NoFrameTests {
    @Test func aTruncatedFileFailsWithTheDecodersReason() throws {
        let whole = try TestMedia.make("faststart-96x54-60f.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=96x54:rate=30", "-frames:v", "60", "-g", "10", "-c:v", "libx264",
            "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4",
        ])
        let data = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = TestMedia.folder + "/cut-\(UUID().uuidString).mp4"
        try data.prefix(data.count / 10).write(to: URL(fileURLWithPath: cut))
        let decoder = try VideoDecoder(path: cut, threads: 1)
        let error = try #require(throws: MediaError.self) { while try decoder.nextFrame() != nil {} }
        #expect(error.uri == cut)
        #expect(!error.reason.isEmpty)
    }

}

/// Device nodes named as items fail within the open limit, with a reason.
@Suite struct DeviceNodeTests {
    @Test(arguments: ["/dev/null", "/dev/zero", "/dev/urandom"]) func aDeviceNodeFailsWithinTheOpenLimit(device: String) throws {
        guard FileManager.default.isReadableFile(atPath: device) else { try Test.cancel("\(device) cannot be read here") }
        let started = Date()
        let error = try #require(throws: MediaError.self) { try VideoDecoder.describe(path: device) }
        let elapsed = Date().timeIntervalSince(started)
        #expect(error.uri == device)
        #expect(elapsed < MediaIOLimits.standard.open + 1, "\(device) failed after \(elapsed) s: \(error)")
    }
}
