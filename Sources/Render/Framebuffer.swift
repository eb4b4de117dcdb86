import CGLES
import Foundation
import Media

/// An offscreen RGBA8 render target (a framebuffer object drawing into one texture: a picture
/// shown 1:1 may be written into it directly, `PlayerLayer.directTarget`).
/// Owns its GL objects; must be used and released on its context's thread.
public final class Framebuffer {
    public let width: Int
    public let height: Int
    private(set) var framebuffer: GLuint = 0
    /// The target's pixels.
    private(set) var texture: GLuint = 0
    /// The small target the last thumbnail was scaled into, kept for the next one of that size:
    /// making and freeing one per screenshot cost more than the scaling (llvmpipe maps fresh memory).
    private var thumbnail: Framebuffer?
    /// The last thumbnail's pixels, read into again once its encoder has let go of them (copied
    /// first while it has not: an array's copy on write), so no fresh memory is mapped per thumbnail.
    private var thumbnailPixels: [UInt8] = []

    public init(width: Int, height: Int) throws {
        self.width = width
        self.height = height
        var bound: GLint = 0
        glGetIntegerv(GLenum(GL_TEXTURE_BINDING_2D), &bound)
        glGenTextures(1, &texture)
        glBindTexture(GLenum(GL_TEXTURE_2D), texture)
        glTexStorage2D(GLenum(GL_TEXTURE_2D), 1, GLenum(GL_RGBA8), GLsizei(width), GLsizei(height))
        glBindTexture(GLenum(GL_TEXTURE_2D), GLuint(bound))
        try checkGL("glTexStorage2D(target \(width)x\(height))")
        glGenFramebuffers(1, &framebuffer)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
        glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), texture, 0)
        let status = glCheckFramebufferStatus(GLenum(GL_FRAMEBUFFER))
        guard status == GLenum(GL_FRAMEBUFFER_COMPLETE) else {
            throw RenderError(call: "glCheckFramebufferStatus", code: status, detail: "framebuffer incomplete")
        }
    }

    deinit {
        glDeleteFramebuffers(1, &framebuffer)
        glDeleteTextures(1, &texture)
    }

    /// Whether this target is the framebuffer GL draws into now.
    var isBound: Bool {
        var bound: GLint = 0
        glGetIntegerv(GLenum(GL_DRAW_FRAMEBUFFER_BINDING), &bound)
        return GLuint(bound) == framebuffer
    }

    public func bind() {
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
    }

    /// The target's pixels, top row first.
    public func readPixels() throws -> RGBAImage {
        try readPixelsAsStored().topRowFirst()
    }

    /// The target's pixels scaled down to at most `maxWidth` pixels wide (the aspect kept) by a
    /// linear blit into a small target, as GL stores them: a thumbnail reads back a fraction of
    /// the bytes. The whole picture when it is that narrow already.
    public func readPixelsAsStored(maxWidth: Int) throws -> RGBAImage {
        guard maxWidth > 0, maxWidth < width else { return try readPixelsAsStored() }
        let h = scaledHeight(width: width, height: height, toWidth: maxWidth)
        let small = try thumbnailTarget(width: maxWidth, height: h)
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), framebuffer)
        glBindFramebuffer(GLenum(GL_DRAW_FRAMEBUFFER), small.framebuffer)
        // At an odd whole ratio on both sides each small pixel's sample falls on a source pixel's
        // centre, where linear filtering gives that pixel alone: nearest is the same picture, which
        // llvmpipe scales in about half the time (1920 to the dashboard's 640 pixels is 3:1).
        let oddWholeRatio = width % maxWidth == 0 && height % h == 0 && (width / maxWidth) % 2 == 1 && (height / h) % 2 == 1
        glBlitFramebuffer(0, 0, GLint(width), GLint(height), 0, 0, GLint(maxWidth), GLint(h),
                          GLbitfield(GL_COLOR_BUFFER_BIT), GLenum(oddWholeRatio ? GL_NEAREST : GL_LINEAR))
        try checkGL("glBlitFramebuffer(screenshot \(width)x\(height) to \(maxWidth)x\(h))")
        let image = try small.readPixelsAsStored(into: &thumbnailPixels)
        bind()
        return image
    }

    private func thumbnailTarget(width: Int, height: Int) throws -> Framebuffer {
        if let thumbnail, thumbnail.width == width, thumbnail.height == height { return thumbnail }
        thumbnail = nil  // its memory goes before the new one's is taken
        let made = try Framebuffer(width: width, height: height)
        thumbnail = made
        return made
    }

    private func readPixelsAsStored(into pixels: inout [UInt8]) throws -> RGBAImage {
        bind()
        let count = width * height * 4
        if pixels.count != count { pixels = [UInt8](repeating: 0, count: count) }
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        pixels.withUnsafeMutableBytes { glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), $0.baseAddress) }
        let error = glGetError()
        if error != GLenum(GL_NO_ERROR) { throw RenderError(call: "glReadPixels(\(width)x\(height))", code: error) }
        return RGBAImage(width: width, height: height, pixels: pixels, bottomRowFirst: true)
    }

    /// The target's pixels as GL stores them (bottom row first): one copy and nothing else, for a
    /// thread that must not be held up (a screenshot on the presenting thread; the rows are put in
    /// order where the picture is encoded).
    public func readPixelsAsStored() throws -> RGBAImage {
        bind()
        let count = width * height * 4
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        // Not zero-filled first: glReadPixels writes every byte.
        var error = GLenum(GL_NO_ERROR)
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), buffer.baseAddress)
            error = glGetError()
            if error != GLenum(GL_NO_ERROR) { buffer.initialize(repeating: 0) }
            initialized = count
        }
        if error != GLenum(GL_NO_ERROR) { throw RenderError(call: "glReadPixels(\(width)x\(height))", code: error) }
        return RGBAImage(width: width, height: height, pixels: pixels, bottomRowFirst: true)
    }
}

/// A picture read back from an output: 8-bit RGBA, no padding, rows top-down unless
/// `bottomRowFirst` (as GL stores them).
public struct RGBAImage: Sendable {
    public let width: Int
    public let height: Int
    public let pixels: [UInt8]
    public let bottomRowFirst: Bool

    public init(width: Int, height: Int, pixels: [UInt8], bottomRowFirst: Bool = false) {
        self.width = width
        self.height = height
        self.pixels = pixels
        self.bottomRowFirst = bottomRowFirst
    }

    /// The pixel `x` across and `y` down from the top left.
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let i = ((bottomRowFirst ? height - 1 - y : y) * width + x) * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }

    /// The same picture with its rows top-down.
    public func topRowFirst() -> RGBAImage {
        guard bottomRowFirst else { return self }
        let row = width * 4
        var flipped = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            flipped.replaceSubrange(y * row..<(y + 1) * row, with: pixels[(height - 1 - y) * row..<(height - y) * row])
        }
        return RGBAImage(width: width, height: height, pixels: flipped)
    }
}

extension RGBAImage {
    /// The picture at most `maxWidth` pixels wide (the aspect kept, at least 1 x 1): each pixel the
    /// average of the block it covers. Itself when it is that narrow already.
    public func scaledDown(toWidth maxWidth: Int) -> RGBAImage {
        guard maxWidth > 0, maxWidth < width, width > 0, height > 0 else { return self }
        let w = maxWidth, h = scaledHeight(width: width, height: height, toWidth: maxWidth)
        var out = [UInt8](repeating: 0, count: w * h * 4)
        pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for y in 0..<h {
                    let y0 = y * height / h, y1 = max(y0 + 1, (y + 1) * height / h)
                    for x in 0..<w {
                        let x0 = x * width / w, x1 = max(x0 + 1, (x + 1) * width / w)
                        var sum = (0, 0, 0, 0)
                        for sy in y0..<y1 {
                            var i = (sy * width + x0) * 4
                            for _ in x0..<x1 {
                                sum.0 += Int(source[i]); sum.1 += Int(source[i + 1]); sum.2 += Int(source[i + 2]); sum.3 += Int(source[i + 3])
                                i += 4
                            }
                        }
                        let n = (y1 - y0) * (x1 - x0), o = (y * w + x) * 4
                        target[o] = UInt8(sum.0 / n); target[o + 1] = UInt8(sum.1 / n)
                        target[o + 2] = UInt8(sum.2 / n); target[o + 3] = UInt8(sum.3 / n)
                    }
                }
            }
        }
        return RGBAImage(width: w, height: h, pixels: out, bottomRowFirst: bottomRowFirst)
    }

    /// The picture as PNG bytes (libavcodec's PNG encoder).
    public func pngData() throws -> Data {
        try PNGEncoder.encode(rgba: pixels, width: width, height: height, bottomRowFirst: bottomRowFirst)
    }
}

/// The height of a `width` x `height` picture scaled to `newWidth` (its aspect kept, at least 1);
/// `width` and `newWidth` above 0.
func scaledHeight(width: Int, height: Int, toWidth newWidth: Int) -> Int {
    max(1, Int((Double(height) * Double(newWidth) / Double(width)).rounded()))
}
