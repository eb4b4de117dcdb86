/// Where Y'CbCr becomes R'G'B' for the screen.
public enum ColorConversion: String, Sendable, CaseIterable {
    /// The player layer's shader converts the planes as it draws them (any format, any scaling).
    case shader
    /// The player layer converts each frame to RGBA with swscale as it uploads it (`RGBAConverter`,
    /// into one reused buffer: decode threads queue frames as decoded, which are smaller) and draws
    /// one RGBA texture with a plain texture fetch: for software renderers (llvmpipe), where running
    /// the conversion shader over every pixel costs more than the whole conversion on the CPU.
    case cpu
}

/// `display.conversion`: `auto` chooses from the renderer when the output opens (Render's
/// `chooseColorConversion`); `shader` and `cpu` force one.
public enum ColorConversionMode: String, Sendable, CaseIterable {
    case auto, shader, cpu
}

/// What an output's EGL display can do with DMA-BUFs (zero-copy hardware frames), read once from
/// its extensions when the output opens.
public struct DMABufDisplaySupport: Sendable, Equatable {
    /// `EGL_EXT_image_dma_buf_import` (and `EGL_KHR_image_base`).
    public var importsDMABufs: Bool
    /// `EGL_EXT_image_dma_buf_import_modifiers`: tiled buffers.
    public var importsModifiers: Bool
    /// `GL_OES_EGL_image_external_essl3`: the shader can sample the image.
    public var samplesExternalImages: Bool
    /// `GL_RENDERER`, for messages.
    public var renderer: String
    /// Why the output's importer could not be made although the extensions are there (nil: it
    /// was made, or the extensions say it cannot be).
    public var importerFailure: String?
    /// The DRM fourccs the display lists as importable (`eglQueryDmaBufFormatsEXT`); nil where it
    /// does not list them (then any format is tried).
    public var formats: [UInt32]?

    public init(importsDMABufs: Bool, importsModifiers: Bool, samplesExternalImages: Bool, renderer: String,
                importerFailure: String? = nil, formats: [UInt32]? = nil) {
        self.importsDMABufs = importsDMABufs
        self.importsModifiers = importsModifiers
        self.samplesExternalImages = samplesExternalImages
        self.renderer = renderer
        self.importerFailure = importerFailure
        self.formats = formats
    }

    /// No DMA-BUF import at all (no output, or an output that cannot import).
    public static func none(renderer: String = "no output") -> DMABufDisplaySupport {
        DMABufDisplaySupport(importsDMABufs: false, importsModifiers: false, samplesExternalImages: false, renderer: renderer)
    }

    /// Whether hardware frames may stay in DMA-BUFs for this output.
    public var canImport: Bool { importsDMABufs && samplesExternalImages && importerFailure == nil }
}

/// What an output can do, as it says when it opens: everything a decoder needs to know before its
/// first frame (which form to give frames in, how large they may be, whether hardware frames may
/// stay in DMA-BUFs). An output is opened before its players, and its capabilities are given to
/// the session and the media backend when they are made: no decoder waits for a later choice.
///
/// They come from the output's EGL display and GL context, which an output keeps for its whole
/// life (a KMS output keeps them across displays that come and go: a display that comes back gets
/// a new surface and modeset, not a new context), so they do not change while it lives. The
/// refresh is the mode's when the output opens (nil for a KMS output whose display is not
/// connected yet); presentation follows the output's clock, not this figure.
public struct OutputCapabilities: Sendable, Equatable {
    /// The output's name (`headless-0`, `HDMI-A-1`, ...).
    public var name: String
    /// `GL_RENDERER`.
    public var renderer: String
    /// The refresh of the output's mode when it opened; nil while unknown.
    public var refresh: RefreshRate?
    /// Where Y'CbCr becomes RGB for this output (`display.conversion` and the renderer decide).
    public var colorConversion: ColorConversion
    /// Why that conversion.
    public var colorConversionReason: String
    /// The largest texture side the output can draw (`GL_MAX_TEXTURE_SIZE`): larger frames are
    /// scaled down on the decode thread. nil: no limit (frames keep their size).
    public var maxTextureSize: Int?
    /// What the output can import as DMA-BUFs.
    public var dmabuf: DMABufDisplaySupport
    /// The scan-out format in use (`XR24`, `XR30`); nil for an output that scans out nothing
    /// (headless).
    public var scanoutFormat: String?

    public init(name: String, renderer: String, refresh: RefreshRate?, colorConversion: ColorConversion,
                colorConversionReason: String, maxTextureSize: Int?, dmabuf: DMABufDisplaySupport, scanoutFormat: String? = nil) {
        self.name = name
        self.renderer = renderer
        self.refresh = refresh
        self.colorConversion = colorConversion
        self.colorConversionReason = colorConversionReason
        self.maxTextureSize = maxTextureSize.map { max(1, $0) }
        self.dmabuf = dmabuf
        self.scanoutFormat = scanoutFormat
    }

    /// Frames as decoded, for decoding with no output to show them (checks, tools, tests): the
    /// shader's conversion (frames stay Y'CbCr), no size limit, no DMA-BUF import.
    public static let unconstrained = OutputCapabilities(
        name: "none", renderer: "none", refresh: nil, colorConversion: .shader,
        colorConversionReason: "no output: frames stay as decoded", maxTextureSize: nil, dmabuf: .none())

    /// `width` x `height` scaled down (same factor both ways, rounded, at least 1) so that no side
    /// exceeds `maxSide`; unchanged when it fits.
    public static func fit(width: Int, height: Int, maxSide: Int) -> (width: Int, height: Int) {
        guard maxSide > 0, width > maxSide || height > maxSide else { return (width, height) }
        let scale = Double(maxSide) / Double(max(width, height))
        return (min(maxSide, max(1, Int((Double(width) * scale).rounded()))),
                min(maxSide, max(1, Int((Double(height) * scale).rounded()))))
    }
}
