import CGLES
import Media
import Playback

/// Draws decoded frames with OpenGL ES: the planes are uploaded into textures that are kept from
/// frame to frame, and a shader converts Y'CbCr to RGB with the frame's own matrix and range.
/// The picture is placed by `gravity` on the `background` colour.
///
/// Lives on its GL context's thread; owns its GL objects.
public final class PlayerLayer {
    public var gravity: VideoGravity = .resizeAspect
    public var background: RGBColor = .black
    /// Where the last frame was drawn, in the target's pixels; nil when no frame was drawn.
    public private(set) var videoRect: PixelRect?

    private var program: GLuint = 0
    private var textures: [GLuint] = [0, 0, 0]
    private var textureSizes: [(Int, Int)] = [(0, 0), (0, 0), (0, 0)]
    private var vertexArray: GLuint = 0
    private let matrixLocation: GLint
    private let offsetLocation: GLint
    private var lastConversion: (ColorMatrix, ColorRange)?

    public init() throws {
        program = try linkProgram(vertex: Self.vertexShader, fragment: Self.fragmentShader)
        glUseProgram(program)
        for (i, name) in ["planeY", "planeCb", "planeCr"].enumerated() {
            glUniform1i(glGetUniformLocation(program, name), GLint(i))
        }
        matrixLocation = glGetUniformLocation(program, "yuvToRGB")
        offsetLocation = glGetUniformLocation(program, "yuvOffset")
        glGenVertexArrays(1, &vertexArray)
        try checkGL("PlayerLayer setup")
    }

    deinit {
        glDeleteTextures(3, &textures)
        glDeleteVertexArrays(1, &vertexArray)
        glDeleteProgram(program)
    }

    /// Draws `frame` (or only the background when nil) into the currently bound framebuffer of
    /// size `bounds`.
    public func draw(_ frame: VideoFrame?, bounds: PixelRect) throws {
        glViewport(GLint(bounds.x), GLint(bounds.y), GLsizei(bounds.width), GLsizei(bounds.height))
        glClearColor(Float(background.red) / 255, Float(background.green) / 255, Float(background.blue) / 255, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        guard let frame else {
            videoRect = nil
            return
        }
        try upload(frame)
        let rect = Render.videoRect(contentWidth: frame.width, contentHeight: frame.height, bounds: bounds, gravity: gravity)
        videoRect = rect
        // GL's window origin is the bottom left.
        glViewport(GLint(rect.x), GLint(bounds.height - rect.y - rect.height), GLsizei(rect.width), GLsizei(rect.height))
        glUseProgram(program)
        if lastConversion == nil || lastConversion! != (frame.colorMatrix, frame.colorRange) {
            let conversion = YUVToRGB(frame.colorMatrix, frame.colorRange)
            glUniformMatrix3fv(matrixLocation, 1, GLboolean(GL_FALSE), conversion.matrix)
            glUniform3fv(offsetLocation, 1, conversion.offset)
            lastConversion = (frame.colorMatrix, frame.colorRange)
        }
        for i in 0..<3 {
            glActiveTexture(GLenum(GL_TEXTURE0 + Int32(i)))
            glBindTexture(GLenum(GL_TEXTURE_2D), textures[i])
        }
        glBindVertexArray(vertexArray)
        glDrawArrays(GLenum(GL_TRIANGLE_STRIP), 0, 4)
        try checkGL("glDrawArrays")
    }

    /// Uploads the three planes; textures are (re)allocated only when a plane's size changes, and
    /// padded rows are read in place through `GL_UNPACK_ROW_LENGTH`.
    private func upload(_ frame: VideoFrame) throws {
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        frame.withPlanes { planes in
            for (i, plane) in planes.enumerated() {
                glActiveTexture(GLenum(GL_TEXTURE0 + Int32(i)))
                glBindTexture(GLenum(GL_TEXTURE_2D), textures[i])
                if textureSizes[i] != (plane.width, plane.height) {
                    // Immutable storage cannot be resized: make a new texture for the new size.
                    if textures[i] != 0 { glDeleteTextures(1, &textures[i]) }
                    glGenTextures(1, &textures[i])
                    glBindTexture(GLenum(GL_TEXTURE_2D), textures[i])
                    glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_LINEAR)
                    glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), GL_LINEAR)
                    glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
                    glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
                    glTexStorage2D(GLenum(GL_TEXTURE_2D), 1, GLenum(GL_R8), GLsizei(plane.width), GLsizei(plane.height))
                    textureSizes[i] = (plane.width, plane.height)
                }
                glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(plane.bytesPerRow))
                glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(plane.width), GLsizei(plane.height),
                                GLenum(GL_RED), GLenum(GL_UNSIGNED_BYTE), plane.bytes)
            }
        }
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
        try checkGL("glTexSubImage2D")
    }

    // A quad from the vertex index alone: no vertex buffer.
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
        precision highp float;
        uniform sampler2D planeY;
        uniform sampler2D planeCb;
        uniform sampler2D planeCr;
        uniform mat3 yuvToRGB;
        uniform vec3 yuvOffset;
        in vec2 texCoord;
        out vec4 color;
        void main() {
            vec3 yuv = vec3(texture(planeY, texCoord).r, texture(planeCb, texCoord).r, texture(planeCr, texCoord).r);
            color = vec4(clamp(yuvToRGB * (yuv - yuvOffset), 0.0, 1.0), 1.0);
        }
        """
}

private func compileShader(_ type: GLenum, _ source: String) throws -> GLuint {
    let shader = glCreateShader(type)
    source.withCString { text in
        var pointer: UnsafePointer<GLchar>? = text
        glShaderSource(shader, 1, &pointer, nil)
    }
    glCompileShader(shader)
    var ok: GLint = 0
    glGetShaderiv(shader, GLenum(GL_COMPILE_STATUS), &ok)
    guard ok == GL_TRUE else {
        var log = [GLchar](repeating: 0, count: 4096)
        glGetShaderInfoLog(shader, GLsizei(log.count), nil, &log)
        glDeleteShader(shader)
        throw RenderError(call: "glCompileShader", detail: String(nullTerminated: log))
    }
    return shader
}

private func linkProgram(vertex: String, fragment: String) throws -> GLuint {
    let vs = try compileShader(GLenum(GL_VERTEX_SHADER), vertex)
    defer { glDeleteShader(vs) }
    let fs = try compileShader(GLenum(GL_FRAGMENT_SHADER), fragment)
    defer { glDeleteShader(fs) }
    let program = glCreateProgram()
    glAttachShader(program, vs)
    glAttachShader(program, fs)
    glLinkProgram(program)
    var ok: GLint = 0
    glGetProgramiv(program, GLenum(GL_LINK_STATUS), &ok)
    guard ok == GL_TRUE else {
        var log = [GLchar](repeating: 0, count: 4096)
        glGetProgramInfoLog(program, GLsizei(log.count), nil, &log)
        glDeleteProgram(program)
        throw RenderError(call: "glLinkProgram", detail: String(nullTerminated: log))
    }
    return program
}
