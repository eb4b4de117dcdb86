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

/// An output with no screen: EGL surfaceless rendering into an offscreen target of the configured
/// mode. Used where no DRM device is connected and a GPU render node is (else the kiosk draws
/// without GL: `HeadlessPlanesOutput`), for `PlayerView.headless`, and for tests.
///
/// Made on, and used only from, the presentation thread (its GL context is current there).
public final class HeadlessOutput: OutputDriver, DisplayPowerControl {
    public typealias Frame = VideoFrame

    public let name: String
    public let mode: DisplayMode
    public let layer: PlayerLayer
    public let context: GLContext
    /// How this output came to draw with GL (`display.scanout`), where the kiosk chose it.
    public var scanout: ScanoutChoice?
    private let target: Framebuffer
    private var pacing: HeadlessPacing
    public var clock: any VsyncClock { pacing.clock }
    /// False in standby (`setDisplayPower(false)`): the picture is black and nothing is presented.
    public var isDisplayOn: Bool { pacing.isDisplayOn }

    public init(name: String = "headless-0", mode: DisplayMode, clock kind: ClockKind, background: RGBColor = .black) throws {
        self.name = name
        self.mode = mode
        context = try GLContext.surfaceless()
        StartupMarks.mark("egl-context")
        target = try Framebuffer(width: mode.width, height: mode.height)
        layer = try PlayerLayer()
        StartupMarks.mark("layer-made")
        layer.background = background
        layer.directTarget = target
        pacing = HeadlessPacing(kind, refresh: mode.refresh)
    }

    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: mode.width, height: mode.height) }

    /// Draws into the offscreen target: one frame, or a mosaic (one frame per
    /// `layer.mosaicRegions` entry). On a real clock it waits for the renderer to finish, so that
    /// the picture counts as shown on the first vsync after that.
    public func draw(_ frames: [VideoFrame?]) throws { try draw(frames, mixes: []) }

    /// As `draw(_:)`, with a transition's mix per frame (`mixes` may be shorter: no mix).
    public func draw(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?]) throws {
        let background = layer.background
        if !isDisplayOn {
            // In standby the screen is black whatever is asked.
            layer.background = .black
        }
        defer { layer.background = background }
        let frames = isDisplayOn ? frames : frames.map { _ in nil }
        target.bind()
        if frames.count == 1 {
            try layer.draw(frames[0], bounds: bounds, mix: isDisplayOn ? mixes.first ?? nil : nil)
        } else {
            try layer.draw(mosaic: frames, bounds: bounds, mixes: isDisplayOn ? mixes : [])
        }
        if isDisplayOn { try layer.drawOverlays(bounds: bounds) }
        finishDrawing()
    }

    /// A wall output showing several regions (a mosaic): draws the part of each region's picture
    /// that `window`, this output's rectangle on the canvas, shows. Queue it as any picture. (One
    /// region: set `layer.wallPlacement` and use `draw(_:)`.)
    public func draw(regions: [PlayerLayer.WallRegionFrame], window: PixelRect) throws {
        target.bind()
        try layer.draw(regions: regions, window: window, bounds: bounds)
        try layer.drawOverlays(bounds: bounds)
        finishDrawing()
    }

    private func finishDrawing() {
        if pacing.realClock == nil { glFlushRenderer() } else { glFinishRenderer() }
    }

    public func queue(forVsync vsync: Int64) throws { pacing.queue(forVsync: vsync) }
    public var isReady: Bool { pacing.isReady }
    public func waitForEvent(timeout: Double) throws -> OutputEvent { pacing.waitForEvent(timeout: timeout) }

    /// Standby: the picture goes black (what a screen in standby shows) and stays so until woken.
    public func setDisplayPower(_ on: Bool) throws {
        guard pacing.setDisplayOn(on) else { return }
        if !on { try draw([nil]) }
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

    /// The same, scaled down by GL to at most `maxWidth` pixels wide (a thumbnail).
    public func screenshotAsStored(maxWidth: Int) throws -> RGBAImage {
        try target.readPixelsAsStored(maxWidth: maxWidth)
    }

    /// The picture now on the output as PNG.
    public func screenshotPNG() throws -> Data {
        try target.readPixels().pngData()
    }
}

/// The vsyncs of an output with no display, and its standby: what both headless outputs (GL and
/// `HeadlessPlanesOutput`) share.
struct HeadlessPacing {
    let clock: any VsyncClock
    /// The clock when it is a real one (nil: virtual).
    let realClock: RealVsyncClock?
    /// The vsync the picture queued last is shown on, until its event is reported.
    private var queued: Int64?
    private(set) var isDisplayOn = true

    init(_ kind: ClockKind, refresh: RefreshRate) {
        switch kind {
        case .real:
            let clock = RealVsyncClock(refresh: refresh)
            realClock = clock
            self.clock = clock
        case .virtual:
            realClock = nil
            clock = VirtualVsyncClock(refresh: refresh)
        }
    }

    /// The picture drawn last is shown on `vsync`, or on the first vsync after now when that one
    /// has passed.
    mutating func queue(forVsync vsync: Int64) {
        queued = realClock.map { max(vsync, $0.currentVsync + 1) } ?? vsync
    }

    /// In standby with a real clock: not ready, so the presentation loop presents nothing. With a
    /// virtual clock the vsyncs go on (they are the clock), each a black picture.
    var isReady: Bool { isDisplayOn || realClock == nil }

    /// Whether this changed anything (the output then paints its standby picture or wakes).
    mutating func setDisplayOn(_ on: Bool) -> Bool {
        guard on != isDisplayOn else { return false }
        isDisplayOn = on
        queued = nil
        return true
    }

    /// A virtual clock: the queued picture is shown at once. A real one: waits for the vsync the
    /// queued picture is shown on, or `timeout` when that comes first (or nothing is queued).
    mutating func waitForEvent(timeout: Double) -> OutputEvent {
        if !isDisplayOn && queued == nil {
            // In standby nothing happens; a virtual clock does not spin meanwhile.
            if timeout > 0 { Thread.sleep(forTimeInterval: realClock == nil ? min(timeout, 0.01) : timeout) }
            return .timedOut
        }
        guard let realClock else {
            guard let vsync = queued else { return .timedOut }
            queued = nil
            return .flipped(vsync: vsync)
        }
        if let vsync = queued, let left = realClock.timeUntilVsync(vsync)?.seconds, left <= timeout {
            if left > 0 { Thread.sleep(forTimeInterval: left) }
            queued = nil
            return .flipped(vsync: vsync)
        }
        if timeout > 0 { Thread.sleep(forTimeInterval: timeout) }
        return .timedOut
    }
}
