import CDRM
import Foundation
import Media
import Playback
import Render

/// A KMS output's presentation without GL (`display.scanout` `planes`): each picture is converted
/// and scaled by swscale straight into a mapped XRGB8888 dumb buffer (three per display, so one
/// can be drawn while one is on screen and one waits for its flip), which the primary plane scans
/// out.
///
/// Where an overlay plane of the display's CRTC lists Y'CbCr formats (atomic drivers, no
/// overlays/transitions, one picture), pictures go onto it instead (`PlaneRoute`, chosen once at
/// the first connection, logged as "picture route chosen" and said in the output's `scanout`
/// reason): DMA-BUF frames attached, software frames copied into Y'CbCr dumb buffers, the plane
/// scaling and converting (`YUVPlanePresenter`); the primary plane keeps the background.
final class KMSPlanesPresentation: KMSPresentation {
    let kind = ScanoutKind.planes
    let scanoutLayer = ScanoutLayer()
    var layer: any PictureLayer { scanoutLayer }
    let renderer = "none (KMS planes, no GL)"
    /// What draws over or between pictures (overlays, transitions), set before the display
    /// connects: the Y'CbCr plane route is then not taken (it cannot blend).
    var pictureBlending: String?
    var routeReason: String? { routeChoice.map { "\($0.route.name): \($0.reason)" } }
    let readsBack = true
    let logsFlipSpread = false
    var closedFields: [(String, String)] { [("pictures", "\(scanoutLayer.picturesDrawn)")] }
    /// The scan-out format (the dumb buffers').
    let format = ScanoutFormat.xrgb8888

    let device: DRMDevice
    let api: KMSAPI
    let logger: Logger
    /// The picture route, chosen at the first connection and kept for the output's life.
    private(set) var routeChoice: PlaneRouteChoice?

    /// No GL context is made.
    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, background: RGBColor, logger: Logger) {
        self.device = device
        self.api = api
        self.logger = logger
        if settings.format != .xrgb8888 {
            logger.warning("\(settings.format.fourcc) scan-out is not available on the planes path; using XR24", ["device": device.path])
        }
        scanoutLayer.background = background
    }

    /// What besides the planes decides the picture route.
    private var conditions: PlaneRouteConditions {
        PlaneRouteConditions(atomic: api == .atomic, displayRotation: scanoutLayer.rotation,
                             pictures: max(1, scanoutLayer.mosaicRegions.count), blending: pictureBlending)
    }

    func makeBuffers(connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws -> any KMSHeadBuffers {
        try DumbHeadBuffers(presentation: self, connector: connector, pipe: pipe, committer: committer, route: route(for: pipe))
    }

    /// The picture route for a connection on `pipe`: chosen (`choosePlaneRoute`) and logged at
    /// the first one; later ones keep it, or use XRGB where its plane cannot show on their CRTC.
    private func route(for pipe: KMSPipe) -> PlaneRoute {
        let described = Result { () throws -> (planes: [PlaneDescription], problems: [String]) in
            guard let index = try device.resources().crtcs.firstIndex(of: pipe.crtc) else {
                throw DRMError(call: "drmModeGetResources", detail: "CRTC \(pipe.crtc) is not one of \(device.path)'s")
            }
            return try device.describePlanes(crtcIndex: index)
        }
        if let chosen = routeChoice {
            if case .yuvPlane(let setup) = chosen.route, (try? described.get())?.planes.contains(where: { $0.id == setup.plane.id }) != true {
                logger.warning("the Y'CbCr plane cannot show on this connection's CRTC; pictures go into XRGB buffers",
                               ["plane": "\(setup.plane.id)", "crtc": "\(pipe.crtc)"])
                return .xrgb
            }
            return chosen.route
        }
        let choice: PlaneRouteChoice
        switch described {
        case .success(let found):
            if !found.problems.isEmpty { logger.warning("plane descriptions incomplete", ["problems": found.problems.joined(separator: "; ")]) }
            choice = choosePlaneRoute(planes: found.planes, conditions: conditions)
        case .failure(let error):
            choice = PlaneRouteChoice(route: .xrgb, reason: "the card's planes cannot be read (\(error)): swscale into XRGB8888 dumb buffers on the primary plane")
        }
        routeChoice = choice
        logger.info("picture route chosen", ["route": choice.route.name, "why": choice.reason])
        return choice.route
    }

    /// Frames as decoded (swscale converts them into the scan-out buffer, or a Y'CbCr plane takes
    /// them), no texture limit; hardware frames stay in DMA-BUFs only where an overlay plane of the
    /// card would be chosen (`planeDMABufSupport`), else they are copied. `conversion` is not
    /// looked at: there is no shader to choose for.
    func capabilities(name: String, refresh: RefreshRate?, conversion: ColorConversionMode) -> OutputCapabilities {
        OutputCapabilities(name: name, renderer: renderer, refresh: refresh, colorConversion: .shader,
                           colorConversionReason: "planes scan-out: swscale converts each picture into the XR24 scan-out buffer",
                           maxTextureSize: nil, dmabuf: planeDMABufSupport(), scanoutFormat: format.description)
    }

    /// DMA-BUF frames may stay DMA-BUFs when the route over all the card's planes would be a
    /// Y'CbCr overlay: then its formats are the ones listed (a frame it cannot take is copied).
    private func planeDMABufSupport() -> DMABufDisplaySupport {
        let renderer = "none (KMS planes)"
        guard let planes = try? device.describePlanes(crtcIndex: nil).planes,
              case .yuvPlane(let setup) = choosePlaneRoute(planes: planes, conditions: conditions).route else {
            return .none(renderer: renderer)
        }
        return DMABufDisplaySupport(importsDMABufs: true, importsModifiers: setup.plane.modifiers != nil, samplesExternalImages: true,
                                    renderer: "\(renderer): \(setup.plane.name) scans DMA-BUFs out", formats: setup.plane.formats)
    }

    func describe(rotation: Rotation, hotplug: String, untimed: Bool) -> [(String, String)] {
        [("format", format.description), ("scanout", "planes"), ("clock", untimed ? "virtual (untimed)" : "flips"),
         ("rotation", "\(rotation.rawValue)"), ("hotplug", hotplug)]
    }
}

/// One head's buffers on the planes presentation: three XRGB dumb buffers of the mode's size on
/// the primary plane and, on the `yuvPlane` route, the Y'CbCr plane's pictures.
final class DumbHeadBuffers: KMSHeadBuffers {
    static let bufferCount = 3

    private unowned let presentation: KMSPlanesPresentation
    private let connector: String
    /// The picture being drawn (only during `draw`).
    private var target: XRGBCanvas?
    /// The Y'CbCr plane's pictures (the `yuvPlane` route); nil on the XRGB route.
    private var yuvPlane: YUVPlanePresenter?
    private var buffers: [DumbBuffer]          // freed in close()
    private var onScreen: Int?
    private var drawn: Int?
    private var inFlight: Int?
    private(set) var lastRenderNanoseconds: Int64?

    init(presentation: KMSPlanesPresentation, connector: String, pipe: KMSPipe, committer: any KMSCommitter, route: PlaneRoute) throws {
        self.presentation = presentation
        self.connector = connector
        let device = presentation.device
        buffers = try (0..<Self.bufferCount).map { _ in try DumbBuffer(device: device, width: pipe.width, height: pipe.height) }
        if case .yuvPlane(let setup) = route, let atomic = committer as? AtomicCommitter {
            let plane = try YUVPlanePresenter(setup: setup, device: device, crtc: pipe.crtc, logger: presentation.logger)
            yuvPlane = plane
            atomic.planeAdditions = { [unowned plane] request in plane.add(to: request) }
        }
        presentation.logger.info("planes scan-out", ["connector": connector, "buffers": "\(Self.bufferCount)",
                                                     "size": "\(pipe.width)x\(pipe.height)", "pitch": "\(buffers[0].canvas.layout.pitch)",
                                                     "format": "XR24",
                                                     "path": yuvPlane.map { "\($0.setup.plane.name) for pictures, XR24 for the background" } ?? "swscale into dumb buffers"])
    }

    func draw(_ draw: () throws -> Void, scanout: KMSScanout) throws -> Int64? {
        guard !buffers.isEmpty else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        drawn = nil  // drawn but never queued: drawn again
        guard let index = buffers.indices.first(where: { $0 != onScreen && $0 != inFlight }) else {
            throw OutputUnavailable(description: "no free scan-out buffer on \(connector)")
        }
        target = buffers[index].canvas
        defer { target = nil }
        let started = monotonicNow()
        try draw()
        let rendered = monotonicNow() - started
        drawn = index
        lastRenderNanoseconds = rendered
        // The first picture pays for one-time work (the scaler's setup, the first background).
        return scanout.modeSet ? rendered : nil
    }

    func render(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?], bounds: PixelRect) throws {
        guard let target else { return }
        let layer = presentation.scanoutLayer
        if let plane = yuvPlane {
            // The Y'CbCr plane cannot blend: a transition there is a cut (KioskPlayer keeps
            // outputs with transitions off that route: `pictureBlending`).
            try plane.draw(frames, layer: layer, into: target, bounds: bounds)
        } else {
            try layer.draw(frames, into: target, bounds: bounds, mixes: mixes)
        }
    }

    func queueFlip(on scanout: KMSScanout) throws -> Bool {
        guard let index = drawn else { return false }
        drawn = nil
        yuvPlane?.queued()
        do {
            try scanout.queueFlip(framebuffer: buffers[index].framebuffer)
        } catch let error where yuvPlane?.refused == nil && yuvPlane != nil {
            // The driver refused the Y'CbCr plane's state (a scaling limit, a format it lists but
            // cannot show this way): this picture shows the background, the next ones go the
            // XRGB way; the same commit again with the plane off.
            yuvPlane?.refuse("\(error)")
            try scanout.queueFlip(framebuffer: buffers[index].framebuffer)
        }
        inFlight = index
        return true
    }

    func flipped() {
        guard let index = inFlight else { return }
        inFlight = nil
        onScreen = index
        yuvPlane?.flipped()
    }

    /// The picture on screen, read back from its buffer.
    func screenImage(maxWidth: Int?) -> RGBAImage? {
        onScreen.map { buffers[$0].canvas.readBack(maxWidth: maxWidth) }
    }

    func close() {
        if let plane = yuvPlane {
            let counts = plane.counts
            presentation.logger.info("Y'CbCr plane released", ["plane": "\(plane.setup.plane.id)", "attached": "\(counts.attached)",
                                                               "copied": "\(counts.copied)", "converted": "\(counts.converted)", "xrgb": "\(counts.xrgb)"])
        }
        yuvPlane = nil  // its framebuffers removed, handles closed, frames let go
        buffers = []  // their framebuffers removed, mappings and buffers freed
        onScreen = nil
        drawn = nil
        inFlight = nil
    }
}
