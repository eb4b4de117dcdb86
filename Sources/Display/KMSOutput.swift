import CDRM
import Foundation
import Media
import Playback
import Render

/// An output on a real display through DRM/KMS: a GBM surface with an EGL window surface
/// (XRGB8888), shown by page flips (atomic or legacy, chosen once), timed by the flip events.
///
/// The CRTC's state is saved before the first modeset and put back by `close()` (called by deinit,
/// and by the kiosk on every way out), which also removes Marquee's framebuffers and drops DRM
/// master. Made on, and used only from, the presentation thread (its GL context is current there).
public final class KMSOutput: PresentationOutput {
    public typealias Frame = VideoFrame

    public let name: String
    public let mode: DisplayMode
    public let api: KMSAPI
    public let devicePath: String
    public let connectorName: String
    public let layer: PlayerLayer
    public var clock: any VsyncClock { flipClock }
    public let flipClock: PageFlipClock
    public var renderer: String { window?.context.renderer ?? "" }
    /// Whether atomic commits could carry render fences (EGL_ANDROID_native_fence_sync).
    public let nativeFences: Bool

    private var device: DRMDevice?
    private var window: GBMWindowContext?
    private let presenter: PageFlipPresenter<KMSScanout>
    private let pipe: KMSPipe
    private var saved: SavedCRTC?
    private var framebuffers: [UInt: UInt32] = [:]   // GBM buffer id -> DRM fb, removed in close()
    private var onScreen: ScanoutBuffer?             // locked until the next picture replaces it
    private let logger: Logger

    public init(settings: KMSSettings, background: RGBColor = .black, logger: Logger) throws {
        self.logger = logger
        let (device, connector, rawModes, encoders, currentEncoder) = try Self.openDisplay(settings)
        guard let chosen = chooseMode(settings.mode, from: connector.modes) else {
            throw OutputUnavailable(description: "--output kms: connector \(connector.name) on \(device.path) has no mode \(settings.mode)"
                + " (it offers \(connector.modes.map(\.displayMode.description).joined(separator: ", ")))")
        }
        let resources = try device.resources()
        let crtc = try device.chooseCRTC(encoders: encoders, currentEncoder: currentEncoder, crtcs: resources.crtcs)
        let plane = try device.primaryPlane(crtcIndex: crtc.index)
        let pipe = KMSPipe(connector: connector.id, crtc: crtc.id, plane: plane, mode: rawModes[chosen.index])
        let committer: any KMSCommitter
        if settings.api == .atomic && device.atomic {
            committer = try AtomicCommitter(device: device, pipe: pipe)
        } else {
            if settings.api == .atomic {
                logger.warning("the driver has no atomic modesetting; using the legacy API", ["device": device.path])
            }
            committer = LegacyCommitter(device: device, pipe: pipe)
        }
        let window = try GBMWindowContext(drmFD: device.fd, width: pipe.width, height: pipe.height)
        self.layer = try PlayerLayer()
        layer.background = background
        self.device = device
        self.window = window
        self.pipe = pipe
        self.api = committer.api
        self.devicePath = device.path
        self.connectorName = connector.name
        self.mode = chosen.displayMode
        self.nativeFences = window.hasNativeFences
        self.name = "kms-\(connector.name)"
        self.flipClock = PageFlipClock(refresh: chosen.refresh)
        self.presenter = PageFlipPresenter(device: KMSScanout(device: device, committer: committer, pipe: pipe), clock: flipClock)
        self.saved = try device.saveCRTC(crtc.id)  // before the first modeset
    }

    deinit { close() }

    /// The device, connector and its modes for `settings`, with a message naming what is missing.
    private static func openDisplay(_ settings: KMSSettings) throws
        -> (DRMDevice, KMSConnector, [drmModeModeInfo], [UInt32], UInt32) {
        let paths = settings.device.map { [$0] } ?? drmCards()
        if paths.isEmpty {
            throw OutputUnavailable(description: "--output kms: no DRM device (/dev/dri/card* does not exist)")
        }
        var problems: [String] = []
        for path in paths {
            let device: DRMDevice
            do {
                device = try DRMDevice(path: path, wantAtomic: settings.api == .atomic)
            } catch {
                problems.append("\(error)")
                continue
            }
            guard let resources = try? device.resources() else {
                problems.append("\(path): not a display device (no KMS resources)")
                continue
            }
            var names: [String] = []
            for id in resources.connectors {
                guard let (connector, raw, encoders, current) = try? device.connector(id) else { continue }
                names.append(connector.name + (connector.connected ? " (connected)" : ""))
                let wanted = settings.connector.map { $0 == connector.name } ?? true
                if wanted && connector.connected && !connector.modes.isEmpty {
                    return (device, connector, raw, encoders, current)
                }
            }
            if let wanted = settings.connector {
                problems.append("\(path): connector \(wanted) is not connected or does not exist (connectors: \(names.joined(separator: ", ")))")
            } else {
                problems.append("\(path): no connected connector (connectors: \(names.joined(separator: ", ")))")
            }
        }
        throw OutputUnavailable(description: "--output kms: no usable display: " + problems.joined(separator: "; "))
    }

    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: pipe.width, height: pipe.height) }

    public func present(_ frame: VideoFrame?, atVsync vsync: Int64) throws -> Int64 {
        guard let window, let device else { throw OutputUnavailable(description: "\(name) is closed") }
        window.bind()
        try layer.draw(frame, bounds: bounds)
        let buffer = try window.swapAndLock()
        let fb: UInt32
        if let cached = framebuffers[buffer.id] {
            fb = cached
        } else {
            fb = try device.addFramebuffer(buffer)
            framebuffers[buffer.id] = fb
        }
        let shown: Int64
        do {
            shown = try presenter.present(framebuffer: fb, atVsync: vsync)
        } catch {
            window.release(buffer)
            throw error
        }
        // The flip is done: the previous picture is off screen and its buffer can be drawn again.
        if let previous = onScreen { window.release(previous) }
        onScreen = buffer
        return shown
    }

    /// Puts the saved CRTC state back, removes Marquee's framebuffers, releases GBM and EGL, drops
    /// DRM master and closes the device. Safe to call more than once.
    public func close() {
        guard let device else { return }
        if let saved {
            do {
                try device.restore(saved, connector: pipe.connector)
            } catch {
                logger.warning("cannot restore the display state", ["error": "\(error)", "device": device.path])
            }
            self.saved = nil
        }
        for fb in framebuffers.values { device.removeFramebuffer(fb) }
        framebuffers = [:]
        onScreen = nil
        window = nil   // GBM surface, EGL surface and context, then the GBM device
        let stats = flipClock.stats
        logger.info("display released", ["device": device.path, "connector": connectorName, "flips": "\(stats.flips)",
                                         "late": "\(stats.lateFrames)", "missedVsyncs": "\(stats.missedVsyncs)",
                                         "refresh": flipClock.measuredRefresh.map { $0.formatted(decimals: 3) } ?? "-",
                                         "jitter": flipClock.jitter.map { $0.formatted(decimals: 4) } ?? "-"])
        device.close()  // drops master and closes the fd
        self.device = nil
    }
}
