import Foundation
import Media
import Testing
import TestSupport

@Suite struct PNGEncoderTests {
    /// A picture of noise (each channel its own), alpha varying too.
    func noise(_ width: Int, _ height: Int, seed: UInt32) -> [UInt8] {
        var state = seed
        return (0..<width * height * 4).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }

    /// The PNG's pixels as FFmpeg's PNG decoder reads them (RGBA, top row first), and its colour type.
    func decode(_ png: Data) throws -> (pixels: [UInt8], colourType: UInt8) {
        let path = TestMedia.folder + "/png-encoder-\(UUID().uuidString).png"
        try png.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return (try StillImageDecoder.decodeRGBA(path: path).pixels, png[25])
    }

    /// The kept encoder gives each picture its own PNG: pictures of one size one after another
    /// (the encoder kept), then of another size, rows either way up. Opaque: RGB, alpha 255.
    @Test func aKeptEncoderEncodesEachPictureWhole() throws {
        let kept = KeptPNGEncoder()
        for (width, height, seed, bottomUp) in [(7, 5, 1, false), (7, 5, 2, true), (7, 5, 3, false), (12, 3, 4, true)] {
            let rgba = noise(width, height, seed: UInt32(seed))
            let (pixels, colourType) = try decode(try kept.encode(rgba: rgba, width: width, height: height, bottomRowFirst: bottomUp, opaque: true))
            #expect(colourType == 2, "an opaque picture is an RGB PNG")
            var expected = [UInt8]()
            for y in 0..<height {
                let row = bottomUp ? height - 1 - y : y
                for x in 0..<width {
                    let i = (row * width + x) * 4
                    expected += [rgba[i], rgba[i + 1], rgba[i + 2], 255]
                }
            }
            #expect(pixels == expected, "picture \(seed) (\(width)x\(height))")
        }
        // Not opaque: the alpha is kept (RGBA PNG), also past the size it keeps an encoder for.
        for kept in [kept, KeptPNGEncoder(keptPixels: 10)] {
            let rgba = noise(6, 4, seed: 9)
            let (pixels, colourType) = try decode(try kept.encode(rgba: rgba, width: 6, height: 4))
            #expect(colourType == 6 && pixels == rgba)
        }
        let error = try #require(throws: MediaError.self) { try kept.encode(rgba: [1, 2, 3], width: 2, height: 2) }
        #expect(error.description.contains("expected 16 bytes of RGBA, got 3"))
    }
}
