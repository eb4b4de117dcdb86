import Media
import Playback

/// The colour conversion an output uses, and why: chosen once, when the output starts.
public struct ColorConversionChoice: Sendable, Equatable {
    public var conversion: ColorConversion
    public var reason: String
}

/// Chooses where Y'CbCr becomes RGB for a GL renderer (`GL_RENDERER`). `auto`: on the CPU for
/// Mesa's software rasterizers (llvmpipe, softpipe, swrast), where the conversion shader over
/// every pixel is most of a frame's cost and a plain RGBA texture copy is several times cheaper;
/// in the shader on anything else (a GPU converts for free).
public func chooseColorConversion(_ mode: ColorConversionMode, renderer: String) -> ColorConversionChoice {
    switch mode {
    case .shader: return ColorConversionChoice(conversion: .shader, reason: "display.conversion is shader")
    case .cpu: return ColorConversionChoice(conversion: .cpu, reason: "display.conversion is cpu")
    case .auto:
        let lower = renderer.lowercased()
        if let software = ["llvmpipe", "softpipe", "swrast"].first(where: { lower.contains($0) }) {
            return ColorConversionChoice(conversion: .cpu, reason: "\(software) is a software rasterizer: frames are converted to RGBA with swscale as they are uploaded")
        }
        return ColorConversionChoice(conversion: .shader, reason: "a GPU renderer converts in the shader")
    }
}

/// What an output drawing with `context` through `layer` can do, read once as it opens (on its
/// presentation thread, where the context is current), before any player is made for it: the
/// colour conversion for `mode` and the renderer (set on `layer` too), `GL_MAX_TEXTURE_SIZE`, and DMA-BUF import. Where
/// the EGL display can import DMA-BUFs, `layer` gets its importer (and the external-image shader)
/// here; where that fails, the capabilities say why and hardware frames are copied.
public func openOutputCapabilities(name: String, context: GLContext, layer: PlayerLayer, refresh: RefreshRate?,
                                   conversion mode: ColorConversionMode, scanoutFormat: String? = nil) -> OutputCapabilities {
    var dmabuf = DMABufDisplaySupport(context: context)
    if dmabuf.importsDMABufs && dmabuf.samplesExternalImages {
        do {
            let importer = try DMABufImporter(context: context)
            layer.dmabufImporter = importer
            try layer.prepareExternalImages()
            dmabuf.formats = importer.importableFormats()
        } catch {
            layer.dmabufImporter = nil
            dmabuf.importerFailure = "\(error)"
        }
    }
    let choice = chooseColorConversion(mode, renderer: context.renderer)
    layer.colorConversion = choice.conversion
    return OutputCapabilities(name: name, renderer: context.renderer, refresh: refresh, colorConversion: choice.conversion,
                              colorConversionReason: choice.reason, maxTextureSize: context.maxTextureSize, dmabuf: dmabuf,
                              scanoutFormat: scanoutFormat)
}
