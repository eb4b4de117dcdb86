@testable import Display
import Render
import Testing

/// The planes output's overlay path without a display: an overlay's premultiplied RGBA blended in
/// software into XRGB8888 rows (with the driver's padding), as `ScanoutLayer` does into the mapped
/// dumb buffer after the picture is written.
@Suite struct OverlayBlendTests {
    /// A `width` x `height` buffer of `pitch` bytes a row, every pixel `rgb`, padding 0xEE.
    static func buffer(width: Int, height: Int, pitch: Int, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xEE, count: pitch * height)
        for y in 0..<height {
            for x in 0..<width {
                let o = y * pitch + x * 4
                (bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]) = (rgb.2, rgb.1, rgb.0, 0xFF)
            }
        }
        return bytes
    }

    @Test func anOverlayBlendsOverItsRectangleOnlyClippedToTheBuffer() throws {
        let (width, height, pitch) = (64, 48, 64 * 4 + 32)
        let background: (UInt8, UInt8, UInt8) = (32, 64, 96)
        var bytes = Self.buffer(width: width, height: height, pitch: pitch, rgb: background)
        let original = bytes
        // 10x8 of red at alpha 0.6 (premultiplied: 153, 0, 0, 153), half of it left of the buffer.
        let image = try #require(OverlayImage(width: 10, height: 8, straightPixels: [UInt8]((0..<80).flatMap { _ in [255, 0, 0, 153] })))
        let overlay = OverlayPicture(image: image, x: -5, y: 40, opacity: 0.5)
        bytes.withUnsafeMutableBytes { overlay.blend(intoXRGB: $0, width: width, height: height, pitch: pitch) }
        let a = 0.6 * 0.5
        for y in 0..<height {
            for x in 0..<width {
                let o = y * pitch + x * 4
                let inside = x < 5 && y >= 40
                if inside {
                    let want = [255 * a + 32 * (1 - a), 64 * (1 - a), 96 * (1 - a)]
                    let got = [Double(bytes[o + 2]), Double(bytes[o + 1]), Double(bytes[o])]
                    #expect(zip(got, want).allSatisfy { abs($0 - $1) <= 1 }, "(\(x), \(y)): \(got) for \(want)")
                    #expect(bytes[o + 3] == 0xFF)
                } else {
                    #expect(bytes[o..<(o + 4)] == original[o..<(o + 4)], "(\(x), \(y)) changed")
                }
            }
            // The padding after each row is never written.
            #expect(bytes[(y * pitch + width * 4)..<((y + 1) * pitch)] == original[(y * pitch + width * 4)..<((y + 1) * pitch)])
        }
    }

    @Test func anOverlayOutsideTheBufferOrInvisibleWritesNothing() throws {
        let (width, height, pitch) = (32, 16, 128)
        var bytes = Self.buffer(width: width, height: height, pitch: pitch, rgb: (1, 2, 3))
        let original = bytes
        let image = try #require(OverlayImage(width: 4, height: 4, premultipliedPixels: [UInt8](repeating: 255, count: 64)))
        for overlay in [OverlayPicture(image: image, x: 32, y: 0, opacity: 1), OverlayPicture(image: image, x: -4, y: -4, opacity: 1),
                        OverlayPicture(image: image, x: 4, y: 4, opacity: 0)] {
            bytes.withUnsafeMutableBytes { overlay.blend(intoXRGB: $0, width: width, height: height, pitch: pitch) }
        }
        #expect(bytes == original)
        // Opaque white over the top-left corner: exactly white there.
        bytes.withUnsafeMutableBytes { OverlayPicture(image: image, x: -2, y: -2, opacity: 1).blend(intoXRGB: $0, width: width, height: height, pitch: pitch) }
        #expect(Array(bytes[0..<3]) == [255, 255, 255] && Array(bytes[4..<7]) == [255, 255, 255])
        #expect(Array(bytes[8..<11]) == [3, 2, 1] && Array(bytes[pitch * 2..<pitch * 2 + 3]) == [3, 2, 1])
    }
}
