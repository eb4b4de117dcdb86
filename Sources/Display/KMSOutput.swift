import CDRM
import Foundation
import Media
import Playback
import Render

/// An output on a real display through DRM/KMS, surviving displays that are absent at start or
/// come and go. The output owns the card (or drives one connector of a shared `KMSCard`), the
/// hotplug notices, VT switching and the display link; each connection of a display gets a head
/// (`KMSHead`: connector, mode, CRTC, primary plane, page-flip clock, the CRTC's saved state),
/// driven by a `DisplayLink`. Pictures are shown by page flips (atomic or legacy, chosen once).
///
/// How pictures reach the screen is the output's presentation (as mpv's vo_gpu sits over its
/// swapchain): `KMSGLPresentation` (GBM + EGL + the player layer) or `KMSPlanesPresentation`
/// (swscale into dumb buffers, or a Y'CbCr overlay plane), chosen once when the output opens.
///
/// Each head saves the CRTC's state before its modeset and puts it back when it goes; `close()`
/// (called by deinit, and by the kiosk on every way out) also drops DRM master and closes the
/// device. Made on, and used only from, the presentation thread (a GL context is current there).
public final class KMSOutput: OutputDriver, DisplayPowerControl {
    public typealias Frame = VideoFrame

    public let name: String
    public let api: KMSAPI
    public let devicePath: String
    /// What places the pictures: the player layer (GL) or the scan-out layer (planes).
    public var layer: any PictureLayer { presentation.layer }
    /// The display's flip clock; untimed, a virtual clock whose vsyncs advance with each flip.
    public var clock: any VsyncClock { untimed ? VirtualVsyncClock(refresh: link.clock.refresh) : link.clock }
    /// Untimed (`--clock virtual`): every picture is shown as soon as it is drawn and the previous
    /// flip is done, without pacing to the display's vsyncs: for throughput measurements.
    public let untimed: Bool
    /// How pictures reach the screen (`gl` or `planes`).
    public var scanoutKind: ScanoutKind { presentation.kind }
    /// The GL renderer (`GL_RENDERER`), or what draws instead of GL.
    public var renderer: String { presentation.renderer }
    /// How hotplug is noticed ("netlink uevents", or the sysfs poll and why).
    public let hotplugSource: String
    /// The `display.scanout` choice that made this output's presentation, and why.
    public let scanoutChoice: ScanoutChoice
    /// That choice and, once a display has connected on the planes presentation, how its pictures
    /// reach the planes (`PlaneRoute`) and why.
    public var scanout: ScanoutChoice? {
        guard let route = presentation.routeReason else { return scanoutChoice }
        return ScanoutChoice(kind: scanoutChoice.kind, reason: "\(scanoutChoice.reason); pictures: \(route)")
    }
    /// What draws over or between pictures (overlays, transitions), set before the display
    /// connects: the planes presentation then keeps pictures off the Y'CbCr plane (it cannot blend).
    public var pictureBlending: String? {
        get { presentation.pictureBlending }
        set { presentation.pictureBlending = newValue }
    }

    private let device: DRMDevice
    /// Whether `close` closes the card (false when a `KMSCard` shared by several outputs owns it).
    private let ownsDevice: Bool
    private var closed = false
    private let presentation: any KMSPresentation
    private let link: DisplayLink<KMSDisplay>
    private let logger: Logger
    private var lastBounds = PixelRect(x: 0, y: 0, width: 0, height: 0)
    /// The vsync the picture queued last was asked for (untimed: it is reported shown there).
    private var queuedVsync: Int64?

    /// Opens the card (`settings.device`, else the first with a connected connector, else the
    /// first that can drive a display) and the first presentation `scanout` allows that opens
    /// (`openPresentation`; logged as "scan-out chosen", kept in `scanoutChoice`). A display need
    /// not be connected yet: `waitForDisplay` waits for one. Throws `OutputUnavailable` naming what
    /// is missing (no device, no permission, not a display device).
    ///
    /// With `card`, the output drives `settings.connector` on that card, opened once for all the
    /// outputs of a wall node; the card stays open when the output closes. `untimed` applies to
    /// the planes presentation only (a GL output has always paced to its flips).
    public init(settings: KMSSettings, card: KMSCard? = nil, scanout: ScanoutMode = .gl, untimed: Bool = false,
                background: RGBColor = .black, logger: Logger, hotplug: (events: any HotplugEvents, why: String)? = nil) throws {
        self.logger = logger
        let (device, firstConnected) = try card.map { ($0.device, settings.connector) } ?? Self.openCard(settings)
        ownsDevice = card == nil
        self.device = device
        devicePath = device.path
        let api: KMSAPI = settings.api == .atomic && device.atomic ? .atomic : .legacy
        self.api = api
        if settings.api == .atomic && !device.atomic {
            logger.warning("the driver has no atomic modesetting; using the legacy API", ["device": device.path])
        }
        do {
            let opened = try Self.openPresentation(scanout, device: device, settings: settings, api: api,
                                                   background: background, logger: logger)
            presentation = opened.presentation
            scanoutChoice = opened.choice
        } catch {
            if ownsDevice { device.close() }   // nothing else holds it yet
            throw error
        }
        logger.info("scan-out chosen", ["scanout": presentation.kind.rawValue, "why": scanoutChoice.reason, "setting": scanout.rawValue])
        self.untimed = untimed && presentation.kind == .planes
        name = "kms-\(settings.connector ?? firstConnected ?? "display")"
        let hotplug = hotplug ?? systemHotplugEvents()
        hotplugSource = hotplug.why
        // VT switches: the display is let go of while the terminal is in the background.
        device.followVT(logger: logger)
        let display = KMSDisplay(device: device, settings: settings, api: api, presentation: presentation, logger: logger)
        link = DisplayLink(display: display, hotplug: device.vt.map { VTAwareHotplugEvents(inner: hotplug.events, switcher: $0) } ?? hotplug.events,
                           refresh: RefreshRate(numerator: 60), logger: logger)
    }

    deinit { close() }

    /// The presentations `mode` allows, in the order they are tried: the one place the way
    /// pictures reach a KMS display is chosen (as mpv's `init_best_video_out` tries its table).
    /// Under `auto`, a card with no GPU (`CardGPU.none`) goes straight to the planes: no GL stack
    /// is loaded to learn that its renderer is a software one.
    static func presentationTable(_ mode: ScanoutMode, card: CardGPU = .unknown) -> [ScanoutKind] {
        switch mode {
        case .gl: [.gl]
        case .planes: [.planes]
        case .auto: if case .none = card { [.planes] } else { [.gl, .planes] }
        }
    }

    /// Opens the first presentation of `presentationTable(mode)` that opens and is wanted, on the
    /// output's card. Under `auto` the GL presentation declines a software renderer, and one that
    /// cannot be made (`chooseScanout` judges both): its context goes, the card, VT and hotplug
    /// stay as they are, and the planes presentation opens next. Only `auto` needs the renderer,
    /// and it keeps the GL presentation it opened to learn it when that is a GPU.
    static func openPresentation(_ mode: ScanoutMode, device: DRMDevice, settings: KMSSettings, api: KMSAPI, background: RGBColor,
                                 logger: Logger) throws -> (presentation: any KMSPresentation, choice: ScanoutChoice) {
        var declined: ScanoutChoice?
        let card = mode == .auto ? device.gpu() : .unknown
        for kind in presentationTable(mode, card: card) {
            switch kind {
            case .gl:
                let opened: KMSGLPresentation
                do {
                    opened = try KMSGLPresentation(device: device, settings: settings, api: api, background: background, logger: logger)
                } catch where mode == .auto {
                    declined = chooseScanout(mode) { .failure(error) }
                    continue
                }
                let choice = chooseScanout(mode) { .success(opened.renderer) }
                if choice.kind == .gl { return (opened, choice) }
                declined = choice   // a software rasterizer: its GL context goes with `opened`
            case .planes:
                let choice = declined ?? chooseScanout(mode, card: card) { .failure(OutputUnavailable(description: "not asked")) }
                return (KMSPlanesPresentation(device: device, settings: settings, api: api, background: background, logger: logger), choice)
            }
        }
        throw OutputUnavailable(description: "display.scanout \(mode.rawValue): no presentation opened")
    }

    /// The card for `settings`, and the name of its first wanted, connected connector (if any).
    static func openCard(_ settings: KMSSettings) throws -> (DRMDevice, String?) {
        let paths = settings.device.map { [$0] } ?? drmCards()
        if paths.isEmpty {
            throw OutputUnavailable(description: "--output kms: no DRM device (/dev/dri/card* does not exist)")
        }
        var problems: [String] = []
        var displayCapable: DRMDevice?
        for path in paths {
            let device: DRMDevice
            do {
                device = try DRMDevice(path: path, wantAtomic: settings.api == .atomic)
            } catch {
                problems.append("\(error)")
                continue
            }
            guard let resources = try? device.resources(), !resources.connectors.isEmpty else {
                problems.append("\(path): not a display device (no KMS connectors)")
                continue
            }
            for id in resources.connectors {
                guard let (connector, _, _, _) = try? device.connector(id) else { continue }
                if connector.connected && settings.connector.map({ $0 == connector.name }) ?? true {
                    return (device, connector.name)
                }
            }
            if displayCapable == nil { displayCapable = device }
        }
        if let displayCapable { return (displayCapable, nil) }
        throw OutputUnavailable(description: "--output kms: no usable display device: " + problems.joined(separator: "; "))
    }

    /// Where the display stands (waiting, modesetting, presenting, lost).
    public var state: DisplayLinkState { link.state }
    public var counters: DisplayLinkCounters { link.counters }
    /// Called on the presentation thread on every change of `state`.
    public var onStateChange: ((DisplayLinkState) -> Void)? {
        get { link.onStateChange }
        set { link.onStateChange = newValue }
    }
    /// Checked while waiting for a display: false stops the wait.
    public var shouldContinue: () -> Bool {
        get { link.shouldContinue }
        set { link.shouldContinue = newValue }
    }
    /// How long to wait for a display in all (nil: as long as it takes).
    public var displayWaitTimeout: Double? {
        get { link.waitTimeout }
        set { link.waitTimeout = newValue }
    }

    /// Waits for a connected display and opens it; false when `shouldContinue` said stop first.
    /// Call before handing the output to a player: the first display fixes `clock.refresh`.
    public func waitForDisplay() throws -> Bool { try link.waitForDisplay() }

    /// The connector and mode of the display driven now (nil while there is none).
    public var connectorName: String? { link.head?.connector }
    public var mode: DisplayMode? { link.head?.mode }
    /// The page-flip clock of the display driven now.
    public var flipClock: PageFlipClock? { link.head?.flipClock }

    public var bounds: PixelRect {
        if let head = link.head { lastBounds = head.bounds }
        return lastBounds
    }

    /// What this output can do (`OutputCapabilities`), from its presentation: the card's GL
    /// context (kept for the output's whole life, so they hold across hotplug), or what the planes
    /// take. Call once, as it opens, on its presentation thread, before any player is made for it.
    /// The refresh is the connected display's, nil before one.
    public func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities {
        presentation.capabilities(name: name, refresh: mode?.refresh, conversion: conversion)
    }

    /// What the "output chosen" line says of this output after its name, kind and why.
    public var openedFields: [(String, String)] {
        [("device", devicePath), ("api", api.rawValue)]
            + presentation.describe(rotation: layer.rotation, hotplug: hotplugSource, untimed: untimed)
    }

    // MARK: Output driver

    /// Whether a display is connected and open to draw on.
    public var isReady: Bool { link.isReady }

    // MARK: Display power

    public var isDisplayOn: Bool { !link.isPoweredOff }

    /// Standby (the CRTC inactive, atomic; DPMS off, legacy) or awake (a modeset with the next
    /// picture). See `DisplayPowerControl`.
    public func setDisplayPower(_ on: Bool) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.setPower(on)
    }

    /// Draws one frame, or a mosaic (one frame per `layer.mosaicRegions` entry), into the head's
    /// next buffer.
    public func draw(_ frames: [VideoFrame?]) throws { try draw(frames, mixes: []) }

    /// As `draw(_:)`, with a transition's mix per frame.
    public func draw(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?]) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.draw { [link] in
            guard let head = link.head else { return }
            try head.buffers?.render(frames, mixes: mixes, bounds: head.bounds)
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

    /// Whether the picture on screen can be read back (`readBack`): the planes presentation's
    /// dumb buffers can, the GL one's GBM buffers are not read.
    public var readsBack: Bool { presentation.readsBack }

    /// The picture on screen now, read back from its buffer.
    public func readBack() throws -> RGBAImage { try screenImage(maxWidth: nil) }

    /// The same at most `maxWidth` pixels wide, scaled as it is read (a thumbnail).
    public func readBack(maxWidth: Int) throws -> RGBAImage { try screenImage(maxWidth: maxWidth) }

    private func screenImage(maxWidth: Int?) throws -> RGBAImage {
        guard let image = link.head?.buffers?.screenImage(maxWidth: maxWidth) else {
            throw OutputUnavailable(description: readsBack ? "\(name) shows no picture yet" : "\(name) cannot read back its picture")
        }
        return image
    }

    /// Takes the display down (the saved CRTC state goes back), releases the buffers, drops DRM
    /// master and closes the device (unless a `KMSCard` owns it). Safe to call more than once.
    public func close() {
        guard device.isOpen, !closed else { return }
        closed = true
        link.close()
        let counters = link.counters
        logger.log(.info, "output closed", fields: [
            ("device", device.path), ("connects", "\(counters.connects)"), ("losses", "\(counters.losses)"),
            ("flipTimeouts", "\(counters.flipTimeouts)"), ("hotplugNotices", "\(counters.hotplugNotices)"),
        ] + presentation.closedFields)
        // Drops master and closes the fd (a shared card: its owner does, after every output); a
        // GL presentation's GBM dup goes with its context.
        if ownsDevice { device.close() }
    }
}

/// How pictures reach the screen on a KMS output (mpv's vo_gpu over its swapchain): what draws
/// and the buffers each head scans out. The output owns the card, its heads and their flips; a
/// presentation lives as long as the output and makes each connection's buffers.
protocol KMSPresentation: AnyObject {
    var kind: ScanoutKind { get }
    var layer: any PictureLayer { get }
    /// `GL_RENDERER`, or what draws instead.
    var renderer: String { get }
    /// What draws over or between pictures (only the planes presentation looks: it keeps pictures
    /// off a plane that cannot blend).
    var pictureBlending: String? { get set }
    /// How pictures reach the planes and why, once chosen at the first connection (planes only).
    var routeReason: String? { get }
    /// Whether a head's buffers can give back the picture on screen.
    var readsBack: Bool { get }
    /// Whether "display released" gives the flips' spread (shownMinusPlanned, jitter): the GL
    /// head's line always did, the planes head's never; kept so that no log line changes.
    var logsFlipSpread: Bool { get }
    /// Makes the buffers of a new connection on `pipe`, before the head saves the CRTC's state.
    func makeBuffers(connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws -> any KMSHeadBuffers
    func capabilities(name: String, refresh: RefreshRate?, conversion: ColorConversionMode) -> OutputCapabilities
    /// What the "output chosen" line says after the device and API.
    func describe(rotation: Rotation, hotplug: String, untimed: Bool) -> [(String, String)]
    /// What "output closed" says besides the display link's counters.
    var closedFields: [(String, String)] { get }
}

/// The buffers one head draws into and scans out: a free one is drawn, queued, flipped to, and
/// freed again when the next flip has replaced it.
protocol KMSHeadBuffers: AnyObject {
    /// Readies a free buffer and runs `draw` (which calls `render`) into it. Returns the render
    /// time in nanoseconds, nil for the first picture (see `DisplayHead.draw`).
    func draw(_ draw: () throws -> Void, scanout: KMSScanout) throws -> Int64?
    /// Draws `frames` into the buffer `draw` readied (nothing outside `draw`).
    func render(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?], bounds: PixelRect) throws
    /// Queues the picture drawn last on `scanout`; false when none was drawn.
    func queueFlip(on scanout: KMSScanout) throws -> Bool
    /// The picture queued last is on screen: the one before it may be drawn into again.
    func flipped()
    /// The picture on screen (at most `maxWidth` wide), where the buffers can be read (nil
    /// otherwise, or before the first).
    func screenImage(maxWidth: Int?) -> RGBAImage?
    /// The render time of the last picture, for "display released".
    var lastRenderNanoseconds: Int64? { get }
    /// Lets the buffers go (after the CRTC's saved state went back).
    func close()
}

/// A DRM card opened once for the several outputs of one process (only one fd of a card can be
/// DRM master): each `KMSOutput` made with it drives its own connector and CRTC from its own
/// thread. Owns the card; `close` (or deinit) after the outputs are closed drops master and
/// closes it.
public final class KMSCard: @unchecked Sendable {
    // @unchecked: the device locks what its outputs share (flip events, CRTC claims).
    let device: DRMDevice
    public var path: String { device.path }

    /// Opens the card `settings` names, else the first with a connected connector (preferring
    /// `settings.connector`), else the first that can drive a display.
    public init(settings: KMSSettings) throws {
        device = try KMSOutput.openCard(settings).0
    }

    deinit { close() }

    public func close() { device.close() }
}

/// The real `HotplugDisplay`: a DRM card's connectors, probed on hotplug notices; each connection
/// gets its buffers from the output's presentation.
final class KMSDisplay: HotplugDisplay {
    let device: DRMDevice
    let settings: KMSSettings
    let api: KMSAPI
    let presentation: any KMSPresentation
    let logger: Logger
    private(set) var absence = "not probed yet"

    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, presentation: any KMSPresentation, logger: Logger) {
        self.device = device
        self.settings = settings
        self.api = api
        self.presentation = presentation
        self.logger = logger
    }

    func connect() throws -> KMSHead? {
        try device.connectHead(settings: settings, api: api, absence: &absence) { connector, mode, pipe, committer in
            try KMSHead(display: self, connector: connector, mode: mode, pipe: pipe, committer: committer)
        }
    }

    func recheck(_ head: KMSHead) -> String? {
        device.recheckHead(connector: head.connector, id: head.pipe.connector, mode: head.mode, settings: settings)
    }
}

extension DRMDevice {
    /// The first connected connector that `settings` allow, in the mode they ask for, with a CRTC
    /// and its primary plane, made into a head by `makeHead`; the CRTC is released again when that
    /// throws. nil when none is connected: `absence` says why.
    func connectHead<Head>(settings: KMSSettings, api: KMSAPI, absence: inout String,
                           makeHead: (String, KMSMode, KMSPipe, any KMSCommitter) throws -> Head) throws -> Head? {
        if let why = vt?.claim(self) {
            absence = why
            return nil
        }
        let resources = try resources()
        var names: [String] = []
        for id in resources.connectors {
            guard let (connector, raw, encoders, current) = try? connector(id) else { continue }
            names.append(connector.name + (connector.connected ? " (connected)" : ""))
            guard connector.connected, !connector.modes.isEmpty, settings.connector.map({ $0 == connector.name }) ?? true else { continue }
            guard let chosen = chooseMode(settings.mode, from: connector.modes) else {
                throw OutputUnavailable(description: "connector \(connector.name) on \(path) has no mode \(settings.mode)"
                    + " (it offers \(connector.modes.map(\.displayMode.description).joined(separator: ", ")))")
            }
            let crtc = try chooseCRTC(encoders: encoders, currentEncoder: current, crtcs: resources.crtcs)
            do {
                let plane = try primaryPlane(crtcIndex: crtc.index)
                let pipe = KMSPipe(connector: connector.id, crtc: crtc.id, plane: plane, mode: raw[chosen.index])
                let committer: any KMSCommitter = api == .atomic ? try AtomicCommitter(device: self, pipe: pipe)
                                                                 : LegacyCommitter(device: self, pipe: pipe)
                return try makeHead(connector.name, chosen, pipe, committer)
            } catch {
                releaseCRTC(crtc.id)
                throw error
            }
        }
        let which = settings.connector.map { "connector \($0) is not connected" } ?? "no connected connector"
        absence = "\(which) on \(path) (connectors: \(names.joined(separator: ", ")))"
        return nil
    }

    /// Asked after a hotplug notice about the head on connector `name` (`id`) showing `mode`: nil
    /// while it may go on, else why it must be redone.
    func recheckHead(connector name: String, id: UInt32, mode: DisplayMode, settings: KMSSettings) -> String? {
        if let why = vt?.releaseRequested() { return why }
        guard let (connector, _, _, _) = try? connector(id) else {
            return "connector \(name) can no longer be read"
        }
        guard connector.connected else { return "connector \(name) was disconnected" }
        let wanted = chooseMode(settings.mode, from: connector.modes)
        if wanted?.displayMode != mode {
            return "connector \(name) now offers \(wanted.map(\.displayMode.description) ?? "no mode \(settings.mode)") instead of \(mode)"
        }
        return nil
    }
}

/// One connection of a display: connector, mode, CRTC + primary plane, the presentation's buffers
/// of the mode's size, the page flips and their clock. Saves the CRTC's state before its modeset;
/// `close` puts it back and lets the buffers go.
final class KMSHead: DisplayHead {
    let connector: String
    let mode: DisplayMode
    let flipClock: PageFlipClock
    let pipe: KMSPipe
    var bounds: PixelRect { PixelRect(x: 0, y: 0, width: pipe.width, height: pipe.height) }
    /// The presentation's buffers; nil once closed.
    private(set) var buffers: (any KMSHeadBuffers)?

    private unowned let display: KMSDisplay
    private let scanout: KMSScanout
    private var saved: SavedCRTC?
    /// The display vsync the picture in flight was planned for (queued, its flip not seen yet).
    private var inFlight: Int64?

    init(display: KMSDisplay, connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws {
        self.display = display
        self.connector = connector
        self.mode = mode.displayMode
        self.pipe = pipe
        buffers = try display.presentation.makeBuffers(connector: connector, mode: mode, pipe: pipe, committer: committer)
        flipClock = PageFlipClock(refresh: mode.refresh)
        scanout = KMSScanout(device: display.device, committer: committer, pipe: pipe)
        saved = try display.device.saveState(of: pipe)  // before the first modeset
    }

    func draw(_ draw: () throws -> Void) throws -> Int64? {
        guard let buffers else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        return try buffers.draw(draw, scanout: scanout)
    }

    func queueFlip(planned: Int64) throws {
        guard let buffers, try buffers.queueFlip(on: scanout) else { return }
        inFlight = planned
    }

    func waitForFlip(timeout: Double) throws -> Int64 {
        guard let buffers, let planned = inFlight else {
            throw OutputUnavailable(description: "no flip queued on \(connector)")
        }
        let event = try scanout.waitForFlip(timeout: timeout)
        inFlight = nil
        // The flip is done: the previous picture is off screen and its buffer can be drawn again.
        buffers.flipped()
        return flipClock.record(event, planned: planned)
    }

    /// Standby or awake through the scan-out's committer (`DisplayLink.setPower`).
    func setPower(_ on: Bool) throws {
        guard buffers != nil else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        try scanout.setPower(on)
    }

    func close(lost: Bool) {
        guard let buffers else { return }
        let device = display.device
        let logger = display.logger
        if let saved {
            do {
                let restored = try device.restore(saved, connector: pipe.connector)
                logger.info("display state restored", ["how": restored.how, "refused": restored.refused.joined(separator: "; "),
                                                       "differs": restored.differences.isEmpty ? "none" : restored.differences.joined(separator: "; ")])
            } catch {
                if lost {
                    logger.debug("display state not restored (the display is gone)", ["error": "\(error)"])
                } else {
                    logger.warning("cannot restore the display state", ["error": "\(error)", "device": device.path])
                }
            }
            self.saved = nil
        }
        buffers.close()   // after the restore: no plane shows them any more
        self.buffers = nil
        device.releaseCRTC(pipe.crtc)
        inFlight = nil
        let stats = flipClock.stats
        let spread = display.presentation.logsFlipSpread
        var fields: [(String, String)] = [
            ("device", device.path), ("connector", connector), ("mode", "\(mode)"), ("lost", "\(lost)"), ("flips", "\(stats.flips)"),
            ("late", "\(stats.lateFrames)"), ("missedVsyncs", "\(stats.missedVsyncs)"), ("rescheduled", "\(stats.rescheduledFrames)"),
        ]
        if spread {
            fields.append(("shownMinusPlanned", stats.shownMinusPlanned.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")))
        }
        fields.append(("renderMs", buffers.lastRenderNanoseconds.map { (Double($0) / 1e6).formatted(decimals: 2) } ?? "-"))
        fields.append(("refresh", flipClock.measuredRefresh.map { $0.formatted(decimals: 3) } ?? "-"))
        if spread { fields.append(("jitter", flipClock.jitter.map { $0.formatted(decimals: 4) } ?? "-")) }
        logger.log(.info, "display released", fields: fields)
    }
}
