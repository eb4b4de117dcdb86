import Foundation
import Media
import Playback
import Render

/// Which clock paces an output that has no display of its own.
public enum ClockKind: String, Sendable, CaseIterable {
    /// Vsyncs at wall-clock times: presentation paced like a display.
    case real
    /// Vsyncs advance as soon as the next frame is ready, with simulated timestamps.
    case virtual
}

/// An output with no screen: EGL surfaceless (llvmpipe here) rendering into an offscreen target of
/// the configured mode. Used where no DRM device is connected, and for tests and benchmarks.
///
/// Made on, and used only from, the presentation thread (its GL context is current there).
public final class HeadlessOutput: PresentationOutput {
    public typealias Frame = VideoFrame

    public let name: String
    public let mode: DisplayMode
    public let clock: any VsyncClock
    public let layer: PlayerLayer
    public let context: GLContext
    private let target: Framebuffer
    private let realClock: RealVsyncClock?

    public init(name: String = "headless-0", mode: DisplayMode, clock kind: ClockKind, background: RGBColor = .black) throws {
        self.name = name
        self.mode = mode
        context = try GLContext.surfaceless()
        target = try Framebuffer(width: mode.width, height: mode.height)
        layer = try PlayerLayer()
        layer.background = background
        switch kind {
        case .real:
            let clock = RealVsyncClock(refresh: mode.refresh)
            realClock = clock
            self.clock = clock
        case .virtual:
            realClock = nil
            clock = VirtualVsyncClock(refresh: mode.refresh)
        }
    }

    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: mode.width, height: mode.height) }

    public func present(_ frame: VideoFrame?, atVsync vsync: Int64) throws -> Int64 {
        target.bind()
        try layer.draw(frame, bounds: bounds)
        return try finish(atVsync: vsync)
    }

    /// A mosaic: one frame per `layer.mosaicRegions` entry.
    public func present(mosaic frames: [VideoFrame?], atVsync vsync: Int64) throws -> Int64 {
        target.bind()
        try layer.draw(mosaic: frames, bounds: bounds)
        return try finish(atVsync: vsync)
    }

    /// A wall output showing several regions (a mosaic): the part of each region's picture that
    /// `window`, this output's rectangle on the canvas, shows. (One region: set
    /// `layer.wallPlacement` and use `present(_:atVsync:)`.)
    public func present(regions: [PlayerLayer.WallRegionFrame], window: PixelRect, atVsync vsync: Int64) throws -> Int64 {
        target.bind()
        try layer.draw(regions: regions, window: window, bounds: bounds)
        return try finish(atVsync: vsync)
    }

    private func finish(atVsync vsync: Int64) throws -> Int64 {
        guard let realClock else {
            glFlushRenderer()
            return vsync
        }
        // The picture counts as shown on the first vsync after rendering has finished.
        glFinishRenderer()
        let shown = max(vsync, realClock.currentVsync + 1)
        try realClock.wait(forVsync: shown)
        return shown
    }

    /// The picture now on the output, top row first.
    public func screenshot() throws -> RGBAImage {
        try target.readPixels()
    }

    /// The picture now on the output as GL stores it (bottom row first): a copy and nothing more,
    /// for the presenting thread (the control socket's `screenshot` encodes it elsewhere).
    public func screenshotAsStored() throws -> RGBAImage {
        try target.readPixelsAsStored()
    }

    /// The picture now on the output as PNG.
    public func screenshotPNG() throws -> Data {
        try target.readPixels().pngData()
    }
}
