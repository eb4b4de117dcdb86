import CEGL
import CGBM
import CGLES
import Glibc

/// A DRM fourcc pixel format code, e.g. `XR24` for XRGB8888.
public struct ScanoutFormat: Sendable, Hashable, CustomStringConvertible {
    public let code: UInt32
    public init(code: UInt32) { self.code = code }
    public init(_ fourcc: String) {
        precondition(fourcc.utf8.count == 4, "a fourcc has four characters")
        code = fourcc.utf8.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }
    /// 8 bits per colour, no alpha: what every KMS driver scans out.
    public static let xrgb8888 = ScanoutFormat("XR24")
    /// 10 bits per colour, no alpha.
    public static let xrgb2101010 = ScanoutFormat("XR30")
    /// Bits per colour channel of the formats Marquee scans out (nil for others).
    var bitsPerChannel: EGLint? {
        switch self {
        case .xrgb8888: 8
        case .xrgb2101010: 10
        default: nil
        }
    }
    public var description: String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: code >> (8 * $0)) }, as: UTF8.self)
    }
}

/// A buffer GL has finished drawing into, locked for scan-out until released. Identifies a GBM buffer
/// object of the surface; `handle` is its GEM handle on the DRM device the surface was made on.
public struct ScanoutBuffer: Sendable, Hashable {
    /// Stable while the surface lives: GBM reuses a few buffers round-robin.
    public let id: UInt
    public let handle: UInt32
    public let stride: UInt32
    public let width: Int
    public let height: Int
    public let format: ScanoutFormat
}

/// Owns a `gbm_device` (destroyed in deinit). Kept by the GLContext made on it, so that it outlives
/// `eglTerminate`.
final class GBMDevice {
    let pointer: OpaquePointer
    private let ownedFD: Int32?
    /// `ownsFD`: the fd is this object's (a dup made for it), closed after the device is destroyed.
    init(fd: Int32, ownsFD: Bool = false) throws {
        guard let device = gbm_create_device(fd) else {
            throw RenderError(call: "gbm_create_device", detail: "fd \(fd)")
        }
        pointer = device
        ownedFD = ownsFD ? fd : nil
    }
    deinit {
        gbm_device_destroy(pointer)
        if let ownedFD { close(ownedFD) }
    }
}

/// An OpenGL ES context on a DRM device's GBM device, current on the thread that made it with no
/// surface (EGL_KHR_surfaceless_context): it outlives the window surfaces made on it, so that a
/// display that goes away and comes back (hotplug) gets a new surface, its mode's size, while the
/// context and everything made in it (the player layer's shaders and textures) stay.
///
/// Used from the thread that made it only. The DRM file descriptor stays the caller's and must
/// outlive this object.
public final class GBMDisplayContext {
    public let context: GLContext
    public let format: ScanoutFormat
    let device: GBMDevice

    /// Makes a GBM device on `drmFD`, an EGL display on it and an ES 3 context for `format`
    /// window surfaces, current on this thread. `ownsFD`: `drmFD` is handed over (a dup made for
    /// this context) and closed once GBM and EGL are done with it. `choosing`, when given, picks
    /// the format instead, from what this device reports for XRGB8888 and XRGB2101010: the formats
    /// GBM can scan out and render to, and those an EGL window config has as its native visual
    /// with channels of that format's size.
    public init(drmFD: Int32, ownsFD: Bool = false, format: ScanoutFormat = .xrgb8888,
                choosing: ((_ gbm: Set<ScanoutFormat>, _ egl: Set<ScanoutFormat>) -> ScanoutFormat)? = nil) throws {
        let device: GBMDevice
        do {
            device = try GBMDevice(fd: drmFD, ownsFD: ownsFD)
        } catch {
            if ownsFD { close(drmFD) }
            throw error
        }
        let usage = UInt32(GBM_BO_USE_SCANOUT.rawValue | GBM_BO_USE_RENDERING.rawValue)
        var format = format
        if let choosing {
            let candidates: [ScanoutFormat] = [.xrgb8888, .xrgb2101010]
            let gbm = Set(candidates.filter { gbm_device_is_format_supported(device.pointer, $0.code, usage) != 0 })
            format = choosing(gbm, Self.eglWindowFormats(on: device, among: candidates))
        }
        guard gbm_device_is_format_supported(device.pointer, format.code, usage) != 0 else {
            throw RenderError(call: "gbm_device_is_format_supported", detail: "\(format) cannot be scanned out and rendered to")
        }
        context = try GLContext(platform: EGLenum(EGL_PLATFORM_GBM_KHR), nativeDisplay: UnsafeMutableRawPointer(device.pointer),
                                surfaceType: EGLint(EGL_WINDOW_BIT), nativeVisual: EGLint(bitPattern: format.code),
                                nativeOwner: device)
        self.device = device
        self.format = format
    }

    /// The formats among `candidates` that an EGL window config (ES 3) on `device` has as its
    /// native visual, with red, green and blue of the format's size. Empty when EGL cannot start.
    private static func eglWindowFormats(on device: GBMDevice, among candidates: [ScanoutFormat]) -> Set<ScanoutFormat> {
        guard let display = eglGetPlatformDisplay(EGLenum(EGL_PLATFORM_GBM_KHR), UnsafeMutableRawPointer(device.pointer), nil) else { return [] }
        var major: EGLint = 0, minor: EGLint = 0
        guard initializeDisplay(display, &major, &minor) else { return [] }
        defer { releaseDisplay(display) }   // counted: the context made next initializes it again
        let attributes: [EGLint] = [EGLint(EGL_SURFACE_TYPE), EGLint(EGL_WINDOW_BIT), EGLint(EGL_RENDERABLE_TYPE), EGLint(EGL_OPENGL_ES3_BIT),
                                    EGLint(EGL_RED_SIZE), 8, EGLint(EGL_GREEN_SIZE), 8, EGLint(EGL_BLUE_SIZE), 8, EGLint(EGL_NONE)]
        var configs = [EGLConfig?](repeating: nil, count: 256)
        var count: EGLint = 0
        guard eglChooseConfig(display, attributes, &configs, 256, &count) == EGL_TRUE else { return [] }
        var found = Set<ScanoutFormat>()
        for config in configs.prefix(Int(count)) {
            func attribute(_ name: Int32) -> EGLint {
                var value: EGLint = 0
                return eglGetConfigAttrib(display, config, EGLint(name), &value) == EGL_TRUE ? value : -1
            }
            let visual = ScanoutFormat(code: UInt32(bitPattern: attribute(EGL_NATIVE_VISUAL_ID)))
            guard candidates.contains(visual), let bits = visual.bitsPerChannel else { continue }
            if attribute(EGL_RED_SIZE) == bits && attribute(EGL_GREEN_SIZE) == bits && attribute(EGL_BLUE_SIZE) == bits {
                found.insert(visual)
            }
        }
        return found
    }

    /// Whether the driver can export render fences as sync files (atomic IN_FENCE_FD).
    public var hasNativeFences: Bool { context.eglExtensions.contains("EGL_ANDROID_native_fence_sync") }
}

/// A GBM surface with an EGL window surface on it: the pictures of one modeset. Drawing goes to
/// the default framebuffer; `swapAndLock()` finishes a picture and hands back the buffer to scan
/// out, `release(_:)` returns a buffer to GBM once it is off screen.
///
/// Owns the GBM surface and the EGL window surface (destroyed in deinit, leaving the context
/// current with no surface). Used from the context's thread only.
public final class GBMWindowSurface {
    public let display: GBMDisplayContext
    public let width: Int
    public let height: Int
    private let surface: OpaquePointer          // gbm_surface, destroyed in deinit
    private let eglSurface: EGLSurface           // destroyed in deinit, before the gbm_surface
    private var locked: [UInt: OpaquePointer] = [:]   // buffers locked for scan-out, by id

    /// A `width` x `height` window surface in the context's format, made current on this thread.
    public init(on display: GBMDisplayContext, width: Int, height: Int) throws {
        let context = display.context
        let usage = UInt32(GBM_BO_USE_SCANOUT.rawValue | GBM_BO_USE_RENDERING.rawValue)
        guard let surface = gbm_surface_create(display.device.pointer, UInt32(width), UInt32(height), display.format.code, usage) else {
            throw RenderError(call: "gbm_surface_create", detail: "\(width)x\(height) \(display.format)")
        }
        guard let eglSurface = eglCreatePlatformWindowSurface(context.display, context.config, UnsafeMutableRawPointer(surface), nil) else {
            let error = RenderError.egl("eglCreatePlatformWindowSurface")
            gbm_surface_destroy(surface)
            throw error
        }
        guard eglMakeCurrent(context.display, eglSurface, eglSurface, context.context) == EGL_TRUE else {
            let error = RenderError.egl("eglMakeCurrent", detail: "window surface")
            eglDestroySurface(context.display, eglSurface)
            gbm_surface_destroy(surface)
            throw error
        }
        self.display = display
        self.surface = surface
        self.eglSurface = eglSurface
        self.width = width
        self.height = height
    }

    deinit {
        let context = display.context
        for bo in locked.values { gbm_surface_release_buffer(surface, bo) }
        eglMakeCurrent(context.display, nil, nil, context.context)   // the context stays, surfaceless
        eglDestroySurface(context.display, eglSurface)
        gbm_surface_destroy(surface)
    }

    /// Binds the window's default framebuffer for drawing.
    public func bind() {
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), 0)
    }

    /// Ends the picture (`eglSwapBuffers`) and locks the buffer it went to for scan-out.
    public func swapAndLock() throws -> ScanoutBuffer {
        let context = display.context
        guard eglSwapBuffers(context.display, eglSurface) == EGL_TRUE else { throw RenderError.egl("eglSwapBuffers") }
        guard let bo = gbm_surface_lock_front_buffer(surface) else {
            throw RenderError(call: "gbm_surface_lock_front_buffer", detail: "no front buffer after eglSwapBuffers")
        }
        let id = UInt(bitPattern: UnsafeRawPointer(bo))
        locked[id] = bo   // released by release(_:) once the buffer is off screen
        return ScanoutBuffer(id: id, handle: gbm_bo_get_handle(bo).u32, stride: gbm_bo_get_stride(bo),
                             width: Int(gbm_bo_get_width(bo)), height: Int(gbm_bo_get_height(bo)),
                             format: ScanoutFormat(code: gbm_bo_get_format(bo)))
    }

    /// Gives a buffer back to GBM for drawing.
    public func release(_ buffer: ScanoutBuffer) {
        if let bo = locked.removeValue(forKey: buffer.id) { gbm_surface_release_buffer(surface, bo) }
    }
}
