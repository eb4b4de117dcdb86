import Media

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
            return ColorConversionChoice(conversion: .cpu, reason: "\(software) is a software rasterizer: frames are converted to RGBA with swscale on the decode thread")
        }
        return ColorConversionChoice(conversion: .shader, reason: "a GPU renderer converts in the shader")
    }
}
