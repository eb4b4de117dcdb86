import CDRM
import Foundation
import Media
import Playback
import Render

/// A KMS output without GL (`display.scanout` `planes`): each picture is converted and scaled by
/// swscale straight into a mapped XRGB8888 dumb buffer (three per display, so one can be drawn
/// while one is on screen and one waits for its flip), which the primary plane scans out by page
/// flips (atomic or legacy, chosen once). Displays come and go as on the GL output: a
/// `DisplayLink` drives one head per connection, listening for hotplug notices; VT switches let the
/// display go. Each head saves the display state before its modeset and puts it back when it goes;
/// `close()` (called by deinit) also drops DRM master and closes the card.
///
/// Where an overlay plane of the display's CRTC lists Y'CbCr formats (atomic drivers, no
/// overlays/transitions, one picture), pictures go onto it instead (`PlaneRoute`, chosen once at
/// the first connection, logged as "picture route chosen" and said in `choice`'s reason):
/// DMA-BUF frames attached, software frames copied into Y'CbCr dumb buffers, the plane scaling
/// and converting (`YUVPlanePresenter`); the primary plane keeps the background.
///
/// Made on, and used only from, the presentation thread.
public final class KMSPlanesOutput: OutputDriver, DisplayPowerControl {
    public typealias Frame = VideoFrame

    public let name: String
    public let api: KMSAPI
    public let devicePath: String
    public let layer = ScanoutLayer()
    /// The display's flip clock; untimed, a virtual clock whose vsyncs advance with each flip.
    public var clock: any VsyncClock { untimed ? VirtualVsyncClock(refresh: link.clock.refresh) : link.clock }
    /// Untimed (`--clock virtual`): every picture is shown as soon as it is drawn and the previous
    /// flip is done, without pacing to the display's vsyncs: for throughput measurements.
    public let untimed: Bool
    /// The vsync the picture queued last was asked for (untimed: it is reported shown there).
    private var queuedVsync: Int64?
    /// The scan-out format (the dumb buffers').
    public let format = ScanoutFormat.xrgb8888
    /// How hotplug is noticed.
    public let hotplugSource: String
    /// Why this output draws without GL (`display.scanout` and the renderer) and, once a display
    /// has connected, how its pictures reach the planes (`PlaneRoute`) and why.
    public var choice: ScanoutChoice {
        guard let route = display.routeChoice else { return scanoutChoice }
        return ScanoutChoice(kind: .planes, reason: "\(scanoutChoice.reason); pictures: \(route.route.name): \(route.reason)")
    }
    private let scanoutChoice: ScanoutChoice
    /// What draws over or between pictures (overlays, transitions), set before the display
    /// connects: the Y'CbCr plane route is then not taken (it cannot blend).
    public var pictureBlending: String?

    private let device: DRMDevice
    private let ownsDevice: Bool
    private var closed = false
    private let display: PlanesDisplay
    private let link: DisplayLink<PlanesDisplay>
    private let logger: Logger
    private var lastBounds = PixelRect(x: 0, y: 0, width: 0, height: 0)

    /// Opens the card as `KMSOutput` does (`settings.device`, else the first with a connected
    /// connector), or drives `settings.connector` on `card`. No GL context is made.
    public init(settings: KMSSettings, card: KMSCard? = nil, choice: ScanoutChoice, untimed: Bool = false, background: RGBColor = .black,
                logger: Logger, hotplug: (events: any HotplugEvents, why: String)? = nil) throws {
        self.logger = logger
        self.untimed = untimed
        scanoutChoice = choice
        let (device, firstConnected) = try card.map { ($0.device, settings.connector) } ?? KMSOutput.openCard(settings)
        ownsDevice = card == nil
        self.device = device
        devicePath = device.path
        api = settings.api == .atomic && device.atomic ? .atomic : .legacy
        if settings.api == .atomic && !device.atomic {
            logger.warning("the driver has no atomic modesetting; using the legacy API", ["device": device.path])
        }
        if settings.format != .xrgb8888 {
            logger.warning("\(settings.format.fourcc) scan-out is not available on the planes path; using XR24", ["device": device.path])
        }
        layer.background = background
        name = "kms-\(settings.connector ?? firstConnected ?? "display")"
        let hotplug = hotplug ?? systemHotplugEvents()
        hotplugSource = hotplug.why
        device.followVT(logger: logger)
        display = PlanesDisplay(device: device, settings: settings, api: api, logger: logger)
        link = DisplayLink(display: display, hotplug: device.vt.map { VTAwareHotplugEvents(inner: hotplug.events, switcher: $0) } ?? hotplug.events,
                           refresh: RefreshRate(numerator: 60), logger: logger)
        display.conditions = { [layer, api, unowned self] in
            PlaneRouteConditions(atomic: api == .atomic, displayRotation: layer.rotation, pictures: max(1, layer.mosaicRegions.count),
                                 blending: self.pictureBlending)
        }
    }

    deinit { close() }

    public var state: DisplayLinkState { link.state }
    public var counters: DisplayLinkCounters { link.counters }
    public var onStateChange: ((DisplayLinkState) -> Void)? {
        get { link.onStateChange }
        set { link.onStateChange = newValue }
    }
    public var shouldContinue: () -> Bool {
        get { link.shouldContinue }
        set { link.shouldContinue = newValue }
    }
    public var displayWaitTimeout: Double? {
        get { link.waitTimeout }
        set { link.waitTimeout = newValue }
    }

    /// Waits for a connected display and opens it; false when `shouldContinue` said stop first.
    public func waitForDisplay() throws -> Bool { try link.waitForDisplay() }

    public var connectorName: String? { link.head?.connector }
    public var mode: DisplayMode? { link.head?.mode }
    public var flipClock: PageFlipClock? { link.head?.flipClock }

    public var bounds: PixelRect {
        if let head = link.head { lastBounds = head.bounds }
        return lastBounds
    }

    /// What this output can do: frames as decoded (swscale converts them into the scan-out
    /// buffer, or a Y'CbCr plane takes them), no texture limit; hardware frames stay in DMA-BUFs
    /// only where an overlay plane of the card would be chosen (`planeDMABufSupport`), else they
    /// are copied.
    public func openCapabilities() -> OutputCapabilities {
        OutputCapabilities(name: name, renderer: "none (KMS planes, no GL)", refresh: mode?.refresh, colorConversion: .shader,
                           colorConversionReason: "planes scan-out: swscale converts each picture into the XR24 scan-out buffer",
                           maxTextureSize: nil, dmabuf: planeDMABufSupport(), scanoutFormat: format.description)
    }

    /// DMA-BUF frames may stay DMA-BUFs when the route over all the card's planes would be a
    /// Y'CbCr overlay: then its formats are the ones listed (a frame it cannot take is copied).
    private func planeDMABufSupport() -> DMABufDisplaySupport {
        let renderer = "none (KMS planes)"
        guard let planes = try? device.describePlanes(crtcIndex: nil).planes,
              case .yuvPlane(let setup) = choosePlaneRoute(planes: planes, conditions: display.conditions()).route else {
            return .none(renderer: renderer)
        }
        return DMABufDisplaySupport(importsDMABufs: true, importsModifiers: setup.plane.modifiers != nil, samplesExternalImages: true,
                                    renderer: "\(renderer): \(setup.plane.name) scans DMA-BUFs out", formats: setup.plane.formats)
    }

    // MARK: Output driver

    public var isReady: Bool { link.isReady }

    /// Display power (a schedule's `display: off`, `display-power`), as `KMSOutput`'s.
    public var isDisplayOn: Bool { !link.isPoweredOff }
    public func setDisplayPower(_ on: Bool) throws { try link.setPower(on) }

    public func draw(_ frames: [VideoFrame?]) throws { try draw(frames, mixes: []) }

    /// As `draw(_:)`, with a transition's mix per frame.
    public func draw(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?]) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.draw { [layer, link] in
            guard let head = link.head, let target = head.target else { return }
            if let plane = head.yuvPlane {
                // The Y'CbCr plane cannot blend: a transition there is a cut (KioskPlayer keeps
                // outputs with transitions off that route: `pictureBlending`).
                try plane.draw(frames, layer: layer, into: target, bounds: head.bounds)
            } else {
                try layer.draw(frames, into: target, bounds: head.bounds, mixes: mixes)
            }
        }
    }

    public var lastRenderTime: Int64? { link.lastRenderTime }

    public func queue(forVsync vsync: Int64) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.queue(forVsync: vsync)
        queuedVsync = vsync
    }

    public func waitForEvent(timeout: Double) throws -> OutputEvent {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        let event = try link.waitForEvent(timeout: timeout)
        if untimed, case .flipped = event, let vsync = queuedVsync {
            queuedVsync = nil
            return .flipped(vsync: vsync)
        }
        return event
    }

    public func noteRescheduled(by vsyncs: Int64) { link.head?.flipClock.noteRescheduled(by: vsyncs) }

    /// The picture on screen now, read back from its dumb buffer.
    public func readBack() throws -> RGBAImage {
        guard let head = link.head, let image = head.screenImage() else {
            throw OutputUnavailable(description: "\(name) shows no picture yet")
        }
        return image
    }

    /// Takes the display down (the saved state goes back), frees the buffers, drops DRM master
    /// and closes the card (unless a `KMSCard` owns it). Safe to call more than once.
    public func close() {
        guard device.isOpen, !closed else { return }
        closed = true
        link.close()
        let counters = link.counters
        logger.info("output closed", ["device": device.path, "connects": "\(counters.connects)", "losses": "\(counters.losses)",
                                      "flipTimeouts": "\(counters.flipTimeouts)", "hotplugNotices": "\(counters.hotplugNotices)",
                                      "pictures": "\(layer.picturesDrawn)"])
        if ownsDevice { device.close() }
    }
}

/// A DRM card's connectors for the planes output (as `KMSDisplay`, without GL).
final class PlanesDisplay: HotplugDisplay {
    let device: DRMDevice
    let settings: KMSSettings
    let api: KMSAPI
    let logger: Logger
    private(set) var absence = "not probed yet"
    /// What besides the planes decides the picture route (set by the output).
    var conditions: () -> PlaneRouteConditions = { PlaneRouteConditions(atomic: false) }
    /// The picture route, chosen at the first connection and kept for the output's life.
    private(set) var routeChoice: PlaneRouteChoice?

    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, logger: Logger) {
        self.device = device
        self.settings = settings
        self.api = api
        self.logger = logger
    }

    func connect() throws -> PlanesHead? {
        try device.connectHead(settings: settings, api: api, absence: &absence) { connector, mode, pipe, committer in
            try PlanesHead(display: self, connector: connector, mode: mode, pipe: pipe, committer: committer, route: route(for: pipe))
        }
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
            choice = choosePlaneRoute(planes: found.planes, conditions: conditions())
        case .failure(let error):
            choice = PlaneRouteChoice(route: .xrgb, reason: "the card's planes cannot be read (\(error)): swscale into XRGB8888 dumb buffers on the primary plane")
        }
        routeChoice = choice
        logger.info("picture route chosen", ["route": choice.route.name, "why": choice.reason])
        return choice.route
    }

    func recheck(_ head: PlanesHead) -> String? {
        device.recheckHead(connector: head.connector, id: head.pipe.connector, mode: head.mode, settings: settings)
    }
}

/// One connection of a display on the planes path: connector, mode, CRTC + primary plane, three
/// dumb buffers of the mode's size, the page flips and their clock.
final class PlanesHead: DisplayHead {
    static let bufferCount = 3

    let connector: String
    let mode: DisplayMode
    let flipClock: PageFlipClock
    let pipe: KMSPipe
    var bounds: PixelRect { PixelRect(x: 0, y: 0, width: pipe.width, height: pipe.height) }
    /// The buffer being drawn (only during `draw`).
    private(set) var target: DumbBuffer?
    /// The Y'CbCr plane's pictures (the `yuvPlane` route); nil on the XRGB route.
    private(set) var yuvPlane: YUVPlanePresenter?

    private unowned let display: PlanesDisplay
    private var buffers: [DumbBuffer]          // freed in close()
    private let scanout: KMSScanout

    /// Standby or awake through the scan-out's committer (`DisplayLink.setPower`).
    func setPower(_ on: Bool) throws { try scanout.setPower(on) }
    private var saved: SavedCRTC?
    private var onScreen: Int?
    private var drawn: Int?
    private var inFlight: (index: Int, planned: Int64)?
    private var lastRenderNanoseconds: Int64?

    init(display: PlanesDisplay, connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter, route: PlaneRoute) throws {
        self.display = display
        self.connector = connector
        self.mode = mode.displayMode
        self.pipe = pipe
        buffers = try (0..<Self.bufferCount).map { _ in try DumbBuffer(device: display.device, width: pipe.width, height: pipe.height) }
        flipClock = PageFlipClock(refresh: mode.refresh)
        scanout = KMSScanout(device: display.device, committer: committer, pipe: pipe)
        saved = try display.device.saveState(of: pipe)  // before the first modeset
        if case .yuvPlane(let setup) = route, let atomic = committer as? AtomicCommitter {
            let plane = try YUVPlanePresenter(setup: setup, device: display.device, crtc: pipe.crtc, logger: display.logger)
            yuvPlane = plane
            atomic.planeAdditions = { [unowned plane] request in plane.add(to: request) }
        }
        display.logger.info("planes scan-out", ["connector": connector, "buffers": "\(Self.bufferCount)",
                                                "size": "\(pipe.width)x\(pipe.height)", "pitch": "\(buffers[0].layout.pitch)",
                                                "format": "XR24",
                                                "path": yuvPlane.map { "\($0.setup.plane.name) for pictures, XR24 for the background" } ?? "swscale into dumb buffers"])
    }

    func draw(_ draw: () throws -> Void) throws -> Int64? {
        guard !buffers.isEmpty else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        drawn = nil  // drawn but never queued: drawn again
        guard let index = buffers.indices.first(where: { $0 != onScreen && $0 != inFlight?.index }) else {
            throw OutputUnavailable(description: "no free scan-out buffer on \(connector)")
        }
        target = buffers[index]
        defer { target = nil }
        let started = monotonicNow()
        try draw()
        let rendered = monotonicNow() - started
        drawn = index
        lastRenderNanoseconds = rendered
        // The first picture pays for one-time work (the scaler's setup, the first background).
        return scanout.modeSet ? rendered : nil
    }

    func queueFlip(planned: Int64) throws {
        guard let index = drawn else { return }
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
        inFlight = (index, planned)
    }

    func waitForFlip(timeout: Double) throws -> Int64 {
        guard let flight = inFlight else { throw OutputUnavailable(description: "no flip queued on \(connector)") }
        let event = try scanout.waitForFlip(timeout: timeout)
        inFlight = nil
        onScreen = flight.index
        yuvPlane?.flipped()
        return flipClock.record(event, planned: flight.planned)
    }

    /// The picture on screen, read back from its buffer.
    func screenImage() -> RGBAImage? {
        onScreen.map { buffers[$0].readBack() }
    }

    func close(lost: Bool) {
        guard !buffers.isEmpty else { return }
        let device = display.device
        if let saved {
            do {
                let restored = try device.restore(saved, connector: pipe.connector)
                display.logger.info("display state restored", ["how": restored.how, "refused": restored.refused.joined(separator: "; "),
                                                               "differs": restored.differences.isEmpty ? "none" : restored.differences.joined(separator: "; ")])
            } catch {
                if lost {
                    display.logger.debug("display state not restored (the display is gone)", ["error": "\(error)"])
                } else {
                    display.logger.warning("cannot restore the display state", ["error": "\(error)", "device": device.path])
                }
            }
            self.saved = nil
        }
        if let plane = yuvPlane {
            let counts = plane.counts
            display.logger.info("Y'CbCr plane released", ["plane": "\(plane.setup.plane.id)", "attached": "\(counts.attached)",
                                                          "copied": "\(counts.copied)", "converted": "\(counts.converted)", "xrgb": "\(counts.xrgb)"])
        }
        yuvPlane = nil  // after the restore: its framebuffers removed, handles closed, frames let go
        buffers = []  // their framebuffers removed, mappings and buffers freed
        device.releaseCRTC(pipe.crtc)
        onScreen = nil
        drawn = nil
        inFlight = nil
        let stats = flipClock.stats
        display.logger.info("display released", [
            "device": device.path, "connector": connector, "mode": "\(mode)", "lost": "\(lost)", "flips": "\(stats.flips)",
            "late": "\(stats.lateFrames)", "missedVsyncs": "\(stats.missedVsyncs)", "rescheduled": "\(stats.rescheduledFrames)",
            "renderMs": lastRenderNanoseconds.map { (Double($0) / 1e6).formatted(decimals: 2) } ?? "-",
            "refresh": flipClock.measuredRefresh.map { $0.formatted(decimals: 3) } ?? "-"])
    }
}
