import CDRM
import Foundation
import Media
import Playback
import Render

/// A KMS output's GL presentation (`display.scanout` `gl`): the card's GBM device, the EGL
/// display and GL context and the player layer live as long as the output; each head gets a GBM +
/// EGL window surface of its mode's size, whose locked buffers become DRM framebuffers.
final class KMSGLPresentation: KMSPresentation {
    let kind = ScanoutKind.gl
    let playerLayer: PlayerLayer
    var layer: any PictureLayer { playerLayer }
    var renderer: String { context.context.renderer }
    /// Not looked at: the player layer blends overlays and transitions itself.
    var pictureBlending: String?
    var routeReason: String? { nil }
    let readsBack = false
    let logsFlipSpread = true
    var closedFields: [(String, String)] { [] }
    /// Whether atomic commits carry render fences (EGL_ANDROID_native_fence_sync + IN_FENCE_FD).
    let nativeFences: Bool
    /// The scan-out format in use (`display.format`, or XRGB8888 where the device lacks it).
    let format: KMSPixelFormat
    /// Whether render times come from fences, and GPU times from timer queries.
    let renderTiming: String
    let context: GBMDisplayContext
    let timer: GPUFrameTimer
    let device: DRMDevice

    /// Makes the GBM device (on a dup of the card's fd), the GL context and the player layer.
    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, background: RGBColor, logger: Logger) throws {
        let gbmFD = fcntl(device.fd, F_DUPFD_CLOEXEC, 0)   // owned by the GBM device from here on
        guard gbmFD >= 0 else { throw DRMError(call: "fcntl(F_DUPFD_CLOEXEC, \(device.path))", errno: errno) }
        var choice = ScanoutFormatChoice(format: .xrgb8888, missing: [])
        let planeFormats = settings.format == .xrgb8888 ? [] : (try? device.primaryPlaneFormats()) ?? []
        let context = try GBMDisplayContext(drmFD: gbmFD, ownsFD: true) { gbm, egl in
            let report = ScanoutFormatReport(plane: planeFormats, gbm: Set(gbm.compactMap(KMSPixelFormat.init)),
                                             egl: Set(egl.compactMap(KMSPixelFormat.init)))
            choice = chooseScanoutFormat(settings.format, report: report)
            return choice.format.scanout
        }
        if !choice.missing.isEmpty {
            logger.warning("\(settings.format.fourcc) scan-out is not available; using \(choice.format.fourcc)",
                           ["device": device.path, "missing": choice.missing.joined(separator: "; ")])
        }
        format = choice.format
        playerLayer = try PlayerLayer()
        playerLayer.background = background
        timer = GPUFrameTimer(context: context.context)
        self.device = device
        self.context = context
        nativeFences = api == .atomic && context.hasNativeFences
        renderTiming = (timer.hasFences ? "fences" : "none") + (timer.hasTimerQuery ? "+timer-query" : "")
    }

    func makeBuffers(connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws -> any KMSHeadBuffers {
        try GBMHeadBuffers(presentation: self, connector: connector, width: pipe.width, height: pipe.height)
    }

    /// Read from the card's GL context, which the output keeps for its whole life (displays that
    /// come and go get new surfaces, not a new context), so they hold across hotplug.
    func capabilities(name: String, refresh: RefreshRate?, conversion: ColorConversionMode) -> OutputCapabilities {
        openOutputCapabilities(name: name, context: context.context, layer: playerLayer, refresh: refresh, conversion: conversion,
                               scanoutFormat: format.fourcc)
    }

    func describe(rotation: Rotation, hotplug: String, untimed: Bool) -> [(String, String)] {
        [("format", format.rawValue), ("rotation", "\(rotation.rawValue)"), ("fences", nativeFences ? "native" : "none"),
         ("renderTiming", renderTiming), ("hotplug", hotplug), ("renderer", renderer)]
    }
}

/// One head's GBM + EGL window surface: the player layer draws into its back buffer, which is
/// locked as the next scan-out buffer and made a DRM framebuffer (cached per GBM buffer).
final class GBMHeadBuffers: KMSHeadBuffers {
    private unowned let presentation: KMSGLPresentation
    private let connector: String
    private var window: GBMWindowSurface?            // released in close()
    private var framebuffers: [UInt: UInt32] = [:]   // GBM buffer id -> DRM fb, removed in close()
    private var onScreen: ScanoutBuffer?             // locked until the next picture replaces it
    private var drawn: (buffer: ScanoutBuffer, framebuffer: UInt32)?    // drawn, not queued yet
    private var inFlight: ScanoutBuffer?             // queued, its flip not seen yet
    /// The last picture's render timing.
    private var lastTiming: GPUFrameTiming?
    var lastRenderNanoseconds: Int64? { lastTiming?.renderNanoseconds }

    init(presentation: KMSGLPresentation, connector: String, width: Int, height: Int) throws {
        self.presentation = presentation
        self.connector = connector
        window = try GBMWindowSurface(on: presentation.context, width: width, height: height)
    }

    func draw(_ draw: () throws -> Void, scanout: KMSScanout) throws -> Int64? {
        guard let window else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        if let unshown = drawn {
            // Drawn but never queued (the loop gave up on it): its buffer can be drawn again.
            window.release(unshown.buffer)
            drawn = nil
        }
        window.bind()
        let timer = presentation.timer
        let started = monotonicNow()
        timer.begin()
        try draw()
        let fence = presentation.nativeFences && scanout.modeSet && scanout.committer.takesInFences ? try timer.nativeFence() : nil
        let buffer = try window.swapAndLock()
        var rendered: Int64?
        do {
            if let timing = try timer.end(startedAt: started, waitForFence: fence == nil) {
                // The first picture of a head pays for one-time work (textures, shader variants): an
                // outlier the estimate would keep for a whole window.
                if scanout.modeSet { rendered = timing.renderNanoseconds }
                lastTiming = timing
            }
            let fb: UInt32
            if let cached = framebuffers[buffer.id] {
                fb = cached
            } else {
                fb = try presentation.device.addFramebuffer(buffer)
                framebuffers[buffer.id] = fb
            }
            drawn = (buffer, fb)
        } catch {
            window.release(buffer)
            throw error
        }
        scanout.inFence = fence
        return rendered
    }

    func render(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?], bounds: PixelRect) throws {
        let layer = presentation.playerLayer
        if frames.count == 1 {
            try layer.draw(frames[0], bounds: bounds, mix: mixes.first ?? nil)
        } else {
            try layer.draw(mosaic: frames, bounds: bounds, mixes: mixes)
        }
        try layer.drawOverlays(bounds: bounds)
    }

    func queueFlip(on scanout: KMSScanout) throws -> Bool {
        guard let window, let picture = drawn else { return false }
        drawn = nil
        do {
            try scanout.queueFlip(framebuffer: picture.framebuffer)
        } catch {
            window.release(picture.buffer)
            throw error
        }
        inFlight = picture.buffer
        return true
    }

    func flipped() {
        guard let window, let shown = inFlight else { return }
        inFlight = nil
        if let previous = onScreen { window.release(previous) }
        onScreen = shown
    }

    func screenImage(maxWidth: Int?) -> RGBAImage? { nil }

    func close() {
        guard window != nil else { return }
        for fb in framebuffers.values { presentation.device.removeFramebuffer(fb) }
        framebuffers = [:]
        onScreen = nil
        drawn = nil
        inFlight = nil
        window = nil   // the GBM and EGL window surfaces; the context stays, surfaceless
    }
}
