import CGLES
import Media

/// Draws overlays over what the player layer drew: each image from a texture of its own (made when
/// the image is first seen, kept while it is drawn, deleted when it is no longer), blended with
/// premultiplied alpha and the overlay's opacity, one texel per pixel. Lives on its GL context's
/// thread; owns its GL objects. Its program is made at the first draw with overlays.
public final class OverlayLayer {
    private var program: GLuint = 0
    private var opacityUniform: GLint = -1
    private var vertexArray: GLuint = 0
    /// One texture per image drawn by the last call, with the image (kept alive with it).
    private var textures: [(image: OverlayImage, texture: GLuint)] = []
    /// Textures made so far (a changing clock text makes one a second).
    public private(set) var texturesMade = 0

    public init() {}

    deinit {
        for entry in textures { var name = entry.texture; glDeleteTextures(1, &name) }
        if vertexArray != 0 { glDeleteVertexArrays(1, &vertexArray) }
        if program != 0 { glDeleteProgram(program) }
    }

    static let vertexShader = """
        #version 300 es
        out vec2 texCoord;
        void main() {
            vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
            texCoord = vec2(corner.x, 1.0 - corner.y);
            gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
        }
        """

    static let fragmentShader = """
        #version 300 es
        precision mediump float;
        uniform sampler2D image;
        uniform float opacity;
        in vec2 texCoord;
        out vec4 color;
        void main() { color = texture(image, texCoord) * opacity; }
        """

    /// Draws `overlays` in order over `bounds` of the bound framebuffer (`targetHeight` pixels
    /// high; default: the bottom of `bounds`), each at its place relative to `bounds`' top left,
    /// clipped to `bounds`.
    public func draw(_ overlays: [OverlayPicture], bounds: PixelRect, targetHeight: Int? = nil) throws {
        let previous = textures
        textures.removeAll(keepingCapacity: true)
        defer {
            // Textures of images no longer shown go.
            for old in previous where !textures.contains(where: { $0.texture == old.texture }) {
                var name = old.texture
                glDeleteTextures(1, &name)
            }
        }
        guard !overlays.isEmpty else { return }
        if program == 0 {
            program = try linkProgram(vertex: Self.vertexShader, fragment: Self.fragmentShader)
            glUseProgram(program)
            glUniform1i(glGetUniformLocation(program, "image"), 0)
            opacityUniform = glGetUniformLocation(program, "opacity")
            glGenVertexArrays(1, &vertexArray)
        }
        let targetHeight = targetHeight ?? bounds.y + bounds.height
        glUseProgram(program)
        glBindVertexArray(vertexArray)
        glActiveTexture(GLenum(GL_TEXTURE0))
        glEnable(GLenum(GL_BLEND))
        glBlendFunc(GLenum(GL_ONE), GLenum(GL_ONE_MINUS_SRC_ALPHA))
        glEnable(GLenum(GL_SCISSOR_TEST))
        glScissor(GLint(bounds.x), GLint(targetHeight - bounds.y - bounds.height), GLsizei(bounds.width), GLsizei(bounds.height))
        defer {
            glDisable(GLenum(GL_BLEND))
            glDisable(GLenum(GL_SCISSOR_TEST))
        }
        for overlay in overlays where overlay.opacity > 0 {
            let texture = try self.texture(for: overlay.image, previous: previous)
            glBindTexture(GLenum(GL_TEXTURE_2D), texture)
            glUniform1f(opacityUniform, Float(overlay.opacity))
            let rect = overlay.rect
            glViewport(GLint(bounds.x + rect.x), GLint(targetHeight - bounds.y - rect.y - rect.height),
                       GLsizei(rect.width), GLsizei(rect.height))
            glDrawArrays(GLenum(GL_TRIANGLE_STRIP), 0, 4)
        }
        try checkGL("OverlayLayer draw")
    }

    private func texture(for image: OverlayImage, previous: [(image: OverlayImage, texture: GLuint)]) throws -> GLuint {
        if let made = textures.first(where: { $0.image === image }) ?? previous.first(where: { $0.image === image }) {
            if !textures.contains(where: { $0.texture == made.texture }) { textures.append(made) }
            return made.texture
        }
        var name: GLuint = 0
        glGenTextures(1, &name)
        glBindTexture(GLenum(GL_TEXTURE_2D), name)
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
        image.pixels.withUnsafeBytes { bytes in
            glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(image.width), GLsizei(image.height), 0,
                         GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), bytes.baseAddress)
        }
        // One texel per pixel: nearest copies it exactly.
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_NEAREST)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), GL_NEAREST)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
        do {
            try checkGL("glTexImage2D(overlay \(image.width)x\(image.height))")
        } catch {
            glDeleteTextures(1, &name)
            throw error
        }
        texturesMade += 1
        textures.append((image, name))
        return name
    }
}

extension PlayerLayer {
    /// Draws `overlays` over `bounds` of the bound framebuffer: call after the picture.
    public func drawOverlays(bounds: PixelRect, targetHeight: Int? = nil) throws {
        try overlayLayer.draw(overlays, bounds: bounds, targetHeight: targetHeight)
    }

    /// Overlay textures made so far.
    public var overlayTexturesMade: Int { overlayLayer.texturesMade }
}
