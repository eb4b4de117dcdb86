import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport

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
}
