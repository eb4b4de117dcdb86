import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import MediaTests

@Suite struct VideoDecoderTests {
    @Test func decodesEveryFrameWithRisingTimes() throws {
        let path = try TestMedia.clip(seconds: 2, fps: 30)
        let decoder = try VideoDecoder(path: path)
        #expect(decoder.info.width == 320 && decoder.info.height == 180)
        #expect(decoder.info.codec == "h264")
        #expect(decoder.info.frameRate == 30)
        var times: [MediaTime] = []
        while let frame = try decoder.nextFrame() {
            #expect(frame.duration == MediaTime(value: 1, timescale: 30))
            times.append(frame.pts)
        }
        #expect(times.count == 60)
        #expect(times.first == .zero)
        for (i, t) in times.enumerated() {
            #expect(t == MediaTime(value: Int64(i), timescale: 30), "frame \(i)")
        }
        // At the end it stays at the end.
        #expect(try decoder.nextFrame() == nil)
    }

    @Test func untaggedSmallVideoIsBT601Limited() throws {
        let decoder = try VideoDecoder(path: try TestMedia.clip(seconds: 0.5, fps: 10))
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.colorMatrix == .bt601)
        #expect(frame.colorRange == .limited)
        #expect(frame.pixelFormat == .yuv420p)
    }

    @Test func yuv444pIsKeptAsDecoded() throws {
        let path = try TestMedia.make("yuv444.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "0.3",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p", "-f", "mp4",
        ])
        let decoder = try VideoDecoder(path: path)
        #expect(decoder.info.pixelFormat == "yuv444p")
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.pixelFormat == .yuv444p)
        #expect(frame.convertedFrom == nil)
        frame.withPlanes { planes in
            #expect(planes.map(\.width) == [64, 64, 64])
            #expect(planes.map(\.height) == [48, 48, 48])
        }
    }
}
