import Foundation
@testable import Media
import Playback
import Synchronization
import Testing
import TestSupport
@testable import MediaTests

/// How many threads a software decoder gets: one per core the process may use (FFmpeg's own
/// choice would be one more, each frame thread holding a picture of its own), and one for a
/// preroll's reader, which decodes only an item's first frames while another item plays.
@Suite struct DecoderThreadsTests {
    @Test func aPrerollReaderDecodesOnOneThreadAndAPlaybackReaderOnOnePerCore() throws {
        let clip = try TestMedia.clip(seconds: 0.5, fps: 30, width: 640, height: 360)
        let opened = Mutex<[Int]>([])
        let backend = FFmpegBackend(onOpen: { _, info, _ in opened.withLock { $0.append(info.threads) } })
        let url = URL(fileURLWithPath: clip)
        let preroll = try backend.openPrerollReader(url)
        let playback = try backend.openReader(url)
        let cores = min(ProcessInfo.processInfo.activeProcessorCount, 16)
        #expect(opened.withLock { $0 } == [1, cores])
        // Both give the same frames.
        var times: [[Double]] = [[], []]
        for (i, reader) in [preroll, playback].enumerated() {
            while let frame = try reader.nextFrame() { times[i].append(frame.pts.seconds) }
        }
        #expect(times[0].count == 15 && times[0] == times[1])
    }

    /// With `hwdec` `auto` where no hardware decoder works (here), the preroll reader still falls
    /// back to one thread, and its first picture comes from the first packet alone.
    @Test func aPrerollReaderThatFallsBackToSoftwareDecodesOnOneThread() throws {
        let clip = try TestMedia.clip(seconds: 0.5, fps: 30, width: 640, height: 360)
        let opened = Mutex<[String]>([])
        let backend = FFmpegBackend(hardware: .auto, onOpen: { _, info, path in
            opened.withLock { $0.append("\(path.hwdecCurrent == "no" ? "software" : path.hwdecCurrent) \(info.threads)") }
        })
        let url = URL(fileURLWithPath: clip)
        let preroll = try backend.openPrerollReader(url)
        let playback = try backend.openReader(url)
        let paths = opened.withLock { $0 }
        try #require(paths.count == 2)
        guard paths[0].hasPrefix("software") else { return }  // a working hardware decoder: threads do not apply
        let cores = min(ProcessInfo.processInfo.activeProcessorCount, 16)
        #expect(paths == ["software 1", "software \(cores)"])
        #expect(try preroll.nextFrame()?.pts == .zero)
        #expect(try playback.nextFrame()?.pts == .zero)
    }
}

/// A preroll reader decodes its first picture from the file's first packet alone (one picture
/// buffer, not the three a 1080p H.264 decoder with B-frames fills before its first picture is
/// due), and then gives the rest as any reader does.
@Suite struct FirstPacketAloneTests {
    /// Frame times and a checksum of each frame's luma, from `reader` to its end.
    static func frames(_ reader: any FrameReader) throws -> [String] {
        var out: [String] = []
        while let frame = try reader.nextFrame() as? VideoFrame {
            let sum = frame.withPlanes { planes -> Int in
                let p = planes[0]
                var s = 0
                for y in 0..<p.height {
                    for x in 0..<p.width { s = (s &* 31) &+ Int(p.bytes.load(fromByteOffset: y * p.bytesPerRow + x, as: UInt8.self)) }
                }
                return s
            }
            out.append("\(frame.pts.seconds.formatted(decimals: 4)) \(sum)")
        }
        return out
    }

    static func bFrameClip() throws -> String {
        try TestMedia.make("bframes-160x90-30fps.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-t", "1",
            "-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "12", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    @Test func theFirstPictureComesFromTheFirstPacketAndTheRestFollowInOrder() throws {
        let url = URL(fileURLWithPath: try Self.bFrameClip())
        let backend = FFmpegBackend(threads: 1)
        let expected = try Self.frames(try backend.openReader(url))
        #expect(expected.count == 30)
        let decoder = try VideoDecoder(path: url.path, threads: 1)
        decoder.decodesFirstPacketAlone()
        let first = try #require(try decoder.nextFrame())
        guard case .restartDue = decoder.firstPacket else {
            Issue.record("the first picture did not come from the first packet alone: \(decoder.firstPacket)")
            return
        }
        #expect(first.pts == .zero)
        #expect(try Self.frames(try backend.openPrerollReader(url)) == expected, "the preroll reader's frames differ")
    }

    /// A still picture: one frame, then the end, as from any reader.
    @Test func aStillGivesItsOnePicture() throws {
        let png = try TestMedia.make("still-64x48.png", ["-f", "lavfi", "-i", "color=c=red:size=64x48", "-frames:v", "1", "-c:v", "png", "-f", "image2"])
        let url = URL(fileURLWithPath: png)
        #expect(try Self.frames(try FFmpegBackend().openPrerollReader(url)).count == 1)
    }

    /// A reader that was positioned decodes as usual (the first packet is not the start).
    @Test func aSeekTurnsItOff() throws {
        let url = URL(fileURLWithPath: try Self.bFrameClip())
        let decoder = try VideoDecoder(path: url.path, threads: 1)
        decoder.decodesFirstPacketAlone()
        try decoder.seek(to: MediaTime(value: 1, timescale: 2))
        let frame = try #require(try decoder.nextFrame())
        guard case .off = decoder.firstPacket else { Issue.record("\(decoder.firstPacket)"); return }
        #expect(frame.pts.seconds <= 0.5)
    }
}
