import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport

/// How many threads a software decoder gets when none are asked for: sized to the stream, one for
/// up to 1080p at 30 frames per second (one core decodes that several times faster than real
/// time, and one thread holds the fewest pictures), else one per core the process may use (FFmpeg's
/// own choice would be one more, each frame thread holding pictures of its own); and one for a
/// preroll's reader, which decodes only an item's first frames while another item plays.
@Suite struct DecoderThreadsTests {
    func threads(_ clip: String, preroll: Bool = false) throws -> (threads: Int, frames: [Double]) {
        let opened = Mutex<[Int]>([])
        let backend = FFmpegBackend(onOpen: { _, info, _ in opened.withLock { $0.append(info.threads) } })
        let url = URL(fileURLWithPath: clip)
        let reader = try preroll ? backend.openPrerollReader(url) : backend.openReader(url)
        var times: [Double] = []
        while let frame = try reader.nextFrame() { times.append(frame.pts.seconds) }
        return (opened.withLock { $0.first ?? -1 }, times)
    }

    @Test func aStreamUpTo1080pAt30FpsDecodesOnOneThreadAndABiggerOneOnOnePerCore() throws {
        let cores = min(ProcessInfo.processInfo.activeProcessorCount, 16)
        let small = try TestMedia.clip(seconds: 0.5, fps: 30, width: 640, height: 360)
        let fast = try TestMedia.clip(seconds: 0.2, fps: 60, width: 1920, height: 1080)
        #expect(try threads(small).threads == 1)
        #expect(try threads(fast).threads == cores)
    }

    @Test func aPrerollReaderDecodesOnOneThreadAndGivesTheSameFrames() throws {
        let fast = try TestMedia.clip(seconds: 0.2, fps: 60, width: 1920, height: 1080)
        let preroll = try threads(fast, preroll: true)
        let playback = try threads(fast)
        #expect(preroll.threads == 1)
        #expect(preroll.frames.count == 12 && preroll.frames == playback.frames)
    }
}
