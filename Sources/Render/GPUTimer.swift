import CEGL
import CGLES
import Glibc

/// What one picture cost: from the moment drawing started (CPU) to the moment its render fence
/// signalled, and, where `GL_EXT_disjoint_timer_query` exists, the GPU's own time for it.
public struct GPUFrameTiming: Sendable, Equatable {
    /// Start of drawing to fence signalled, nanoseconds.
    public var renderNanoseconds: Int64
    /// GPU time of the most recent frame whose timer query has a result (a frame or two back).
    public var gpuNanoseconds: Int64?
    public init(renderNanoseconds: Int64, gpuNanoseconds: Int64? = nil) {
        self.renderNanoseconds = renderNanoseconds
        self.gpuNanoseconds = gpuNanoseconds
    }
}

/// Measures the render time of each picture: an EGL fence (`EGL_KHR_fence_sync`, core in EGL 1.5;
/// llvmpipe has it) after the drawing, waited for with a timeout, and a GL timer query
/// (`GL_TIME_ELAPSED_EXT`) around it where `GL_EXT_disjoint_timer_query` exists. Owns its query
/// objects (deleted in deinit). Used on the context's thread only.
public final class GPUFrameTimer {
    public let context: GLContext
    public let hasFences: Bool
    public let hasTimerQuery: Bool
    private var queries: [GLuint] = []        // a ring: a result is read a few frames later
    private var pending: [Int] = []           // ring slots begun and not read yet, oldest first
    private var next = 0
    private var lastGPU: Int64?

    public init(context: GLContext) {
        self.context = context
        hasFences = context.eglExtensions.contains("EGL_KHR_fence_sync")
        hasTimerQuery = context.glExtensions.contains("GL_EXT_disjoint_timer_query")
        if hasTimerQuery {
            queries = [GLuint](repeating: 0, count: 4)
            glGenQueries(4, &queries)
        }
    }

    deinit {
        if !queries.isEmpty { glDeleteQueries(GLsizei(queries.count), queries) }
    }

    /// Call before drawing the picture.
    public func begin() {
        guard hasTimerQuery, pending.count < queries.count else { return }
        glBeginQuery(GLenum(GL_TIME_ELAPSED_EXT), queries[next])
    }

    /// Call after drawing (before or after the swap): waits up to `timeout` seconds for the fence
    /// and returns the time since `startedAt` (nanoseconds on CLOCK_MONOTONIC), or nil without
    /// fences. Throws a `RenderError` naming the fence when it does not signal in time.
    /// `waitForFence` false (the commit carries a native fence instead): no CPU wait, the timing is
    /// the timer query's alone (nil without one).
    public func end(startedAt: Int64, waitForFence: Bool = true, timeout: Double = 1.0) throws -> GPUFrameTiming? {
        if hasTimerQuery, pending.count < queries.count {
            glEndQuery(GLenum(GL_TIME_ELAPSED_EXT))
            pending.append(next)
            next = (next + 1) % queries.count
        }
        readQueries()
        guard waitForFence else { return lastGPU.map { GPUFrameTiming(renderNanoseconds: $0, gpuNanoseconds: $0) } }
        guard hasFences else { return nil }
        guard let sync = eglCreateSync(context.display, EGLenum(EGL_SYNC_FENCE), nil) else {
            throw RenderError.egl("eglCreateSync", detail: "render fence")
        }
        defer { eglDestroySync(context.display, sync) }
        let result = eglClientWaitSync(context.display, sync, EGLint(EGL_SYNC_FLUSH_COMMANDS_BIT),
                                       EGLTime(timeout * 1e9))
        if result == EGL_TIMEOUT_EXPIRED {
            throw RenderError(call: "eglClientWaitSync", detail: "timed out after \(timeout) s waiting for the render fence of a picture")
        }
        guard result == EGL_CONDITION_SATISFIED else { throw RenderError.egl("eglClientWaitSync", detail: "render fence") }
        return GPUFrameTiming(renderNanoseconds: monotonicNow() - startedAt, gpuNanoseconds: lastGPU)
    }

    /// Reads the finished timer queries without waiting; a disjoint period voids them.
    private func readQueries() {
        var disjoint: GLint = 0
        glGetIntegerv(GLenum(GL_GPU_DISJOINT_EXT), &disjoint)
        while let slot = pending.first {
            var available: GLuint = 0
            glGetQueryObjectuiv(queries[slot], GLenum(GL_QUERY_RESULT_AVAILABLE), &available)
            guard available != 0 else { break }
            var ns: GLuint = 0   // 32 bits: up to 4.2 s, far above a picture's time
            glGetQueryObjectuiv(queries[slot], GLenum(GL_QUERY_RESULT), &ns)
            pending.removeFirst()
            lastGPU = disjoint != 0 ? nil : Int64(ns)
        }
    }

    /// A sync file that signals when the GL work so far is done (`EGL_ANDROID_native_fence_sync`),
    /// for an atomic commit's IN_FENCE_FD; nil where the extension is missing (llvmpipe).
    public func nativeFence() throws -> SyncFile? {
        guard context.eglExtensions.contains("EGL_ANDROID_native_fence_sync"),
              let proc = eglGetProcAddress("eglDupNativeFenceFDANDROID") else { return nil }
        let dup = unsafeBitCast(proc, to: PFNEGLDUPNATIVEFENCEFDANDROIDPROC.self)
        let attributes: [EGLAttrib] = [EGLAttrib(EGL_SYNC_NATIVE_FENCE_FD_ANDROID), EGLAttrib(EGL_NO_NATIVE_FENCE_FD_ANDROID), EGLAttrib(EGL_NONE)]
        guard let sync = eglCreateSync(context.display, EGLenum(EGL_SYNC_NATIVE_FENCE_ANDROID), attributes) else {
            throw RenderError.egl("eglCreateSync", detail: "native fence")
        }
        defer { eglDestroySync(context.display, sync) }
        glFlush()   // the fence fd exists once the fence has been flushed
        let fd = dup(context.display, sync)
        guard fd >= 0 else { throw RenderError.egl("eglDupNativeFenceFDANDROID") }
        return SyncFile(fd: fd)
    }
}

/// A sync file descriptor (a kernel dma fence); closed in deinit. The kernel dups what a commit
/// hands it, so the owner keeps it until the commit has been made.
public final class SyncFile {
    public let fd: Int32
    public init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}

/// Nanoseconds on CLOCK_MONOTONIC (the clock of DRM event timestamps).
public func monotonicNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
