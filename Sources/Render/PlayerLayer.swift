import CGLES
import Media
import Playback

/// How 10-bit samples (in 16-bit words) are read by the shader.
public enum HighDepthSampling: String, Sendable, CaseIterable {
    /// 16-bit normalised textures (`GL_EXT_texture_norm16`: R16/RG16), filtered by the GPU.
    case normalized
    /// 16-bit integer textures (R16UI/RG16UI, core GLES 3), filtered in the shader: for GPUs
    /// without `GL_EXT_texture_norm16`.
    case integer
}

/// Draws decoded frames with OpenGL ES: the planes are uploaded into textures that are kept from
/// frame to frame, and a shader converts Y'CbCr to RGB with the frame's own matrix, range, bit depth
/// and chroma siting. The picture is turned by the frame's and the display's rotation and placed by
/// `gravity` on the `background` colour.
///
/// Draws yuv420p, yuvj420p, nv12, yuv422p, yuv444p, yuv420p10le (and 4:2:2/4:4:4 10-bit) and p010
/// without a CPU conversion. Frames already converted to RGBA (`ColorConversion.cpu`) are drawn
/// from one texture by a plain texture fetch, nearest where the draw is 1:1. Lives on its GL
/// context's thread; owns its GL objects. The render path allocates nothing per frame: textures
/// are made once per plane size and format, uniforms are set only when they change.
public final class PlayerLayer {
    public var gravity: VideoGravity = .resizeAspect
    /// The display's own turn (a portrait screen): the picture is turned clockwise by this in the
    /// output's pixels, on top of the frame's own rotation.
    public var rotation: Rotation = .none
    public var background: RGBColor = .black
    /// Where the last frame was drawn, in the target's pixels (top-left origin); nil when no frame
    /// was drawn. May extend past the bounds with `.resizeAspectFill`.
    public private(set) var videoRect: PixelRect?
    /// How 16-bit planes are sampled (chosen from the context's extensions unless forced).
    public let highDepthSampling: HighDepthSampling
    /// Textures made so far (one per plane per size and storage format): stays put while frames
    /// of one size and format follow each other.
    public private(set) var textureAllocations = 0
    /// A wall: when set, the target is a window onto a canvas (`wallPlacement.window`) and the
    /// picture is placed in `wallPlacement.region` of the canvas; `draw` then draws only the part
    /// the window shows (see `wallPiece`). nil (the default): the picture is placed in the bounds.
    public var wallPlacement: WallPlacement?
    /// A mosaic output: the canvas regions (and their gravities) that `draw(mosaic:bounds:)`
    /// draws, through `wallPlacement.window`, one frame each.
    public var mosaicRegions: [(region: PixelRect, gravity: VideoGravity?)] = []
    /// Imports frames that stay in DMA-BUFs (zero-copy hardware decode); nil: such frames are
    /// copied to memory (and their decoder told to copy).
    public var dmabufImporter: DMABufImporter?
    /// DMA-BUF frames that could be neither imported nor copied to memory: the background was
    /// drawn in their place (their decoder was told, and copies the frames after them).
    public private(set) var framesNotDrawn = 0
    /// Of `framesNotDrawn`, those larger than `GL_MAX_TEXTURE_SIZE`.
    public private(set) var framesTooLarge = 0
    /// `GL_MAX_TEXTURE_SIZE` of the context the layer draws with (asked at the first draw).
    private lazy var maxTextureSize = currentMaxTextureSize()
    /// The EGL images of the DMA-BUF frames drawn by the last draw call, each with the frame it
    /// shows (kept alive with it): reused when the same frame is drawn again, released (the image
    /// destroyed, on this thread) when the next draw call no longer draws it. The one owner.
    private var imports: [ImportedFrame] = []
    /// The imports of the draw call before this one: what this call may reuse.
    private var previousImports: [ImportedFrame] = []

    private var programs: [ProgramKind: LayerProgram] = [:]
    private var textures = [PlaneTexture](repeating: PlaneTexture(), count: 3)
    private var vertexArray: GLuint = 0
    /// What the bound program's uniforms were last set for.
    private var lastState: UniformState?
    /// The source rectangle each program's uniform holds.
    private var lastSourceRect: [ProgramKind: TextureRect] = [:]

    /// - Parameter highDepthSampling: nil picks `.normalized` where `GL_EXT_texture_norm16` exists.
    public init(highDepthSampling: HighDepthSampling? = nil) throws {
        let extensions = currentGLExtensions()
        if let highDepthSampling {
            if highDepthSampling == .normalized && !extensions.contains("GL_EXT_texture_norm16") {
                throw RenderError(call: "PlayerLayer.init", detail: "normalized 16-bit sampling needs GL_EXT_texture_norm16, which this GL lacks")
            }
            self.highDepthSampling = highDepthSampling
        } else {
            self.highDepthSampling = extensions.contains("GL_EXT_texture_norm16") ? .normalized : .integer
        }
        glGenVertexArrays(1, &vertexArray)
        programs.reserveCapacity(3)
        _ = try program(.float)
        try checkGL("PlayerLayer setup")
    }

    deinit {
        for i in textures.indices where textures[i].name != 0 { glDeleteTextures(1, &textures[i].name) }
        glDeleteVertexArrays(1, &vertexArray)
        for program in programs.values { glDeleteProgram(program.name) }
    }

    /// Draws `frame` (or only the background when nil) into `bounds` of the currently bound
    /// framebuffer, which is `targetHeight` pixels high (default: the bottom of `bounds`).
    /// `gravity` overrides the layer's own for this frame (a playlist item's choice).
    public func draw(_ frame: VideoFrame?, bounds: PixelRect, targetHeight: Int? = nil, gravity: VideoGravity? = nil) throws {
        beginImports()
        defer { previousImports = [] }
        let targetHeight = targetHeight ?? bounds.y + bounds.height
        clear(bounds, targetHeight: targetHeight)
        defer { glDisable(GLenum(GL_SCISSOR_TEST)) }
        guard let frame else {
            videoRect = nil
            return
        }
        if let wallPlacement {
            videoRect = nil
            try drawPiece(frame, region: wallPlacement.region, window: wallPlacement.window, bounds: bounds,
                          targetHeight: targetHeight, gravity: gravity)
            return
        }
        try drawFrame(frame, bounds: bounds, targetHeight: targetHeight, gravity: gravity)
    }

    /// One region's picture on a wall: `frame` placed by gravity in `region` of the canvas.
    public struct WallRegionFrame {
        public var frame: VideoFrame?
        public var region: PixelRect
        public var gravity: VideoGravity?
        public init(frame: VideoFrame?, region: PixelRect, gravity: VideoGravity? = nil) {
            self.frame = frame
            self.region = region
            self.gravity = gravity
        }
    }

    /// A mosaic: clears `bounds` to the background once, then draws the part of each region's
    /// picture that `window` (the output's rectangle on the canvas) shows. `wallPlacement` is not
    /// used; `videoRect` is the last part drawn.
    public func draw(regions: [WallRegionFrame], window: PixelRect, bounds: PixelRect, targetHeight: Int? = nil) throws {
        beginImports()
        defer { previousImports = [] }
        let targetHeight = targetHeight ?? bounds.y + bounds.height
        clear(bounds, targetHeight: targetHeight)
        defer { glDisable(GLenum(GL_SCISSOR_TEST)) }
        videoRect = nil
        for region in regions {
            guard let frame = region.frame else { continue }
            try drawPiece(frame, region: region.region, window: window, bounds: bounds, targetHeight: targetHeight,
                          gravity: region.gravity)
        }
    }

    /// One frame per `mosaicRegions` entry, drawn through `wallPlacement.window`; without those,
    /// the first frame as `draw` would.
    public func draw(mosaic frames: [VideoFrame?], bounds: PixelRect) throws {
        guard let window = wallPlacement?.window, !mosaicRegions.isEmpty else {
            try draw(frames.first ?? nil, bounds: bounds)
            return
        }
        try draw(regions: zip(frames, mosaicRegions).map { WallRegionFrame(frame: $0, region: $1.region, gravity: $1.gravity) },
                 window: window, bounds: bounds)
    }

    private func drawPiece(_ frame: VideoFrame, region: PixelRect, window: PixelRect, bounds: PixelRect,
                           targetHeight: Int, gravity: VideoGravity?) throws {
        guard let piece = wallPiece(WallPlacement(window: window, region: region), bounds: bounds, displayRotation: rotation,
                                    contentWidth: frame.displayWidth, contentHeight: frame.height,
                                    gravity: gravity ?? self.gravity, contentRotation: frame.rotation) else { return }
        try drawFrame(frame, bounds: bounds, targetHeight: targetHeight, gravity: gravity, piece: piece)
    }

    /// Uploads and draws `frame`: placed in `bounds` by gravity, or only `piece` of it.
    private func drawFrame(_ frame: VideoFrame, bounds: PixelRect, targetHeight: Int, gravity: VideoGravity?,
                           piece: WallPiece? = nil) throws {
        if let prime = frame.drmPrime {
            let texture: DMABufTexture
            do {
                texture = try importFrame(frame, prime)
            } catch {
                // The decoder copies the rest of the item (and says so); this frame, and any
                // already queued, are copied here: no blank picture.
                prime.reportImportFailure("\(error)")
                let copy: VideoFrame
                do {
                    copy = try frame.copiedToMemory()
                } catch {
                    // Neither imported nor copied (a DRM PRIME frame without a frames context to
                    // copy from, as some v4l2m2m builds give): the background for this frame only,
                    // never an error that would end the presentation loop.
                    framesNotDrawn += 1
                    videoRect = nil
                    return
                }
                try drawFrame(copy, bounds: bounds, targetHeight: targetHeight, gravity: gravity, piece: piece)
                return
            }
            try drawExternal(texture, contentWidth: frame.displayWidth, contentHeight: frame.height,
                             contentRotation: frame.rotation, bounds: bounds, targetHeight: targetHeight,
                             gravity: gravity, piece: piece)
            return
        }
        // A frame larger than a texture can be (the decode thread scales such frames down when it
        // knows the output's limit): the background for this frame, never an error that would
        // end the presentation loop.
        if frame.width > maxTextureSize || frame.height > maxTextureSize {
            framesNotDrawn += 1
            framesTooLarge += 1
            videoRect = nil
            return
        }
        let format = frame.pixelFormat
        let kind: ProgramKind = format == .rgba ? .rgb : format.bytesPerSample == 2 && highDepthSampling == .integer ? .integer : .float
        let program = try program(kind)
        try upload(frame, integer: kind == .integer)

        let turn = frame.rotation + rotation
        let rect = piece?.destination ?? Render.videoRect(contentWidth: frame.displayWidth, contentHeight: frame.height, bounds: bounds,
                                                          gravity: gravity ?? self.gravity, rotation: turn)
        videoRect = rect
        glUseProgram(program.name)
        setSourceRect(program, kind, piece?.source ?? .full)
        if kind == .rgb {
            try drawRGBA(frame, program: program, rect: rect, source: piece?.source ?? .full, turn: turn, targetHeight: targetHeight)
            return
        }
        let state = UniformState(program: kind, matrix: frame.colorMatrix, range: frame.colorRange, format: format,
                                 chroma: frame.chromaLocation, turn: turn, lumaWidth: textures[0].width,
                                 lumaHeight: textures[0].height, chromaWidth: textures[1].width,
                                 chromaHeight: textures[1].height)
        if state != lastState {
            setUniforms(program, state)
            lastState = state
        }
        for i in 0..<3 {
            glActiveTexture(GLenum(GL_TEXTURE0 + Int32(i)))
            // The interleaved layouts have no third plane: unit 2 gets the chroma plane (unused).
            glBindTexture(GLenum(GL_TEXTURE_2D), textures[format.interleavedChroma && i == 2 ? 1 : i].name)
        }
        drawQuad(rect, targetHeight: targetHeight)
        try checkGL("glDrawArrays")
    }

    /// An RGBA frame: one texture, sampled nearest when each texel lands on one pixel (llvmpipe
    /// then copies it), linear when the picture is scaled.
    private func drawRGBA(_ frame: VideoFrame, program: LayerProgram, rect: PixelRect, source: TextureRect,
                          turn: Rotation, targetHeight: Int) throws {
        let state = UniformState(program: .rgb, matrix: frame.colorMatrix, range: frame.colorRange, format: .rgba,
                                 chroma: .center, turn: turn, lumaWidth: 0, lumaHeight: 0, chromaWidth: 0, chromaHeight: 0)
        if state != lastState {
            glUniform1i(program.quarterTurns, GLint(turn.quarterTurns))
            lastState = state
        }
        // The frame's pixels the quad shows, against the rectangle's (turned back).
        let sourceWidth = (source.x1 - source.x0) * Double(frame.width), sourceHeight = (source.y1 - source.y0) * Double(frame.height)
        let (shownWidth, shownHeight) = turn.swapsAxes ? (rect.height, rect.width) : (rect.width, rect.height)
        let oneToOne = abs(sourceWidth - Double(shownWidth)) < 1e-6 && abs(sourceHeight - Double(shownHeight)) < 1e-6
        let filter = oneToOne ? GL_NEAREST : GL_LINEAR
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_2D), textures[0].name)
        if textures[0].filter != filter {
            glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), filter)
            glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), filter)
            textures[0].filter = filter
        }
        drawQuad(rect, targetHeight: targetHeight)
        try checkGL("glDrawArrays(rgba)")
    }

    /// Draws an imported DMA-BUF image (already converted to RGB by the sampler, with the colour
    /// hints given at import) like a frame: same gravity, rotation and background.
    public func draw(_ image: DMABufTexture, bounds: PixelRect, targetHeight: Int? = nil,
                     gravity: VideoGravity? = nil, imageRotation: Rotation = .none) throws {
        let targetHeight = targetHeight ?? bounds.y + bounds.height
        clear(bounds, targetHeight: targetHeight)
        defer { glDisable(GLenum(GL_SCISSOR_TEST)) }
        // On a wall, only the part of the image the window shows.
        var piece: WallPiece?
        if let wallPlacement {
            piece = wallPiece(wallPlacement, bounds: bounds, displayRotation: rotation, contentWidth: image.width,
                              contentHeight: image.height, gravity: gravity ?? self.gravity, contentRotation: imageRotation)
            guard piece != nil else {
                videoRect = nil
                return
            }
        }
        try drawExternal(image, contentWidth: image.width, contentHeight: image.height, contentRotation: imageRotation,
                         bounds: bounds, targetHeight: targetHeight, gravity: gravity, piece: piece)
    }

    /// Draws an external image placed by gravity in `bounds`, or only `piece` of it.
    private func drawExternal(_ image: DMABufTexture, contentWidth: Int, contentHeight: Int, contentRotation: Rotation,
                              bounds: PixelRect, targetHeight: Int, gravity: VideoGravity?, piece: WallPiece?) throws {
        let program = try program(.external)
        let turn = contentRotation + rotation
        let rect = piece?.destination ?? Render.videoRect(contentWidth: contentWidth, contentHeight: contentHeight, bounds: bounds,
                                                          gravity: gravity ?? self.gravity, rotation: turn)
        videoRect = rect
        glUseProgram(program.name)
        glUniform1i(program.quarterTurns, GLint(turn.quarterTurns))
        setSourceRect(program, .external, piece?.source ?? .full)
        lastState = nil
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_EXTERNAL_OES), image.texture)
        drawQuad(rect, targetHeight: targetHeight)
        try checkGL("glDrawArrays(external image)")
    }

    /// A new draw call: the last call's imports may be reused; the rest are released when it ends.
    private func beginImports() {
        previousImports = imports
        imports = []
    }

    /// The EGL image of a DMA-BUF frame: the one made for it by the last draw call, or a new one.
    private func importFrame(_ frame: VideoFrame, _ prime: DRMPrimeFrame) throws -> DMABufTexture {
        if let done = imports.first(where: { $0.frame === frame }) ?? previousImports.first(where: { $0.frame === frame }) {
            if !imports.contains(where: { $0.frame === frame }) { imports.append(done) }
            return done.texture
        }
        guard let dmabufImporter else {
            throw RenderError(call: "PlayerLayer.draw", detail: "a DMA-BUF frame and no DMABufImporter on this layer")
        }
        let descriptor = try DMABufDescriptor(prime: prime.descriptor, colorMatrix: frame.colorMatrix,
                                              colorRange: frame.colorRange, chromaLocation: frame.chromaLocation)
        let texture = try dmabufImporter.importImage(descriptor)
        imports.append(ImportedFrame(frame: frame, texture: texture))
        return texture
    }

    /// Whether the DMA-BUF drawing program compiles here (`GL_OES_EGL_image_external_essl3`).
    public func prepareExternalImages() throws { _ = try program(.external) }

    // MARK: - Drawing

    private func clear(_ bounds: PixelRect, targetHeight: Int) {
        // GL's window origin is the bottom left. The scissor keeps the clear, and a fill's crop,
        // inside the bounds.
        glEnable(GLenum(GL_SCISSOR_TEST))
        glScissor(GLint(bounds.x), GLint(targetHeight - bounds.y - bounds.height), GLsizei(bounds.width), GLsizei(bounds.height))
        glClearColor(Float(background.red) / 255, Float(background.green) / 255, Float(background.blue) / 255, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
    }

    private func drawQuad(_ rect: PixelRect, targetHeight: Int) {
        glViewport(GLint(rect.x), GLint(targetHeight - rect.y - rect.height), GLsizei(rect.width), GLsizei(rect.height))
        glBindVertexArray(vertexArray)
        glDrawArrays(GLenum(GL_TRIANGLE_STRIP), 0, 4)
    }

    /// The part of the frame the quad shows (the whole frame but on a wall).
    private func setSourceRect(_ program: LayerProgram, _ kind: ProgramKind, _ rect: TextureRect) {
        guard lastSourceRect[kind] != rect else { return }
        glUniform4f(program.sourceRect, Float(rect.x0), Float(rect.y0), Float(rect.x1), Float(rect.y1))
        lastSourceRect[kind] = rect
    }

    private func setUniforms(_ program: LayerProgram, _ state: UniformState) {
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

    // MARK: - Textures

    /// Uploads the planes; a texture is (re)made only when its plane's size or storage format
    /// changes, and padded rows are read in place through `GL_UNPACK_ROW_LENGTH`.
    private func upload(_ frame: VideoFrame, integer: Bool) throws {
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        try frame.withPlanes { planes in
            for i in 0..<planes.count {
                let plane = planes[i]
                let storage = TextureStorage(plane, integer: integer)
                glActiveTexture(GLenum(GL_TEXTURE0 + Int32(i)))
                if textures[i].width != plane.width || textures[i].height != plane.height || textures[i].storage != storage {
                    try remakeTexture(i, width: plane.width, height: plane.height, storage: storage)
                } else {
                    glBindTexture(GLenum(GL_TEXTURE_2D), textures[i].name)
                }
                glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(plane.bytesPerRow / plane.bytesPerTexel))
                glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(plane.width), GLsizei(plane.height),
                                storage.format, storage.type, plane.bytes)
            }
        }
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
        try checkGL("glTexSubImage2D")
    }

    private func remakeTexture(_ i: Int, width: Int, height: Int, storage: TextureStorage) throws {
        // Immutable storage cannot be resized: a new size or format gets a new texture.
        if textures[i].name != 0 { glDeleteTextures(1, &textures[i].name) }
        glGenTextures(1, &textures[i].name)
        glBindTexture(GLenum(GL_TEXTURE_2D), textures[i].name)
        let filter = storage.filterable ? GL_LINEAR : GL_NEAREST
        textures[i].filter = filter
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), filter)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), filter)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
        glTexStorage2D(GLenum(GL_TEXTURE_2D), 1, storage.internalFormat, GLsizei(width), GLsizei(height))
        try checkGL("glTexStorage2D(\(width)x\(height), 0x\(String(storage.internalFormat, radix: 16)))")
        textures[i].width = width
        textures[i].height = height
        textures[i].storage = storage
        textureAllocations += 1
        lastState = nil  // the chroma offset depends on the texture size
    }

    // MARK: - Programs

    private func program(_ kind: ProgramKind) throws -> LayerProgram {
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

/// A DMA-BUF frame and its EGL image: the image is destroyed (with its texture) before the frame
/// is let go, so it never outlives the buffers it shows. Released one draw call after the frame was
/// last drawn, when that picture has been flushed and shown.
private final class ImportedFrame {
    let frame: VideoFrame
    private(set) var image: DMABufTexture?
    var texture: DMABufTexture { image! }
    init(frame: VideoFrame, texture: DMABufTexture) {
        self.frame = frame
        image = texture
    }
    deinit { image = nil }  // the EGL image first; the frame (and the decoder's buffers) after it
}

private enum ProgramKind: Hashable, CustomStringConvertible {
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

private struct LayerProgram {
    var name: GLuint
    var matrix: GLint
    var offset: GLint
    var interleaved: GLint
    var chromaOffset: GLint
    var chromaScale: GLint
    var quarterTurns: GLint
    var sourceRect: GLint
}

private struct UniformState: Equatable {
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

/// A texture's storage: sized internal format, and the upload's format and type.
private struct TextureStorage: Equatable {
    var internalFormat: GLenum = 0
    var format: GLenum = 0
    var type: GLenum = 0
    var filterable = true

    init() {}

    init(_ plane: Plane, integer: Bool) {
        let two = plane.components == 2
        if plane.components == 4 {
            internalFormat = GLenum(GL_RGBA8)
            format = GLenum(GL_RGBA)
            type = GLenum(GL_UNSIGNED_BYTE)
        } else if plane.bytesPerSample == 1 {
            internalFormat = GLenum(two ? GL_RG8 : GL_R8)
            format = GLenum(two ? GL_RG : GL_RED)
            type = GLenum(GL_UNSIGNED_BYTE)
        } else if integer {
            internalFormat = GLenum(two ? GL_RG16UI : GL_R16UI)
            format = GLenum(two ? GL_RG_INTEGER : GL_RED_INTEGER)
            type = GLenum(GL_UNSIGNED_SHORT)
            filterable = false
        } else {
            internalFormat = GLenum(two ? GL_RG16_EXT : GL_R16_EXT)
            format = GLenum(two ? GL_RG : GL_RED)
            type = GLenum(GL_UNSIGNED_SHORT)
        }
    }
}

private struct PlaneTexture {
    var name: GLuint = 0
    var width = 0
    var height = 0
    var storage = TextureStorage()
    /// GL_NEAREST or GL_LINEAR, as set on the texture.
    var filter = GL_LINEAR
}

/// The extensions of the current GL context.
func currentGLExtensions() -> Set<String> {
    guard let text = glGetString(GLenum(GL_EXTENSIONS)) else { return [] }
    return Set(String(cString: text).split(separator: " ").map(String.init))
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
