import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// Which decoded formats are kept as they are, which are converted (and say so), and the tags.
@Suite struct PixelFormatTests {
    typealias Unit = MediaTests.PixelFormatTests

    @Test(arguments: [("yuv420p", "ffv1"), ("yuv422p", "ffv1"), ("yuv444p", "ffv1"), ("yuv420p10le", "ffv1"),
                      ("yuv422p10le", "ffv1"), ("yuv444p10le", "ffv1"), ("nv12", "rawvideo")])
    func drawableFormatsAreKeptAsDecoded(format: String, codec: String) throws {
        let frame = try Unit.firstFrame(try Unit.clip(format, codec: codec, container: codec == "rawvideo" ? "nut" : "matroska"))
        #expect(frame.pixelFormat.rawValue == format)
        #expect(frame.convertedFrom == nil)
        #expect(frame.width == 64 && frame.height == 48)
        let shift = frame.pixelFormat.chromaShift
        frame.withPlanes { planes in
            #expect(planes.count == frame.pixelFormat.planeCount)
            #expect(planes[0].width == 64 && planes[0].height == 48)
            #expect(planes[1].width == 64 >> shift.x && planes[1].height == 48 >> shift.y)
            #expect(planes[1].components == (frame.pixelFormat.interleavedChroma ? 2 : 1))
            for plane in planes {
                #expect(plane.bytesPerRow >= plane.width * plane.bytesPerTexel)
            }
        }
        // testsrc2's samples are inside the limited range at any depth.
        let s = frame.sample(x: 10, y: 10)
        let maxCode = (1 << frame.pixelFormat.bitsPerSample) - 1
        #expect([s.y, s.cb, s.cr].allSatisfy { $0 >= 0 && $0 <= maxCode })
    }

    @Test(arguments: [("bgr0", "yuv444p"), ("gray", "yuv444p"), ("yuv420p12le", "yuv420p10le"),
                      ("yuv410p", "yuv444p"), ("gbrp10le", "yuv444p10le")])
    func otherFormatsAreConvertedOnceAndSaySo(source: String, target: String) throws {
        let frame = try Unit.firstFrame(try Unit.clip(source, codec: "ffv1", container: "matroska"))
        #expect(frame.convertedFrom == source)
        #expect(frame.pixelFormat.rawValue == target)
    }

    @Test func tagsAreReadFromTheStream() throws {
        let frame = try Unit.firstFrame(try Unit.clip("yuv422p10le", codec: "ffv1", container: "matroska",
                                                      tags: ["-colorspace", "bt2020nc", "-color_range", "pc"]))
        #expect(frame.colorMatrix == .bt2020)
        #expect(frame.colorRange == .full)
        let hd = try Unit.firstFrame(try TestMedia.make("tag-709-limited.mkv", [
            "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "0.3", "-pix_fmt", "yuv420p",
            "-c:v", "ffv1", "-colorspace", "bt709", "-color_range", "tv", "-f", "matroska",
        ]))
        #expect(hd.colorMatrix == .bt709)
        #expect(hd.colorRange == .limited)
    }

    @Test func untaggedFollowsTheHeightRule() throws {
        #expect(ColorMatrix.untagged(height: 576) == .bt601)
        #expect(ColorMatrix.untagged(height: 719) == .bt601)
        #expect(ColorMatrix.untagged(height: 720) == .bt709)
        #expect(ColorMatrix.untagged(height: 2160) == .bt709)
        let frame = try Unit.firstFrame(try TestMedia.make("untagged-720.mkv", [
            "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=10", "-t", "0.1", "-pix_fmt", "yuv420p",
            "-c:v", "rawvideo", "-f", "nut",
        ]))
        #expect(frame.colorMatrix == .bt709)
        #expect(frame.colorRange == .limited)
    }

    /// JPEG's full-range formats keep their layout, full range and centred chroma, unconverted.
    @Test func yuvjIsFullRangeCentredAndNotConverted() throws {
        let frame = try Unit.firstFrame(try TestMedia.make("mjpeg-422.mkv", [
            "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "0.3", "-pix_fmt", "yuvj422p",
            "-c:v", "mjpeg", "-f", "matroska",
        ]))
        #expect(frame.pixelFormat == .yuv422p)
        #expect(frame.colorRange == .full)
        #expect(frame.chromaLocation == .center)
        #expect(frame.convertedFrom == nil)
    }

}
