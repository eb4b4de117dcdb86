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
/// without a CPU conversion. With `colorConversion` `.cpu` (software renderers) Y'CbCr frames are
/// converted to RGBA with swscale as they are uploaded, and RGBA frames are drawn from one texture
/// by a plain texture fetch, nearest where the draw is 1:1. Lives on its GL
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
    public internal(set) var textureAllocations = 0
    /// A wall: when set, the target is a window onto a canvas (`wallPlacement.window`) and the
    /// picture is placed in `wallPlacement.region` of the canvas; `draw` then draws only the part
    /// the window shows (see `wallPiece`). nil (the default): the picture is placed in the bounds.
    public var wallPlacement: WallPlacement?
    /// A mosaic output: the canvas regions (and their gravities) that `draw(mosaic:bounds:)`
    /// draws, through `wallPlacement.window`, one frame each.
    public var mosaicRegions: [(region: PixelRect, gravity: VideoGravity?)] = []
    /// Drawn over the picture, in order, by `drawOverlays` (the outputs call it after the video).
    public var overlays: [OverlayPicture] = []
    let overlayLayer = OverlayLayer()
    /// Imports frames that stay in DMA-BUFs (zero-copy hardware decode); nil: such frames are
    /// copied to memory (and their decoder told to copy).
    public var dmabufImporter: DMABufImporter?
    /// DMA-BUF frames that could be neither imported nor copied to memory: the background was
    /// drawn in their place (their decoder was told, and copies the frames after them).
    public private(set) var framesNotDrawn = 0
    /// Of `framesNotDrawn`, those larger than `GL_MAX_TEXTURE_SIZE`.
    public private(set) var framesTooLarge = 0
    /// Pictures drawn as a transition's mix.
    public private(set) var mixedDraws = 0
    /// Where Y'CbCr frames become RGB: `.shader` (the default) draws their planes with the
    /// colour-conversion shader; `.cpu` converts each to RGBA with swscale as it is uploaded
    /// (`RGBAConverter.convertInBands`: a band of 64 rows at a time into one small buffer, reused)
    /// and draws one texture with a plain fetch: the
    /// faster way on a software renderer. Set from the output's capabilities when it opens.
    public var colorConversion: ColorConversion = .shader
    /// Frames the cpu conversion could not convert (drawn by the shader instead).
    public private(set) var conversionFailures = 0
    /// Pictures of the cpu conversion shown 1:1 by a copy rather than drawn: converted into the
    /// layer's texture and copied into the target (`copyPicture`), or converted straight into
    /// `directTarget` (`directUploads`).
    public private(set) var copiedDraws = 0
    /// Of `copiedDraws`, those converted straight into `directTarget`.
    public private(set) var directUploads = 0
    /// An offscreen target this layer draws into that it may also write directly: while it is the
    /// bound framebuffer, a picture of the cpu conversion shown 1:1 is converted into it with no
    /// texture of the layer's own in between (1080p: 8 MB less, and no copy).
    public var directTarget: Framebuffer?
    /// The read framebuffer of those copies (made at the first).
    var copyFramebuffer: GLuint = 0
    /// Made at the first frame converted on the CPU; it keeps the one buffer the conversion uses.
    var rgbaConverter: RGBAConverter?
    /// `GL_MAX_TEXTURE_SIZE` of the context the layer draws with (asked at the first draw).
    private lazy var maxTextureSize = currentMaxTextureSize()
    /// The EGL images of the DMA-BUF frames drawn by the last draw call, each with the frame it
    /// shows (kept alive with it): reused when the same frame is drawn again, released (the image
    /// destroyed, on this thread) when the next draw call no longer draws it. The one owner.
    var imports: [ImportedFrame] = []
    /// The imports of the draw call before this one: what this call may reuse.
    var previousImports: [ImportedFrame] = []

    var programs: [ProgramKind: LayerProgram] = [:]
    var textures = [PlaneTexture](repeating: PlaneTexture(), count: 3)
    var vertexArray: GLuint = 0
    /// What the bound program's uniforms were last set for.
    var lastState: UniformState?
    /// The source rectangle each program's uniform holds.
    var lastSourceRect: [ProgramKind: TextureRect] = [:]

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
        // Each program is compiled when a picture first needs it: with the cpu conversion a 1:1
        // picture is copied, not drawn, and the Y'CbCr program would cost the start 5-10 ms for nothing.
        try checkGL("PlayerLayer setup")
    }

    deinit {
        for i in textures.indices where textures[i].name != 0 { glDeleteTextures(1, &textures[i].name) }
        glDeleteVertexArrays(1, &vertexArray)
        if copyFramebuffer != 0 { glDeleteFramebuffers(1, &copyFramebuffer) }
        for program in programs.values { glDeleteProgram(program.name) }
    }

    /// Draws `frame` (or only the background when nil) into `bounds` of the currently bound
    /// framebuffer, which is `targetHeight` pixels high (default: the bottom of `bounds`).
    /// `gravity` overrides the layer's own for this frame (a playlist item's choice).
    /// `mix` (a transition): `mix.other` is drawn first and the frame blended over it, so that the
    /// picture is frameWeight x frame + otherWeight x other + the rest x background.
    public func draw(_ frame: VideoFrame?, bounds: PixelRect, targetHeight: Int? = nil, gravity: VideoGravity? = nil,
                     mix: FrameMix<VideoFrame>? = nil) throws {
        beginImports()
        defer { previousImports = [] }
        let targetHeight = targetHeight ?? bounds.y + bounds.height
        clear(bounds, targetHeight: targetHeight)
        defer { glDisable(GLenum(GL_SCISSOR_TEST)) }
        guard let frame else {
            videoRect = nil
            return
        }
        try mixing(mix, other: { other in
            if let wallPlacement {
                try drawPiece(other, region: wallPlacement.region, window: wallPlacement.window, bounds: bounds,
                              targetHeight: targetHeight, gravity: gravity)
            } else {
                try drawFrame(other, bounds: bounds, targetHeight: targetHeight, gravity: gravity)
            }
        }) {
            if let wallPlacement {
                videoRect = nil
                try drawPiece(frame, region: wallPlacement.region, window: wallPlacement.window, bounds: bounds,
                              targetHeight: targetHeight, gravity: gravity)
                return
            }
            try drawFrame(frame, bounds: bounds, targetHeight: targetHeight, gravity: gravity)
        }
    }

    /// Draws `mix.other` (through `other`) and then the frame (through `frame`), each blended over
    /// what is drawn with a constant alpha (`FrameMix.blendAlphas`); without a mix, `frame` alone.
    private func mixing(_ mix: FrameMix<VideoFrame>?, other: (VideoFrame) throws -> Void, frame: () throws -> Void) throws {
        guard let mix else { return try frame() }
        let alphas = mix.blendAlphas
        defer { glDisable(GLenum(GL_BLEND)) }
        if let otherFrame = mix.other, alphas.other > 0 {
            blend(alpha: alphas.other)
            try other(otherFrame)
        }
        if alphas.frame > 0 {
            blend(alpha: alphas.frame)
            try frame()
        }
        mixedDraws += 1
    }

    private func blend(alpha: Float) {
        guard alpha < 1 else { return glDisable(GLenum(GL_BLEND)) }
        glEnable(GLenum(GL_BLEND))
        glBlendColor(0, 0, 0, alpha)
        glBlendFunc(GLenum(GL_CONSTANT_ALPHA), GLenum(GL_ONE_MINUS_CONSTANT_ALPHA))
    }

    /// One region's picture on a wall: `frame` placed by gravity in `region` of the canvas.
    public struct WallRegionFrame {
        public var frame: VideoFrame?
        public var region: PixelRect
        public var gravity: VideoGravity?
        /// A transition's mix for this region's picture.
        public var mix: FrameMix<VideoFrame>?
        public init(frame: VideoFrame?, region: PixelRect, gravity: VideoGravity? = nil, mix: FrameMix<VideoFrame>? = nil) {
            self.frame = frame
            self.region = region
            self.gravity = gravity
            self.mix = mix
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
            try mixing(region.mix, other: { other in
                try drawPiece(other, region: region.region, window: window, bounds: bounds, targetHeight: targetHeight,
                              gravity: region.gravity)
            }) {
                try drawPiece(frame, region: region.region, window: window, bounds: bounds, targetHeight: targetHeight,
                              gravity: region.gravity)
            }
        }
    }

    /// One frame per `mosaicRegions` entry, drawn through `wallPlacement.window`; without those,
    /// the first frame as `draw` would.
    public func draw(mosaic frames: [VideoFrame?], bounds: PixelRect, mixes: [FrameMix<VideoFrame>?] = []) throws {
        guard let window = wallPlacement?.window, !mosaicRegions.isEmpty else {
            try draw(frames.first ?? nil, bounds: bounds, mix: mixes.first ?? nil)
            return
        }
        try draw(regions: zip(frames, mosaicRegions).enumerated().map { i, pair in
            WallRegionFrame(frame: pair.0, region: pair.1.region, gravity: pair.1.gravity, mix: i < mixes.count ? mixes[i] : nil)
        }, window: window, bounds: bounds)
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
        let shaderKind: ProgramKind = format.bytesPerSample == 2 && highDepthSampling == .integer ? .integer : .float
        var kind: ProgramKind = format == .rgba ? .rgb : shaderKind
        if colorConversion == .cpu && format.isYCbCr {
            // The cpu colour conversion: the frame becomes RGBA as it is uploaded (the decode
            // thread's queue and the player hold the decoder's own frames: 1080p 4:2:0 is 3 MB,
            // RGBA 8 MB). A frame swscale cannot convert is drawn by the shader instead.
            let copyRect = piece == nil ? oneToOneRect(frame, bounds: bounds, gravity: gravity) : nil
            if let copyRect, let target = directTarget, target.height == targetHeight, target.isBound,
               RGBAConverter.convertsInBands(frame) {
                do {
                    try convert(frame, into: target, at: copyRect)
                    StartupMarks.mark("first-upload")
                    return
                } catch {
                    conversionFailures += 1
                }
            }
            do {
                let bottomUp = try uploadConverted(frame, bottomUp: copyRect != nil)
                StartupMarks.mark("first-upload")
                kind = .rgb
                if bottomUp, let copyRect {
                    try copyPicture(frame, to: copyRect, targetHeight: targetHeight)
                    return
                }
            } catch {
                conversionFailures += 1
            }
        }
        let program = try program(kind)
        if kind != .rgb || format == .rgba {
            try upload(frame, integer: kind == .integer)
            StartupMarks.mark("first-upload")
        }

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

    /// Where `frame` goes when it is shown 1:1: unturned, its pixels square, the rectangle inside
    /// `bounds`, and nothing blending (no transition's mix): nil otherwise.
    private func oneToOneRect(_ frame: VideoFrame, bounds: PixelRect, gravity: VideoGravity?) -> PixelRect? {
        let turn = frame.rotation + rotation
        guard turn == .none, frame.displayWidth == frame.width, glIsEnabled(GLenum(GL_BLEND)) == GLboolean(GL_FALSE) else { return nil }
        let rect = Render.videoRect(contentWidth: frame.displayWidth, contentHeight: frame.height, bounds: bounds,
                                    gravity: gravity ?? self.gravity, rotation: turn)
        guard rect.width == frame.width, rect.height == frame.height, rect.x >= bounds.x, rect.y >= bounds.y,
              rect.x + rect.width <= bounds.x + bounds.width, rect.y + rect.height <= bounds.y + bounds.height else { return nil }
        return rect
    }

    /// Shows the converted picture (stored bottom-up in the first texture) 1:1 at `rect` with
    /// `glBlitFramebuffer`: the same pixels a nearest 1:1 draw gives, and llvmpipe does it as a
    /// memory copy instead of shading every pixel (1080p: about 1.5 ms of CPU instead of 13).
    private func copyPicture(_ frame: VideoFrame, to rect: PixelRect, targetHeight: Int) throws {
        var readBinding: GLint = 0
        glGetIntegerv(GLenum(GL_READ_FRAMEBUFFER_BINDING), &readBinding)
        if copyFramebuffer == 0 { glGenFramebuffers(1, &copyFramebuffer) }
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), copyFramebuffer)
        glFramebufferTexture2D(GLenum(GL_READ_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), textures[0].name, 0)
        defer {
            // Detached again, so that the framebuffer keeps no texture alive once it is remade.
            glFramebufferTexture2D(GLenum(GL_READ_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), 0, 0)
            glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), GLuint(readBinding))
        }
        // The rectangle is inside the bounds: no scissor (a scissored blit is no plain copy).
        glDisable(GLenum(GL_SCISSOR_TEST))
        let y = targetHeight - rect.y - rect.height
        glBlitFramebuffer(0, 0, GLint(frame.width), GLint(frame.height), GLint(rect.x), GLint(y), GLint(rect.x + rect.width),
                          GLint(y + rect.height), GLbitfield(GL_COLOR_BUFFER_BIT), GLenum(GL_NEAREST))
        try checkGL("glBlitFramebuffer(converted picture, 1:1)")
        videoRect = rect
        copiedDraws += 1
    }

    /// Converts `frame` into `target`'s own pixels at `rect` (inside it), bottom row first as GL
    /// stores them: the picture a 1:1 draw or copy gives, with no texture of the layer's between.
    private func convert(_ frame: VideoFrame, into target: Framebuffer, at rect: PixelRect) throws {
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_2D), target.texture)
        // Unbound again: nothing drawn into the target may sample it.
        defer { glBindTexture(GLenum(GL_TEXTURE_2D), 0) }
        try convertIntoBoundTexture(frame, flipped: true, x: rect.x, y: target.height - rect.y - rect.height)
        try checkGL("glTexSubImage2D(converted into the target)")
        videoRect = rect
        copiedDraws += 1
        directUploads += 1
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
}
