import CDRM
import Foundation
import Media
import Playback
import Render

/// An output on a real display through DRM/KMS, surviving displays that are absent at start or
/// come and go: the card, its GBM device, the EGL context and the player layer live as long as
/// the output; each connection of a display gets a head (`KMSHead`: connector, mode, CRTC,
/// primary plane, GBM + EGL window surface, page-flip clock), driven by a `DisplayLink` that
/// listens for hotplug notices. Pictures are shown by page flips (atomic or legacy, chosen once).
///
/// Each head saves the CRTC's state before its modeset and puts it back when it goes; `close()`
/// (called by deinit, and by the kiosk on every way out) also drops DRM master and closes the
/// device. Made on, and used only from, the presentation thread (its GL context is current there).
public final class KMSOutput: OutputDriver, DisplayPowerControl {
    public typealias Frame = VideoFrame

    public let name: String
    public let api: KMSAPI
    public let devicePath: String
    public let layer: PlayerLayer
    public var clock: any VsyncClock { link.clock }
    public var renderer: String { context.context.renderer }
    /// The EGL display and GL context the layer draws with (for DMA-BUF import).
    public var glContext: GLContext { context.context }
    /// Whether atomic commits carry render fences (EGL_ANDROID_native_fence_sync + IN_FENCE_FD).
    public let nativeFences: Bool
    /// The scan-out format in use (`display.format`, or XRGB8888 where the device lacks it).
    public let format: KMSPixelFormat
    /// How hotplug is noticed ("netlink uevents", or the sysfs poll and why).
    public let hotplugSource: String
    /// Whether render times come from fences, and GPU times from timer queries.
    public let renderTiming: String
    /// The `display.scanout` choice that made this a GL output, and why (set by whoever chose it).
    public var scanoutChoice: ScanoutChoice?

    private let device: DRMDevice
    /// Whether `close` closes the card (false when a `KMSCard` shared by several outputs owns it).
    private let ownsDevice: Bool
    private var closed = false
    private let context: GBMDisplayContext
    private let display: KMSDisplay
    private let link: DisplayLink<KMSDisplay>
    private let logger: Logger
    private var lastBounds = PixelRect(x: 0, y: 0, width: 0, height: 0)

    /// Opens the card (`settings.device`, else the first with a connected connector, else the
    /// first that can drive a display) and makes the GL context and layer. A display need not be
    /// connected yet: `waitForDisplay` waits for one. Throws `OutputUnavailable` naming what is
    /// missing (no device, no permission, not a display device).
    ///
    /// With `card`, the output drives `settings.connector` on that card, opened once for all the
    /// outputs of a wall node; the card stays open when the output closes.
    public init(settings: KMSSettings, card: KMSCard? = nil, background: RGBColor = .black, logger: Logger,
                hotplug: (events: any HotplugEvents, why: String)? = nil) throws {
        self.logger = logger
        let (device, firstConnected) = try card.map { ($0.device, settings.connector) } ?? Self.openCard(settings)
        ownsDevice = card == nil
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
        self.format = choice.format
        self.layer = try PlayerLayer()
        layer.background = background
        let timer = GPUFrameTimer(context: context.context)
        self.device = device
        self.context = context
        self.devicePath = device.path
        self.api = settings.api == .atomic && device.atomic ? .atomic : .legacy
        if settings.api == .atomic && !device.atomic {
            logger.warning("the driver has no atomic modesetting; using the legacy API", ["device": device.path])
        }
        self.nativeFences = api == .atomic && context.hasNativeFences
        self.renderTiming = (timer.hasFences ? "fences" : "none") + (timer.hasTimerQuery ? "+timer-query" : "")
        self.name = "kms-\(settings.connector ?? firstConnected ?? "display")"
        let hotplug = hotplug ?? systemHotplugEvents()
        self.hotplugSource = hotplug.why
        // VT switches: the display is let go of while the terminal is in the background.
        device.followVT(logger: logger)
        display = KMSDisplay(device: device, settings: settings, api: api, context: context, timer: timer,
                             nativeFences: nativeFences, logger: logger)
        link = DisplayLink(display: display, hotplug: device.vt.map { VTAwareHotplugEvents(inner: hotplug.events, switcher: $0) } ?? hotplug.events,
                           refresh: RefreshRate(numerator: 60), logger: logger)
    }

    deinit { close() }

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
        try link.draw { [layer, link] in
            guard let head = link.head else { return }
            if frames.count == 1 {
                try layer.draw(frames[0], bounds: head.bounds, mix: mixes.first ?? nil)
            } else {
                try layer.draw(mosaic: frames, bounds: head.bounds, mixes: mixes)
            }
            try layer.drawOverlays(bounds: head.bounds)
        }
    }

    public var lastRenderTime: Int64? { link.lastRenderTime }

    public func queue(forVsync vsync: Int64) throws {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        try link.queue(forVsync: vsync)
    }

    public func waitForEvent(timeout: Double) throws -> OutputEvent {
        guard device.isOpen, !closed else { throw OutputUnavailable(description: "\(name) is closed") }
        return try link.waitForEvent(timeout: timeout)
    }

    public func noteRescheduled(by vsyncs: Int64) { link.head?.flipClock.noteRescheduled(by: vsyncs) }

    /// Takes the display down (the saved CRTC state goes back), releases the surfaces, drops DRM
    /// master and closes the device. Safe to call more than once.
    public func close() {
        guard device.isOpen, !closed else { return }
        closed = true
        link.close()
        let counters = link.counters
        logger.info("output closed", ["device": device.path, "connects": "\(counters.connects)", "losses": "\(counters.losses)",
                                      "flipTimeouts": "\(counters.flipTimeouts)", "hotplugNotices": "\(counters.hotplugNotices)"])
        // Drops master and closes the fd (a shared card: its owner does, after every output);
        // GBM's dup goes with the context.
        if ownsDevice { device.close() }
    }
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

/// The real `HotplugDisplay`: a DRM card's connectors, probed on hotplug notices.
final class KMSDisplay: HotplugDisplay {
    let device: DRMDevice
    let settings: KMSSettings
    let api: KMSAPI
    let context: GBMDisplayContext
    let timer: GPUFrameTimer
    let nativeFences: Bool
    let logger: Logger
    private(set) var absence = "not probed yet"

    init(device: DRMDevice, settings: KMSSettings, api: KMSAPI, context: GBMDisplayContext, timer: GPUFrameTimer,
         nativeFences: Bool, logger: Logger) {
        self.device = device
        self.settings = settings
        self.api = api
        self.context = context
        self.timer = timer
        self.nativeFences = nativeFences
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
    /// and its primary plane, made into a head by `makeHead` (the GL and the planes heads); the
    /// CRTC is released again when that throws. nil when none is connected: `absence` says why.
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

/// One connection of a display: connector, mode, CRTC + primary plane, the GBM + EGL window
/// surface of the mode's size, the page-flip presenter and its clock. Saves the CRTC's state
/// before its modeset; `close` puts it back and removes its framebuffers.
final class KMSHead: DisplayHead {
    let connector: String
    let mode: DisplayMode
    let flipClock: PageFlipClock
    let pipe: KMSPipe
    var bounds: PixelRect { PixelRect(x: 0, y: 0, width: pipe.width, height: pipe.height) }
    /// The last picture's render timing.
    private(set) var lastTiming: GPUFrameTiming?

    private unowned let display: KMSDisplay
    private var window: GBMWindowSurface?            // released in close()
    private let scanout: KMSScanout
    private var saved: SavedCRTC?
    private var framebuffers: [UInt: UInt32] = [:]   // GBM buffer id -> DRM fb, removed in close()
    private var onScreen: ScanoutBuffer?             // locked until the next picture replaces it
    private var drawn: (buffer: ScanoutBuffer, framebuffer: UInt32)?    // drawn, not queued yet
    private var inFlight: (buffer: ScanoutBuffer, planned: Int64)?      // queued, its flip not seen yet

    init(display: KMSDisplay, connector: String, mode: KMSMode, pipe: KMSPipe, committer: any KMSCommitter) throws {
        self.display = display
        self.connector = connector
        self.mode = mode.displayMode
        self.pipe = pipe
        window = try GBMWindowSurface(on: display.context, width: pipe.width, height: pipe.height)
        flipClock = PageFlipClock(refresh: mode.refresh)
        scanout = KMSScanout(device: display.device, committer: committer, pipe: pipe)
        saved = try display.device.saveState(of: pipe)  // before the first modeset
    }

    func draw(_ draw: () throws -> Void) throws -> Int64? {
        guard let window else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        if let unshown = drawn {
            // Drawn but never queued (the loop gave up on it): its buffer can be drawn again.
            window.release(unshown.buffer)
            drawn = nil
        }
        window.bind()
        let started = monotonicNow()
        display.timer.begin()
        try draw()
        let fence = display.nativeFences && scanout.modeSet && scanout.committer.takesInFences ? try display.timer.nativeFence() : nil
        let buffer = try window.swapAndLock()
        var rendered: Int64?
        do {
            if let timing = try display.timer.end(startedAt: started, waitForFence: fence == nil) {
                // The first picture of a head pays for one-time work (textures, shader variants): an
                // outlier the estimate would keep for a whole window.
                if scanout.modeSet { rendered = timing.renderNanoseconds }
                lastTiming = timing
            }
            let fb: UInt32
            if let cached = framebuffers[buffer.id] {
                fb = cached
            } else {
                fb = try display.device.addFramebuffer(buffer)
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

    func queueFlip(planned: Int64) throws {
        guard let window, let picture = drawn else { return }
        drawn = nil
        do {
            try scanout.queueFlip(framebuffer: picture.framebuffer)
        } catch {
            window.release(picture.buffer)
            throw error
        }
        inFlight = (picture.buffer, planned)
    }

    func waitForFlip(timeout: Double) throws -> Int64 {
        guard let window, let flight = inFlight else {
            throw OutputUnavailable(description: "no flip queued on \(connector)")
        }
        let event = try scanout.waitForFlip(timeout: timeout)
        inFlight = nil
        // The flip is done: the previous picture is off screen and its buffer can be drawn again.
        if let previous = onScreen { window.release(previous) }
        onScreen = flight.buffer
        return flipClock.record(event, planned: flight.planned)
    }

    func setPower(_ on: Bool) throws {
        guard window != nil else { throw OutputUnavailable(description: "the head on \(connector) is closed") }
        try scanout.setPower(on)
    }

    func close(lost: Bool) {
        guard window != nil else { return }
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
        for fb in framebuffers.values { device.removeFramebuffer(fb) }
        framebuffers = [:]
        device.releaseCRTC(pipe.crtc)
        onScreen = nil
        drawn = nil
        inFlight = nil
        window = nil   // the GBM and EGL window surfaces; the context stays, surfaceless
        let stats = flipClock.stats
        display.logger.info("display released", [
            "device": device.path, "connector": connector, "mode": "\(mode)", "lost": "\(lost)", "flips": "\(stats.flips)",
            "late": "\(stats.lateFrames)", "missedVsyncs": "\(stats.missedVsyncs)", "rescheduled": "\(stats.rescheduledFrames)",
            "shownMinusPlanned": stats.shownMinusPlanned.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","),
            "renderMs": lastTiming.map { (Double($0.renderNanoseconds) / 1e6).formatted(decimals: 2) } ?? "-",
            "refresh": flipClock.measuredRefresh.map { $0.formatted(decimals: 3) } ?? "-",
            "jitter": flipClock.jitter.map { $0.formatted(decimals: 4) } ?? "-"])
    }
}
