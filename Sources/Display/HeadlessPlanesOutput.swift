import Foundation
import Media
import Playback
import Render

/// An output with no screen that draws without GL: the planes scan-out's layer (`ScanoutLayer`:
/// swscale converts and scales each picture, overlays and transitions blended in software) paints
/// an XRGB picture in memory of the configured mode. Chosen by `display.scanout` (`auto` where the
/// machine has no GPU render node: EGL could only be llvmpipe there, and its libraries would be
/// most of the process's memory). Paced as `HeadlessOutput` is (`HeadlessPacing`).
///
/// Used only from the presentation thread.
public final class HeadlessPlanesOutput: OutputDriver, DisplayPowerControl {
    public typealias Frame = VideoFrame

    public let name: String
    public let mode: DisplayMode
    public let layer = ScanoutLayer()
    public let renderer = "none (headless planes: swscale into memory, no GL)"
    /// How this output came to draw without GL (`display.scanout`), where the kiosk chose it.
    public var scanout: ScanoutChoice?
    private let canvas: XRGBCanvas
    private var pacing: HeadlessPacing
    public var clock: any VsyncClock { pacing.clock }
    /// False in standby (`setDisplayPower(false)`): the picture is black and nothing is presented.
    public var isDisplayOn: Bool { pacing.isDisplayOn }

    public init(name: String = "headless-0", mode: DisplayMode, clock kind: ClockKind, background: RGBColor = .black) throws {
        guard let canvas = XRGBCanvas(width: mode.width, height: mode.height) else {
            throw OutputUnavailable(description: "headless output \(name): \(mode.width)x\(mode.height) is outside 1...16384 pixels a side")
        }
        self.name = name
        self.mode = mode
        self.canvas = canvas
        layer.background = background
        pacing = HeadlessPacing(kind, refresh: mode.refresh)
    }

    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: mode.width, height: mode.height) }

    public func draw(_ frames: [VideoFrame?]) throws { try draw(frames, mixes: []) }

    /// One frame, or one per `layer.mosaicRegions` entry, with a transition's mix per frame; in
    /// standby the picture is black whatever is asked.
    public func draw(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?]) throws {
        guard isDisplayOn else {
            canvas.fill(bounds, with: .black)
            (canvas.painted, canvas.overlaid) = (nil, [])
            return
        }
        try layer.draw(frames, into: canvas, bounds: bounds, mixes: mixes)
    }

    public func queue(forVsync vsync: Int64) throws { pacing.queue(forVsync: vsync) }
    public var isReady: Bool { pacing.isReady }
    public func waitForEvent(timeout: Double) throws -> OutputEvent { pacing.waitForEvent(timeout: timeout) }

    /// Standby: the picture goes black (what a screen in standby shows) and stays so until woken.
    public func setDisplayPower(_ on: Bool) throws {
        guard pacing.setDisplayOn(on) else { return }
        if !on { try draw([nil]) }
    }

    /// The picture now on the output, top row first; at most `maxWidth` pixels wide where given
    /// (scaled as it is read: a thumbnail costs its own pixels, not the whole picture's copy).
    public func screenshot(maxWidth: Int? = nil) -> RGBAImage { canvas.readBack(maxWidth: maxWidth) }

    /// Frames as decoded: swscale converts them, so no texture limit; no DMA-BUF import (a
    /// hardware frame is copied to memory). `conversion` is not looked at: there is no shader.
    public func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities {
        OutputCapabilities(name: name, renderer: renderer, refresh: mode.refresh, colorConversion: .shader,
                           colorConversionReason: "headless planes: swscale converts each picture into the XR24 picture",
                           maxTextureSize: nil, dmabuf: .none(renderer: renderer), scanoutFormat: ScanoutFormat.xrgb8888.description)
    }

    /// Read back from memory, and a simulated standby; no display, so no page flips.
    public var features: OutputFeatures { [.screenshot, .displayPower] }
    public var displayPower: (any DisplayPowerControl)? { self }
    public var pageFlips: PageFlipClock? { nil }
}

/// The GPU render nodes in `directory` (`renderD128`...): none on a machine without a GPU (a
/// server, a VM without one, a container), where EGL could only be a software rasterizer.
public func renderNodes(in directory: String = "/dev/dri") -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("renderD") }.sorted()
}

/// How a headless output draws under `mode`: `auto` without GL where `renderNodes` is empty (no
/// GPU: GL would be llvmpipe, which costs more CPU per picture than swscale and loads LLVM), else
/// with GL.
public func chooseHeadlessScanout(_ mode: ScanoutMode, renderNodes: [String]) -> ScanoutChoice {
    switch mode {
    case .gl: return ScanoutChoice(kind: .gl, reason: "display.scanout is gl")
    case .planes: return ScanoutChoice(kind: .planes, reason: "display.scanout is planes")
    case .auto:
        guard renderNodes.isEmpty else {
            return ScanoutChoice(kind: .gl, reason: "a GPU render node (\(renderNodes.joined(separator: ", "))) draws with GL")
        }
        return ScanoutChoice(kind: .planes, reason: "no GPU render node in /dev/dri: GL could only be Mesa's software rasterizer (llvmpipe), so swscale draws into memory and no GL is loaded")
    }
}
