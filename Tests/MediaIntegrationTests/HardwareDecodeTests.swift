@testable import Media
import CFFmpeg
import Foundation
import Playback
import Synchronization
import Testing
import TestSupport
@testable import MediaTests

/// This machine has no decode hardware: every hardware path must fall back to software, say why,
/// and still decode every frame.
@Suite struct HardwareDecodeTests {
    func decodeAll(_ decoder: VideoDecoder) throws -> [MediaTime] {
        var times: [MediaTime] = []
        while let frame = try decoder.nextFrame() { times.append(frame.pts) }
        return times
    }

    @Test(arguments: [HardwareDecoding.vaapi, .cuda, .drm, .v4l2m2m])
    func requestedHardwareFallsBackToSoftwareWithTheReason(_ kind: HardwareDecoding) throws {
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 1, fps: 30), hardware: kind)
        #expect(decoder.decodingPath.hwdecCurrent == "no")
        #expect(decoder.decodingPath.interop == "none")
        #expect(decoder.decodingPath.degraded, "a hardware path asked for by name and not in use degrades health")
        let reason = try #require(decoder.decodingPath.fallbackReason)
        #expect(reason.hasPrefix("\(kind.rawValue): "))
        #expect(reason.contains("failed"), "\(reason)")
        #expect(try decodeAll(decoder).count == 30)
    }

    @Test func autoFallsBackQuietly() throws {
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 1, fps: 30), hardware: .auto)
        #expect(decoder.decodingPath.hwdecCurrent == "no")
        #expect(!decoder.decodingPath.degraded, "auto on a machine without hardware is not a fault")
        // Every candidate was tried, in the documented order.
        let reason = try #require(decoder.decodingPath.fallbackReason)
        let tried = reason.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).prefix(while: { $0 != ":" }) }
        #expect(tried.map(String.init) == HardwareDecoding.autoOrder.map(\.rawValue))
    }

    @Test func noneIsSoftwareWithoutAReason() throws {
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 1, fps: 30))
        #expect(decoder.decodingPath == .software)
    }

    @Test func failureMidStreamContinuesInSoftwareWithoutAGap() throws {
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 2, fps: 30), sessions: DyingSessions(afterFrames: 25))
        let times = try decodeAll(decoder)
        // Every frame once, in order: the switch re-decodes from the keyframe and skips what was shown.
        #expect(times == (0..<60).map { MediaTime(value: Int64($0), timescale: 30) })
        #expect(decoder.decodingPath.hwdecCurrent == "no")
        #expect(decoder.decodingPath.degraded)
        let reason = decoder.decodingPath.fallbackReason ?? ""
        #expect(reason.contains("failed mid-stream: avcodec_receive_frame failed: Input/output error"), "\(reason)")
    }
}

@Suite struct MidStreamFallbackPlaybackTests {
    @Test func theSwitchToSoftwareShowsNoBlankVsyncAndNoMissingFrame() throws {
        let url = URL(fileURLWithPath: try TestMedia.clip(seconds: 2, fps: 30))
        let item = PlayerItem(asset: Asset(url: url, backend: FailingMidStreamBackend(afterFrames: 25)))
        let player = QueuePlayer(items: [item], logger: Logger(level: .error, sink: { _ in }))
        let display = try HandDrivenDisplay(player)
        player.play()
        display.step(119)
        // Every vsync from the first frame to the last shows a frame: no blank at the switch.
        #expect(display.shown.allSatisfy { $0.frame != nil })
        let frames = display.shown.compactMap(\.frame)
        #expect(frames.map(\.pts) == (0..<60).map { MediaTime(value: Int64($0), timescale: 30) })
        #expect(display.shown.map(\.vsync) == (0..<60).map { Int64($0 * 2) })
        #expect(player.stats.dropped == 0 && player.stats.delayed == 0)
    }
}

/// The output's DMA-BUF decision, given to a decoder when it opens (the output opened first).
@Suite struct InteropChoiceTests {
    typealias CountingTarget = MediaTests.InteropChoiceTests.CountingTarget

    @Test func aDecoderWithoutHardwareNeitherAsksNorCopies() throws {
        let target = CountingTarget()
        let start = ContinuousClock.now
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 1, fps: 30), hardware: .vaapi, interop: target)
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(target.asked.load(ordering: .relaxed) == 0)
        #expect(decoder.decodingPath.interop == "none")
        #expect(decoder.decodingPath.interopReason == "software decoding")
        #expect(decoder.decodingPath.hwdecCurrent == "no")
        var frames = 0
        while let frame = try decoder.nextFrame() {
            #expect(frame.drmPrime == nil)
            frames += 1
        }
        #expect(frames == 30)
    }

}
