import CGLES
import Media
import Playback

// The layer's shader programs: their sources (a quad from the vertex index; Y'CbCr, RGBA and
// external-image fragment shaders), compiling and linking, and the uniforms that fold a frame's
// matrix, range, depth and siting into the Y'CbCr conversion.

extension PlayerLayer {
    func program(_ kind: ProgramKind) throws -> LayerProgram {
        if let program = programs[kind] { return program }
        let fragment: String
        switch kind {
        case .float: fragment = Self.fragmentShader(integer: false)
        case .integer: fragment = Self.fragmentShader(integer: true)
        case .external: fragment = Self.externalFragmentShader
        case .rgb: fragment = Self.rgbFragmentShader
        }
        let name = try linkProgram(vertex: Self.vertexShader, fragment: fragment)
        glUseProgram(name)
        if kind == .external || kind == .rgb {
            glUniform1i(glGetUniformLocation(name, "image"), 0)
        } else {
            for (i, plane) in ["planeY", "planeCb", "planeCr"].enumerated() {
                glUniform1i(glGetUniformLocation(name, plane), GLint(i))
            }
        }
        let program = LayerProgram(name: name, matrix: glGetUniformLocation(name, "yuvToRGB"),
                                   offset: glGetUniformLocation(name, "yuvOffset"),
                                   interleaved: glGetUniformLocation(name, "interleavedChroma"),
                                   chromaOffset: glGetUniformLocation(name, "chromaOffset"),
                                   chromaScale: glGetUniformLocation(name, "chromaScale"),
                                   quarterTurns: glGetUniformLocation(name, "quarterTurns"),
                                   sourceRect: glGetUniformLocation(name, "sourceRect"))
        glUniform4f(program.sourceRect, 0, 0, 1, 1)
        lastSourceRect[kind] = .full
        programs[kind] = program
        lastState = nil
        try checkGL("PlayerLayer program \(kind)")
        return program
    }

    func setUniforms(_ program: LayerProgram, _ state: UniformState) {
        let format = state.format
        // What a sampled value is in code values: 8-bit unorm, 16-bit unorm or integer / 65535
        // (the integer path divides by 65535 too), p010's samples sit 6 bits up.
        let sampleScale: Double = format.bytesPerSample == 1 ? 255 : 65535 / Double(1 << format.sampleShift)
        let conversion = YUVToRGB(state.matrix, state.range, bits: format.bitsPerSample, sampleScale: sampleScale)
        glUniformMatrix3fv(program.matrix, 1, GLboolean(GL_FALSE), conversion.matrix)
        glUniform3fv(program.offset, 1, conversion.offset)
        glUniform1i(program.interleaved, format.interleavedChroma ? 1 : 0)
        // Left-sited chroma sits half a luma pixel left of where GL's sampling puts it: read it a
        // quarter of a chroma texel further right (and down, for top-left siting).
        let shift = format.chromaShift
        var dx: Float = 0, dy: Float = 0
        if shift.x == 1 && state.chroma != .center && state.chromaWidth > 0 { dx = 0.25 / Float(state.chromaWidth) }
        if shift.y == 1 && state.chroma == .topLeft && state.chromaHeight > 0 { dy = 0.25 / Float(state.chromaHeight) }
        glUniform2f(program.chromaOffset, dx, dy)
        // An odd size rounds the chroma plane up (5 luma pixels, 3 chroma samples): GL would spread
        // the chroma over 6 luma pixels' worth; scale it back to the luma grid.
        let sx = state.chromaWidth > 0 ? Float(state.lumaWidth) / Float(1 << shift.x) / Float(state.chromaWidth) : 1
        let sy = state.chromaHeight > 0 ? Float(state.lumaHeight) / Float(1 << shift.y) / Float(state.chromaHeight) : 1
        glUniform2f(program.chromaScale, sx, sy)
        glUniform1i(program.quarterTurns, GLint(state.turn.quarterTurns))
    }

    // A quad from the vertex index alone: no vertex buffer. `s` is the position inside the picture's
    // rectangle with y down; the texture coordinate is where that lands in the unturned picture,
    // within `sourceRect` (x0, y0, x1, y1) of it: the whole frame, or the part a wall output shows.
    static let vertexShader = """
        #version 300 es
        uniform int quarterTurns;
        uniform vec4 sourceRect;
        out vec2 texCoord;
        void main() {
            vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
            vec2 s = vec2(corner.x, 1.0 - corner.y);
            vec2 t = s;
            if (quarterTurns == 1) t = vec2(s.y, 1.0 - s.x);
            else if (quarterTurns == 2) t = vec2(1.0 - s.x, 1.0 - s.y);
            else if (quarterTurns == 3) t = vec2(1.0 - s.y, s.x);
            texCoord = mix(sourceRect.xy, sourceRect.zw, t);
            gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
        }
        """

    /// Y'CbCr from three planes or from a luma plane and an interleaved chroma plane; 16-bit
    /// integer textures are filtered here (bilinear, edges clamped) and scaled as unorm16 would be.
    static func fragmentShader(integer: Bool) -> String {
        let sampling = integer ? """
            uniform highp usampler2D planeY;
            uniform highp usampler2D planeCb;
            uniform highp usampler2D planeCr;
            vec2 load(highp usampler2D t, vec2 uv) {
                ivec2 size = textureSize(t, 0);
                vec2 p = uv * vec2(size) - 0.5;
                vec2 f = fract(p);
                ivec2 i = ivec2(floor(p));
                ivec2 hi = size - 1;
                vec2 a = vec2(texelFetch(t, clamp(i, ivec2(0), hi), 0).rg);
                vec2 b = vec2(texelFetch(t, clamp(i + ivec2(1, 0), ivec2(0), hi), 0).rg);
                vec2 c = vec2(texelFetch(t, clamp(i + ivec2(0, 1), ivec2(0), hi), 0).rg);
                vec2 d = vec2(texelFetch(t, clamp(i + ivec2(1, 1), ivec2(0), hi), 0).rg);
                return mix(mix(a, b, f.x), mix(c, d, f.x), f.y) / 65535.0;
            }
            """ : """
            uniform sampler2D planeY;
            uniform sampler2D planeCb;
            uniform sampler2D planeCr;
            vec2 load(sampler2D t, vec2 uv) { return texture(t, uv).rg; }
            """
        return """
            #version 300 es
            precision highp float;
            precision highp int;
            \(sampling)
            uniform mat3 yuvToRGB;
            uniform vec3 yuvOffset;
            uniform bool interleavedChroma;
            uniform vec2 chromaOffset;
            uniform vec2 chromaScale;
            in vec2 texCoord;
            out vec4 color;
            void main() {
                float y = load(planeY, texCoord).r;
                vec2 uvC = texCoord * chromaScale + chromaOffset;
                vec2 c = load(planeCb, uvC);
                if (!interleavedChroma) c.y = load(planeCr, uvC).r;
                color = vec4(clamp(yuvToRGB * (vec3(y, c) - yuvOffset), 0.0, 1.0), 1.0);
            }
            """
    }

    /// A plain texture fetch, nothing else: what llvmpipe's fast path for copies recognises.
    static let rgbFragmentShader = """
        #version 300 es
        precision mediump float;
        uniform sampler2D image;
        in vec2 texCoord;
        out vec4 color;
        void main() { color = texture(image, texCoord); }
        """

    static let externalFragmentShader = """
        #version 300 es
        #extension GL_OES_EGL_image_external_essl3 : require
        precision highp float;
        // External samplers default to low precision: too few bits for 10-bit video on some GPUs.
        uniform highp samplerExternalOES image;
        in vec2 texCoord;
        out vec4 color;
        void main() { color = vec4(texture(image, texCoord).rgb, 1.0); }
        """
}

enum ProgramKind: Hashable, CustomStringConvertible {
    case float, integer, external, rgb
    var description: String {
        switch self {
        case .float: "float"
        case .integer: "integer"
        case .external: "external"
        case .rgb: "rgb"
        }
    }
}

struct LayerProgram {
    var name: GLuint
    var matrix: GLint
    var offset: GLint
    var interleaved: GLint
    var chromaOffset: GLint
    var chromaScale: GLint
    var quarterTurns: GLint
    var sourceRect: GLint
}

struct UniformState: Equatable {
    var program: ProgramKind
    var matrix: ColorMatrix
    var range: ColorRange
    var format: Media.PixelFormat  // qualified: Render.PixelFormat is the scanout (DRM) format
    var chroma: ChromaLocation
    var turn: Rotation
    var lumaWidth: Int
    var lumaHeight: Int
    var chromaWidth: Int
    var chromaHeight: Int
}

/// The extensions of the current GL context.
func currentGLExtensions() -> Set<String> {
    guard let text = glGetString(GLenum(GL_EXTENSIONS)) else { return [] }
    return Set(String(cString: text).split(separator: " ").map(String.init))
}

func compileShader(_ type: GLenum, _ source: String) throws -> GLuint {
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

func linkProgram(vertex: String, fragment: String) throws -> GLuint {
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
