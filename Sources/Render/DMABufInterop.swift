import Media
import Playback

extension DMABufDescriptor {
    public static let fourccR8 = DRMPrimeDescriptor.fourcc("R8  ")
    public static let fourccGR88 = DRMPrimeDescriptor.fourcc("GR88")
    public static let fourccRG88 = DRMPrimeDescriptor.fourcc("RG88")
    public static let fourccR16 = DRMPrimeDescriptor.fourcc("R16 ")
    public static let fourccGR1616 = DRMPrimeDescriptor.fourcc("GR32")
    public static let fourccRG1616 = DRMPrimeDescriptor.fourcc("RG32")

    /// The picture a hardware decoder's DRM PRIME frame holds, as one EGL image: a single layer as
    /// it is (NV12, P010: both planes in one image), or separate single-plane layers (VAAPI's
    /// export: R8 + GR88 for NV12, R16 + GR1616 for P010, three R8 for YU12; FFmpeg's own
    /// vaDeriveImage export and older Mesa name the chroma layer RG88 / RG1616 for the same
    /// NV12 / P010 surfaces, so those mean the same picture) joined under the
    /// fourcc of the whole picture, each plane keeping its own buffer, offset and pitch. The
    /// colour tags become the image's sampling hints. Throws, naming what does not fit, for
    /// layouts EGL cannot take as one image.
    public init(prime: DRMPrimeDescriptor, colorMatrix: ColorMatrix, colorRange: ColorRange,
                chromaLocation: ChromaLocation) throws {
        func fail(_ why: String) -> RenderError {
            RenderError(call: "DMABufDescriptor(prime:)", detail: why)
        }
        guard !prime.layers.isEmpty else { throw fail("the frame has no layers") }
        let names = prime.layers.map { DRMPrimeDescriptor.fourccName($0.fourcc).trimmingTrailingSpaces }
        let fourcc: UInt32
        if prime.layers.count == 1 {
            fourcc = prime.layers[0].fourcc
        } else {
            guard prime.layers.allSatisfy({ $0.planes.count == 1 }) else {
                throw fail("layers \(names.joined(separator: "+")) have several planes each")
            }
            switch prime.layers.map(\.fourcc) {
            case [Self.fourccR8, Self.fourccGR88], [Self.fourccR8, Self.fourccRG88]: fourcc = Self.fourccNV12
            case [Self.fourccR16, Self.fourccGR1616], [Self.fourccR16, Self.fourccRG1616]: fourcc = Self.fourccP010
            case [Self.fourccR8, Self.fourccR8, Self.fourccR8]: fourcc = Self.fourccYUV420
            default: throw fail("no single format for layers \(names.joined(separator: "+"))")
            }
        }
        let planes = prime.layers.flatMap(\.planes)
        guard (1...4).contains(planes.count) else { throw fail("\(planes.count) planes (EGL takes 1-4)") }
        var modifiers = Set<UInt64>()
        var out: [DMABufPlane] = []
        for (i, plane) in planes.enumerated() {
            guard prime.objects.indices.contains(plane.object) else {
                throw fail("plane \(i) is in object \(plane.object) of \(prime.objects.count)")
            }
            let object = prime.objects[plane.object]
            guard plane.offset >= 0, plane.pitch > 0 else { throw fail("plane \(i) has offset \(plane.offset), pitch \(plane.pitch)") }
            modifiers.insert(object.modifier)
            out.append(DMABufPlane(fd: object.fd, offset: plane.offset, pitch: plane.pitch))
        }
        guard modifiers.count == 1, let modifier = modifiers.first else {
            throw fail("the planes' buffers have different modifiers \(modifiers.sorted().map { "0x" + String($0, radix: 16) })")
        }
        self.init(width: prime.width, height: prime.height, fourcc: fourcc,
                  modifier: modifier == Self.modifierInvalid ? nil : modifier, planes: out,
                  colorMatrix: colorMatrix, colorRange: colorRange, chromaLocation: chromaLocation)
    }

    /// Whether the buffers are tiled (a modifier other than linear): EGL then needs
    /// `EGL_EXT_image_dma_buf_import_modifiers`.
    public var isTiled: Bool { (modifier ?? 0) != 0 }
}

private extension String {
    var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

extension DMABufDisplaySupport {
    /// What `context`'s EGL display and GL say they can do (`importerFailure` stays nil: the
    /// output sets it when its importer cannot be made).
    public init(context: GLContext) {
        self.init(importsDMABufs: context.eglExtensions.contains("EGL_EXT_image_dma_buf_import")
                      && context.eglExtensions.contains("EGL_KHR_image_base"),
                  importsModifiers: context.eglExtensions.contains("EGL_EXT_image_dma_buf_import_modifiers"),
                  samplesExternalImages: context.glExtensions.contains("GL_OES_EGL_image_external_essl3"),
                  renderer: context.renderer)
    }
}

/// The zero-copy decision (`FrameInteropTarget`) for one EGL display: `dmabuf` when the hardware
/// decoder's first frame is a DRM PRIME picture this display can import as one image (tiled
/// buffers only with the modifiers extension), else `copy`, with the reason.
public struct DMABufInterop: FrameInteropTarget {
    public let support: DMABufDisplaySupport
    public init(support: DMABufDisplaySupport) { self.support = support }

    public func chooseInterop(hardware: HardwareDecoding, firstFrame: Result<DRMPrimeDescriptor, MediaError>) -> InteropChoice {
        guard support.importsDMABufs else {
            return InteropChoice(.copy, "the EGL display (\(support.renderer)) lacks EGL_EXT_image_dma_buf_import")
        }
        guard support.samplesExternalImages else {
            return InteropChoice(.copy, "the GL (\(support.renderer)) lacks GL_OES_EGL_image_external_essl3")
        }
        if let failure = support.importerFailure {
            return InteropChoice(.copy, "the output's DMA-BUF importer could not be made: \(failure)")
        }
        let prime: DRMPrimeDescriptor
        switch firstFrame {
        case .failure(let error): return InteropChoice(.copy, "\(hardware.rawValue) gives no DRM PRIME frames: \(error.reason)")
        case .success(let d): prime = d
        }
        let descriptor: DMABufDescriptor
        do {
            descriptor = try DMABufDescriptor(prime: prime, colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left)
        } catch {
            return InteropChoice(.copy, "the DRM PRIME frame cannot be one EGL image: \(error)")
        }
        let format = DRMPrimeDescriptor.fourccName(descriptor.fourcc)
        let modifier = descriptor.modifier.map { "0x" + String($0, radix: 16) } ?? "none"
        if let listed = support.formats, !listed.contains(descriptor.fourcc) {
            return InteropChoice(.copy, "\(hardware.rawValue) frames are \(format) and the EGL display does not list it among the DMA-BUF formats it imports (\(listed.prefix(16).map { DRMPrimeDescriptor.fourccName($0).trimmingTrailingSpaces }.joined(separator: ", ")))")
        }
        if descriptor.isTiled && !support.importsModifiers {
            return InteropChoice(.copy, "\(hardware.rawValue) frames are tiled (modifier \(modifier)) and the EGL display lacks EGL_EXT_image_dma_buf_import_modifiers")
        }
        if descriptor.planes.count == 4 && !support.importsModifiers {
            return InteropChoice(.copy, "\(hardware.rawValue) frames have 4 planes and the EGL display lacks EGL_EXT_image_dma_buf_import_modifiers")
        }
        let layers = prime.layers.count == 1 ? "one layer" : "\(prime.layers.count) layers joined"
        return InteropChoice(.dmabuf, "\(hardware.rawValue) frames as DRM PRIME \(format) (\(layers), modifier \(modifier)) imported with EGL_EXT_image_dma_buf_import\(descriptor.isTiled ? "_modifiers" : "") on \(support.renderer)")
    }
}
