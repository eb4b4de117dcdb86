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
/// What this output does not do (yet): put YUV frames on a plane that lists their format (letting
/// the display controller convert and scale), or attach a decoder's DMA-BUF frames to a plane:
/// hardware frames are copied to memory and converted like the rest.
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
    /// Why this output draws without GL (`display.scanout` and the renderer).
    public let choice: ScanoutChoice

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
        self.choice = choice
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
    /// buffer), no texture limit, no DMA-BUF import (hardware frames are copied).
    public func openCapabilities() -> OutputCapabilities {
        OutputCapabilities(name: name, renderer: "none (KMS planes, no GL)", refresh: mode?.refresh, colorConversion: .shader,
                           colorConversionReason: "planes scan-out: swscale converts each picture into the XR24 scan-out buffer",
                           maxTextureSize: nil, dmabuf: .none(renderer: "none (KMS planes)"), scanoutFormat: format.description)
    }

    // MARK: Output driver

    public var isReady: Bool { link.isReady }

    /// Display power (a schedule's `display: off`, `display-power`), as `KMSOutput`'s.
    public var isDisplayOn: Bool { !link.isPoweredOff }
    public func setDisplayPower(_ on: Bool) throws { try link.setPower(on) }

    public func draw(_ frames: [VideoFrame?]) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.draw { [layer, link] in
            guard let head = link.head, let target = head.target else { return }
            try layer.draw(frames, into: target, bounds: head.bounds)
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

    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, logger: Logger) {
        self.device = device
        self.settings = settings
        self.api = api
        self.logger = logger
    }

    func connect() throws -> PlanesHead? {
        try device.connectHead(settings: settings, api: api, absence: &absence) { connector, mode, pipe, committer in
            try PlanesHead(display: self, connector: connector, mode: mode, pipe: pipe, committer: committer)
        }
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

    init(display: PlanesDisplay, connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws {
        self.display = display
        self.connector = connector
        self.mode = mode.displayMode
        self.pipe = pipe
        buffers = try (0..<Self.bufferCount).map { _ in try DumbBuffer(device: display.device, width: pipe.width, height: pipe.height) }
        flipClock = PageFlipClock(refresh: mode.refresh)
        scanout = KMSScanout(device: display.device, committer: committer, pipe: pipe)
        saved = try display.device.saveState(of: pipe)  // before the first modeset
        display.logger.info("planes scan-out", ["connector": connector, "buffers": "\(Self.bufferCount)",
                                                "size": "\(pipe.width)x\(pipe.height)", "pitch": "\(buffers[0].layout.pitch)",
                                                "format": "XR24", "path": "swscale into dumb buffers"])
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
        try scanout.queueFlip(framebuffer: buffers[index].framebuffer)
        inFlight = (index, planned)
    }

    func waitForFlip(timeout: Double) throws -> Int64 {
        guard let flight = inFlight else { throw OutputUnavailable(description: "no flip queued on \(connector)") }
        let event = try scanout.waitForFlip(timeout: timeout)
        inFlight = nil
        onScreen = flight.index
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
