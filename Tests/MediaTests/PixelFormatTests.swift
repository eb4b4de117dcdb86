import Foundation
import Media
import Playback
import Testing
import TestSupport

/// Which decoded formats are kept as they are, which are converted (and say so), and the tags.
@Suite struct PixelFormatTests {
    /// A 64x48 clip of `pixelFormat`, coded losslessly with `codec` into `container`, with tags.
    static func clip(_ pixelFormat: String, codec: String, container: String, tags: [String] = []) throws -> String {
        let ext = container == "matroska" ? "mkv" : container
        let name = "fmt-\(pixelFormat)-\(codec)-\(tags.joined(separator: "_").replacingOccurrences(of: "-", with: "")).\(ext)"
        return try TestMedia.make(name, [
            "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "0.3", "-pix_fmt", pixelFormat,
            "-c:v", codec,
        ] + tags + ["-f", container])
    }

    static func firstFrame(_ path: String) throws -> VideoFrame {
        let decoder = try VideoDecoder(path: path)
        return try #require(try decoder.nextFrame())
    }

    @Test func syntheticFramesStoreP010InTheHighBits() throws {
        let frame = try VideoFrame(format: .p010le, width: 6, height: 4, colorMatrix: .bt2020, colorRange: .limited) { c, x, y in
            [64 + x + 10 * y, 512, 940][c]
        }
        let s = frame.sample(x: 5, y: 3)
        let expected: [Int] = [99, 512, 940]  // 64 + x + 10 y at (5, 3)
        #expect([s.y, s.cb, s.cr] == expected)
        frame.withPlanes { planes in
            let word = planes[0].bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
            #expect(UInt16(littleEndian: word) == UInt16(65) << 6)
        }
        #expect(throws: MediaError.self) {
            try VideoFrame(format: .nv12, width: 0, height: 4, colorMatrix: .bt709, colorRange: .full) { _, _, _ in 0 }
        }
    }
}
