import CEGL
import CGLES
import Media

/// One plane of a DMA-BUF picture: the buffer's file descriptor (not owned: the caller keeps it
/// open until the import returns; EGL takes its own reference), where the plane starts and its
/// row pitch in bytes.
public struct DMABufPlane: Sendable, Equatable {
    public var fd: Int32
    public var offset: Int
    public var pitch: Int
    public init(fd: Int32, offset: Int, pitch: Int) {
        self.fd = fd
        self.offset = offset
        self.pitch = pitch
    }
}

/// A picture in DMA-BUF memory (a hardware decoder's output), as DRM describes it.
public struct DMABufDescriptor: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// DRM fourcc of the whole picture, e.g. `DMABufDescriptor.fourccNV12`.
    public var fourcc: UInt32
    /// DRM format modifier (tiling); nil for linear buffers or when the exporter gave none.
    public var modifier: UInt64?
    /// 1 to 4 planes.
    public var planes: [DMABufPlane]
    public var colorMatrix: ColorMatrix
    public var colorRange: ColorRange
    public var chromaLocation: ChromaLocation

    public init(width: Int, height: Int, fourcc: UInt32, modifier: UInt64? = nil, planes: [DMABufPlane],
                colorMatrix: ColorMatrix, colorRange: ColorRange, chromaLocation: ChromaLocation = .left) {
        self.width = width
        self.height = height
        self.fourcc = fourcc
        self.modifier = modifier
        self.planes = planes
        self.colorMatrix = colorMatrix
        self.colorRange = colorRange
        self.chromaLocation = chromaLocation
    }

    public static let fourccNV12 = DRMPrimeDescriptor.fourcc("NV12")
    public static let fourccP010 = DRMPrimeDescriptor.fourcc("P010")
    public static let fourccYUV420 = DRMPrimeDescriptor.fourcc("YU12")
    /// DRM_FORMAT_MOD_INVALID: "no modifier given".
    public static let modifierInvalid: UInt64 = 0x00ff_ffff_ffff_ffff
}

/// Imports DMA-BUF pictures as external GL textures without a copy
/// (`EGL_EXT_image_dma_buf_import`, with `EGL_EXT_image_dma_buf_import_modifiers` for tiled buffers,
/// and `GL_OES_EGL_image_external`). Made on, and used only from, its context's thread.
public final class DMABufImporter {
    private let context: GLContext
    /// Whether format modifiers can be passed (`EGL_EXT_image_dma_buf_import_modifiers`).
    public let supportsModifiers: Bool
    private let imageTargetTexture: PFNGLEGLIMAGETARGETTEXTURE2DOESPROC

    /// Throws a `RenderError` naming the missing extension when the context cannot import
    /// DMA-BUFs (llvmpipe on the surfaceless platform cannot).
    public init(context: GLContext) throws {
        self.context = context
        for needed in ["EGL_EXT_image_dma_buf_import", "EGL_KHR_image_base"] where !context.eglExtensions.contains(needed) {
            throw RenderError(call: "DMABufImporter.init", detail: "\(needed) is not available on this EGL display (\(context.renderer))")
        }
        guard context.glExtensions.contains("GL_OES_EGL_image_external") else {
            throw RenderError(call: "DMABufImporter.init", detail: "GL_OES_EGL_image_external is not available (\(context.renderer))")
        }
        guard let address = eglGetProcAddress("glEGLImageTargetTexture2DOES") else {
            throw RenderError.egl("eglGetProcAddress", detail: "glEGLImageTargetTexture2DOES not found")
        }
        imageTargetTexture = unsafeBitCast(address, to: PFNGLEGLIMAGETARGETTEXTURE2DOESPROC.self)
        supportsModifiers = context.eglExtensions.contains("EGL_EXT_image_dma_buf_import_modifiers")
    }

    /// The DRM fourccs the EGL display says it can import (`eglQueryDmaBufFormatsEXT`, part of
    /// `EGL_EXT_image_dma_buf_import_modifiers`); nil where it cannot say (no such extension, or
    /// the query failed): then any format is tried.
    public func importableFormats() -> [UInt32]? {
        guard supportsModifiers, let address = eglGetProcAddress("eglQueryDmaBufFormatsEXT") else { return nil }
        let query = unsafeBitCast(address, to: PFNEGLQUERYDMABUFFORMATSEXTPROC.self)
        var count: EGLint = 0
        guard query(context.display, 0, nil, &count) == EGL_TRUE, count > 0, count <= 4096 else { return nil }
        var formats = [EGLint](repeating: 0, count: Int(count))
        var filled: EGLint = 0
        guard query(context.display, count, &formats, &filled) == EGL_TRUE else { return nil }
        return formats.prefix(Int(max(0, min(filled, count)))).map { UInt32(bitPattern: $0) }
    }

    /// Makes an external texture of `descriptor`'s buffers. The colour tags become EGL's sampling
    /// hints, so the texture samples as R'G'B'.
    public func importImage(_ descriptor: DMABufDescriptor) throws -> DMABufTexture {
        let attributes = try Self.attributes(for: descriptor, modifiersSupported: supportsModifiers)
        guard let image = eglCreateImage(context.display, nil, EGLenum(EGL_LINUX_DMA_BUF_EXT), nil, attributes) else {
            throw RenderError.egl("eglCreateImage", detail: "DMA-BUF \(descriptor.width)x\(descriptor.height) fourcc 0x\(String(descriptor.fourcc, radix: 16))")
        }
        // The image is owned by the DMABufTexture from here on (destroyed in its deinit).
        let texture = DMABufTexture(display: context.display, image: image, width: descriptor.width, height: descriptor.height)
        glBindTexture(GLenum(GL_TEXTURE_EXTERNAL_OES), texture.texture)
        glTexParameteri(GLenum(GL_TEXTURE_EXTERNAL_OES), GLenum(GL_TEXTURE_MIN_FILTER), GL_LINEAR)
        glTexParameteri(GLenum(GL_TEXTURE_EXTERNAL_OES), GLenum(GL_TEXTURE_MAG_FILTER), GL_LINEAR)
        imageTargetTexture(GLenum(GL_TEXTURE_EXTERNAL_OES), image)
        try checkGL("glEGLImageTargetTexture2DOES")
        return texture
    }
}

extension DMABufImporter {
    /// The `eglCreateImage(EGL_LINUX_DMA_BUF_EXT)` attributes of `descriptor`: size, fourcc, each
    /// plane's fd, offset and pitch (and its modifier, when the buffer has one), and the colour
    /// matrix, range and chroma siting as sampling hints. Throws where EGL could not take it.
    public static func attributes(for descriptor: DMABufDescriptor, modifiersSupported: Bool) throws -> [Int] {  // EGLAttrib is intptr_t
        guard (1...4).contains(descriptor.planes.count), descriptor.width > 0, descriptor.height > 0 else {
            throw RenderError(call: "eglCreateImage", detail: "a DMA-BUF picture needs 1-4 planes and a size, got \(descriptor.planes.count) planes, \(descriptor.width)x\(descriptor.height)")
        }
        // A linear buffer imports without the modifiers extension (linear is what EGL assumes);
        // with the extension its modifier is said explicitly.
        var modifier = descriptor.modifier.flatMap { $0 == DMABufDescriptor.modifierInvalid ? nil : $0 }
        if let m = modifier, m != 0, !modifiersSupported {
            throw RenderError(call: "eglCreateImage", detail: "the buffer has format modifier 0x\(String(m, radix: 16)) (tiled) but EGL_EXT_image_dma_buf_import_modifiers is not available")
        }
        if !modifiersSupported { modifier = nil }
        if descriptor.planes.count == 4 && !modifiersSupported {
            throw RenderError(call: "eglCreateImage", detail: "a fourth plane needs EGL_EXT_image_dma_buf_import_modifiers")
        }
        var attributes: [EGLAttrib] = [
            EGLAttrib(EGL_WIDTH), EGLAttrib(descriptor.width),
            EGLAttrib(EGL_HEIGHT), EGLAttrib(descriptor.height),
            EGLAttrib(EGL_LINUX_DRM_FOURCC_EXT), EGLAttrib(descriptor.fourcc),
        ]
        let planeKeys: [(fd: Int32, offset: Int32, pitch: Int32, lo: Int32, hi: Int32)] = [
            (EGL_DMA_BUF_PLANE0_FD_EXT, EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGL_DMA_BUF_PLANE0_PITCH_EXT,
             EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT),
            (EGL_DMA_BUF_PLANE1_FD_EXT, EGL_DMA_BUF_PLANE1_OFFSET_EXT, EGL_DMA_BUF_PLANE1_PITCH_EXT,
             EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT),
            (EGL_DMA_BUF_PLANE2_FD_EXT, EGL_DMA_BUF_PLANE2_OFFSET_EXT, EGL_DMA_BUF_PLANE2_PITCH_EXT,
             EGL_DMA_BUF_PLANE2_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE2_MODIFIER_HI_EXT),
            (EGL_DMA_BUF_PLANE3_FD_EXT, EGL_DMA_BUF_PLANE3_OFFSET_EXT, EGL_DMA_BUF_PLANE3_PITCH_EXT,
             EGL_DMA_BUF_PLANE3_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE3_MODIFIER_HI_EXT),
        ]
        for (plane, keys) in zip(descriptor.planes, planeKeys) {
            attributes += [EGLAttrib(keys.fd), EGLAttrib(plane.fd), EGLAttrib(keys.offset), EGLAttrib(plane.offset),
                           EGLAttrib(keys.pitch), EGLAttrib(plane.pitch)]
            if let modifier {
                attributes += [EGLAttrib(keys.lo), EGLAttrib(modifier & 0xffff_ffff), EGLAttrib(keys.hi), EGLAttrib(modifier >> 32)]
            }
        }
        let colorSpace: Int32
        switch descriptor.colorMatrix {
        case .bt601: colorSpace = EGL_ITU_REC601_EXT
        case .bt709: colorSpace = EGL_ITU_REC709_EXT
        case .bt2020: colorSpace = EGL_ITU_REC2020_EXT
        }
        let siting = descriptor.chromaLocation == .center ? EGL_YUV_CHROMA_SITING_0_5_EXT : EGL_YUV_CHROMA_SITING_0_EXT
        attributes += [
            EGLAttrib(EGL_YUV_COLOR_SPACE_HINT_EXT), EGLAttrib(colorSpace),
            EGLAttrib(EGL_SAMPLE_RANGE_HINT_EXT), EGLAttrib(descriptor.colorRange == .full ? EGL_YUV_FULL_RANGE_EXT : EGL_YUV_NARROW_RANGE_EXT),
            EGLAttrib(EGL_YUV_CHROMA_HORIZONTAL_SITING_HINT_EXT), EGLAttrib(siting),
            EGLAttrib(EGL_YUV_CHROMA_VERTICAL_SITING_HINT_EXT),
            EGLAttrib(descriptor.chromaLocation == .topLeft ? EGL_YUV_CHROMA_SITING_0_EXT : EGL_YUV_CHROMA_SITING_0_5_EXT),
            EGLAttrib(EGL_NONE),
        ]
        return attributes
    }
}

/// An imported DMA-BUF picture: an EGL image and the external texture bound to it. Owns both;
/// release it on the context's thread, once the frame using it has been shown.
public final class DMABufTexture {
    let display: EGLDisplay
    let image: EGLImage
    let texture: GLuint
    public let width: Int
    public let height: Int

    init(display: EGLDisplay, image: EGLImage, width: Int, height: Int) {
        self.display = display
        self.image = image
        self.width = width
        self.height = height
        var name: GLuint = 0
        glGenTextures(1, &name)
        texture = name
    }

    deinit {
        var name = texture
        glDeleteTextures(1, &name)
        eglDestroyImage(display, image)
    }
}
