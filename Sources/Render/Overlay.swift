import Media
/// A picture drawn over the video (a logo, a watermark, a line of text): premultiplied RGBA, rows
/// top-down, no padding, drawn one texel to one output pixel. Immutable, so outputs may keep what
/// they made of it (a texture) for as long as they see the same image.
public final class OverlayImage: Sendable {
    public let width: Int
    public let height: Int
    /// `width * height * 4` bytes: red, green and blue already multiplied by alpha.
    public let pixels: [UInt8]

    /// Nil where `pixels` does not hold `width * height` RGBA pixels or a side is not 1 to 16384.
    public init?(width: Int, height: Int, premultipliedPixels pixels: [UInt8]) {
        guard (1...16384).contains(width), (1...16384).contains(height), pixels.count == width * height * 4 else { return nil }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// From straight (not premultiplied) RGBA rows.
    public convenience init?(width: Int, height: Int, straightPixels: [UInt8]) {
        var pixels = straightPixels
        var i = 0
        while i + 3 < pixels.count {
            let a = UInt16(pixels[i + 3])
            if a != 255 {
                for c in 0..<3 { pixels[i + c] = UInt8((UInt16(pixels[i + c]) * a + 127) / 255) }
            }
            i += 4
        }
        self.init(width: width, height: height, premultipliedPixels: pixels)
    }

    /// The premultiplied pixel `x` across and `y` down.
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let i = (y * width + x) * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }
}

/// One overlay as an output draws it: `image` with its top-left corner at `origin` (output pixels;
/// it may reach past the output's edges, which clip it), faded by `opacity` (0...1), blended over
/// what is below (premultiplied "over").
public struct OverlayPicture: Sendable {
    public var image: OverlayImage
    public var x: Int
    public var y: Int
    public var opacity: Double

    public init(image: OverlayImage, x: Int, y: Int, opacity: Double) {
        self.image = image
        self.x = x
        self.y = y
        self.opacity = min(1, max(0, opacity.isFinite ? opacity : 1))
    }

    public var rect: PixelRect { PixelRect(x: x, y: y, width: image.width, height: image.height) }
}
