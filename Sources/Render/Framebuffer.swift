import CGLES
import Foundation
import Media

/// An offscreen RGBA8 render target (a framebuffer object with one renderbuffer).
/// Owns its GL objects; must be used and released on its context's thread.
public final class Framebuffer {
    public let width: Int
    public let height: Int
    private var framebuffer: GLuint = 0
    private var renderbuffer: GLuint = 0

    public init(width: Int, height: Int) throws {
        self.width = width
        self.height = height
        glGenRenderbuffers(1, &renderbuffer)
        glBindRenderbuffer(GLenum(GL_RENDERBUFFER), renderbuffer)
        glRenderbufferStorage(GLenum(GL_RENDERBUFFER), GLenum(GL_RGBA8), GLsizei(width), GLsizei(height))
        try checkGL("glRenderbufferStorage(\(width)x\(height))")
        glGenFramebuffers(1, &framebuffer)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
        glFramebufferRenderbuffer(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_RENDERBUFFER), renderbuffer)
        let status = glCheckFramebufferStatus(GLenum(GL_FRAMEBUFFER))
        guard status == GLenum(GL_FRAMEBUFFER_COMPLETE) else {
            throw RenderError(call: "glCheckFramebufferStatus", code: status, detail: "framebuffer incomplete")
        }
    }

    deinit {
        glDeleteFramebuffers(1, &framebuffer)
        glDeleteRenderbuffers(1, &renderbuffer)
    }

    public func bind() {
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
    }

    /// The target's pixels, top row first.
    public func readPixels() throws -> RGBAImage {
        bind()
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), &pixels)
        try checkGL("glReadPixels")
        // GL's rows run bottom-up; images run top-down.
        let row = width * 4
        var flipped = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            flipped.replaceSubrange(y * row..<(y + 1) * row, with: pixels[(height - 1 - y) * row..<(height - y) * row])
        }
        return RGBAImage(width: width, height: height, pixels: flipped)
    }
}

/// A picture read back from an output: 8-bit RGBA, rows top-down, no padding.
public struct RGBAImage: Sendable {
    public let width: Int
    public let height: Int
    public let pixels: [UInt8]

    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let i = (y * width + x) * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }
}

extension RGBAImage {
    /// The picture as PNG bytes (libavcodec's PNG encoder).
    public func pngData() throws -> Data {
        try PNGEncoder.encode(rgba: pixels, width: width, height: height)
    }
}
