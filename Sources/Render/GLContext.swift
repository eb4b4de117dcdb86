import CEGL
import CGLES
import Foundation
import Glibc
import Media
import Synchronization

/// An EGL display with an OpenGL ES 3 context, current on the thread that made it.
///
/// GL is used from one thread only: the output's presentation thread makes the context and does all
/// drawing on it. The EGL display and context are owned here and released in deinit.
public final class GLContext {
    let display: EGLDisplay
    let context: EGLContext
    let config: EGLConfig?
    /// EGL display extensions.
    public let eglExtensions: Set<String>
    /// GL extensions of the context.
    public let glExtensions: Set<String>
    /// `GL_RENDERER`, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    public let renderer: String
    /// `GL_MAX_TEXTURE_SIZE`: the largest texture side (16384 on llvmpipe). Decoders scale larger
    /// frames down to it (`OutputCapabilities.maxTextureSize`); the layer refuses to upload any larger.
    public let maxTextureSize: Int
    /// The native display (a GBM device) when there is one: released only after `eglTerminate`.
    private let nativeOwner: AnyObject?

    /// A context on Mesa's surfaceless platform: no window system, rendering goes to framebuffer
    /// objects. Works on llvmpipe with no GPU.
    public static func surfaceless() throws -> GLContext {
        DriverLoads.during { DriverPreload.load() }
        let clientExtensions = String(cString: eglQueryString(nil, EGLint(EGL_EXTENSIONS)) ?? "".withCString { $0 })
        guard clientExtensions.split(separator: " ").contains("EGL_MESA_platform_surfaceless") else {
            throw RenderError(call: "eglGetPlatformDisplay", detail: "EGL_MESA_platform_surfaceless is not available")
        }
        return try GLContext(platform: EGLenum(EGL_PLATFORM_SURFACELESS_MESA), nativeDisplay: nil, surfaceType: EGLint(EGL_PBUFFER_BIT))
    }

    /// `nativeVisual`: only configs whose `EGL_NATIVE_VISUAL_ID` is this (a GBM format) are used.
    /// `nativeOwner` owns `nativeDisplay` and is kept until the EGL display has been terminated.
    init(platform: EGLenum, nativeDisplay: UnsafeMutableRawPointer?, surfaceType: EGLint,
         nativeVisual: EGLint? = nil, nativeOwner: AnyObject? = nil) throws {
        self.nativeOwner = nativeOwner
        var major: EGLint = 0, minor: EGLint = 0
        // The driver loads here: counted, so that other library loads can keep out of its way.
        let display = try DriverLoads.during { () throws -> EGLDisplay in
            DriverPreload.load()
            guard let display = eglGetPlatformDisplay(platform, nativeDisplay, nil) else {
                throw RenderError.egl("eglGetPlatformDisplay")
            }
            guard initializeDisplay(display, &major, &minor) else {
                throw RenderError.egl("eglInitialize")
            }
            return display
        }
        self.display = display  // released (terminated with its last context) in deinit from here on
        eglExtensions = Set(String(cString: eglQueryString(display, EGLint(EGL_EXTENSIONS))).split(separator: " ").map(String.init))
        guard eglBindAPI(EGLenum(EGL_OPENGL_ES_API)) == EGL_TRUE else {
            releaseDisplay(display)
            throw RenderError.egl("eglBindAPI")
        }
        let configAttributes: [EGLint] = [
            EGLint(EGL_SURFACE_TYPE), surfaceType,
            EGLint(EGL_RENDERABLE_TYPE), EGLint(EGL_OPENGL_ES3_BIT),
            EGLint(EGL_RED_SIZE), 8, EGLint(EGL_GREEN_SIZE), 8, EGLint(EGL_BLUE_SIZE), 8,
            EGLint(EGL_NONE),
        ]
        var configs = [EGLConfig?](repeating: nil, count: 64)
        var count: EGLint = 0
        guard eglChooseConfig(display, configAttributes, &configs, 64, &count) == EGL_TRUE, count > 0 else {
            releaseDisplay(display)
            throw RenderError.egl("eglChooseConfig", detail: "no OpenGL ES 3 config")
        }
        let config = configs.prefix(Int(count)).first { candidate in
            guard let nativeVisual else { return true }
            var visual: EGLint = 0
            return eglGetConfigAttrib(display, candidate, EGLint(EGL_NATIVE_VISUAL_ID), &visual) == EGL_TRUE && visual == nativeVisual
        } ?? nil
        guard let config else {
            releaseDisplay(display)
            throw RenderError(call: "eglChooseConfig", detail: "no OpenGL ES 3 config with native visual 0x\(String(nativeVisual ?? 0, radix: 16))")
        }
        self.config = config
        let contextAttributes: [EGLint] = [EGLint(EGL_CONTEXT_MAJOR_VERSION), 3, EGLint(EGL_NONE)]
        guard let context = eglCreateContext(display, config, nil, contextAttributes) else {
            let error = RenderError.egl("eglCreateContext")
            releaseDisplay(display)
            throw error
        }
        self.context = context
        guard eglMakeCurrent(display, nil, nil, context) == EGL_TRUE else {
            let error = RenderError.egl("eglMakeCurrent")
            eglDestroyContext(display, context)
            releaseDisplay(display)
            throw error
        }
        renderer = String(cString: glGetString(GLenum(GL_RENDERER)))
        maxTextureSize = currentMaxTextureSize()
        glExtensions = Set(String(cString: glGetString(GLenum(GL_EXTENSIONS))).split(separator: " ").map(String.init))
    }

    deinit {
        eglMakeCurrent(display, nil, nil, nil)
        eglDestroyContext(display, context)
        releaseDisplay(display)
        // This thread's EGL state goes now, not in the thread's exit: a thread that ends while
        // the process exits would otherwise free it while libEGL's own teardown frees it too.
        eglReleaseThread()
    }
}

/// Contexts per EGL display. Mesa hands every caller of `eglGetPlatformDisplay` for one platform
/// and native display the same EGLDisplay, and `eglTerminate` is not counted: the display is
/// terminated only when its last context goes, so that one output closing (or one test ending)
/// does not pull the display from under another thread's context.
private let displayUsers = Mutex<[UInt: Int]>([:])

/// `eglInitialize`, counted: under the lock, so that no other thread terminates it meanwhile.
func initializeDisplay(_ display: EGLDisplay, _ major: inout EGLint, _ minor: inout EGLint) -> Bool {
    displayUsers.withLock { users in
        guard eglInitialize(display, &major, &minor) == EGL_TRUE else { return false }
        users[UInt(bitPattern: display), default: 0] += 1
        return true
    }
}

func releaseDisplay(_ display: EGLDisplay) {
    displayUsers.withLock { users in
        let key = UInt(bitPattern: display)
        let count = (users[key] ?? 1) - 1
        if count <= 0 {
            users[key] = nil
            eglTerminate(display)
        } else {
            users[key] = count
        }
    }
}

/// Submits queued GL work without waiting for it.
public func glFlushRenderer() { glFlush() }
/// Waits until all GL work has finished.
public func glFinishRenderer() { glFinish() }

/// `GL_MAX_TEXTURE_SIZE` of the current context (2048, the least GLES 3 promises, if it says less).
func currentMaxTextureSize() -> Int {
    var side: GLint = 0
    glGetIntegerv(GLenum(GL_MAX_TEXTURE_SIZE), &side)
    return side > 2048 ? Int(side) : 2048
}

/// Mesa's DRI driver (one file: each driver's name is a link to it), loaded before EGL loads it,
/// with `RTLD_DEEPBIND`: each of its own and LLVM's tens of thousands of symbol lookups then
/// searches its own dependencies first, not every library already in the process (FFmpeg brings
/// about 150) before them. EGL's load then finds it loaded. On llvmpipe here the whole start to a
/// 1080p first picture and exit took 0.116 s with it against 0.125 s without (medians of 40,
/// alternated). Skipped where no such file is found (EGL loads its driver as it always does) and
/// under a sanitizer (whose runtime refuses `RTLD_DEEPBIND`).
enum DriverPreload {
    private static let done = Mutex(false)

    static func load() {
        done.withLock { done in
            guard !done else { return }
            done = true
            guard dlsym(nil, "__asan_init") == nil, dlsym(nil, "__tsan_init") == nil, let path = driverPath() else { return }
            // Kept loaded for the process's life, as EGL keeps it.
            _ = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
        }
    }

    /// `swrast_dri.so` in `LIBGL_DRIVERS_PATH`'s folders, or else in `dri/` beside the EGL library
    /// this process uses (Mesa's default folder).
    static func driverPath() -> String? {
        driverPath(driversPath: getenv("LIBGL_DRIVERS_PATH").map { String(cString: $0) }, eglLibrary: eglLibrary(),
                   exists: { access($0, R_OK) == 0 })
    }

    /// The first of `driversPath`'s folders (`:` between them), then the folder `dri` beside
    /// `eglLibrary`, that holds a `swrast_dri.so` (`exists`).
    static func driverPath(driversPath: String?, eglLibrary: String?, exists: (String) -> Bool) -> String? {
        var folders = (driversPath ?? "").split(separator: ":").map(String.init)
        if let eglLibrary, let slash = eglLibrary.lastIndex(of: "/") { folders.append(eglLibrary[..<slash] + "/dri") }
        return folders.lazy.map { $0 + "/swrast_dri.so" }.first(where: exists)
    }

    /// The file of the EGL library mapped in this process, from its mappings (read to the end: a
    /// /proc file has no size to read by).
    private static func eglLibrary() -> String? {
        guard let maps = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(maps) }
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), maps) != nil {
            let line = String(cString: buffer).trimmingCharacters(in: .newlines)
            if line.hasSuffix("/libEGL.so.1") || line.contains("/libEGL.so.1."), let start = line.firstIndex(of: "/") {
                return String(line[start...])
            }
        }
        return nil
    }
}
