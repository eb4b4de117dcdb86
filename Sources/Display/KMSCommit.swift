import CDRM
import Foundation
import Playback
import Render

/// What a KMS commit touches: one connector, one CRTC, its primary plane, one mode.
struct KMSPipe {
    let connector: UInt32
    let crtc: UInt32
    let plane: UInt32
    let mode: drmModeModeInfo
    var width: Int { Int(mode.hdisplay) }
    var height: Int { Int(mode.vdisplay) }
}

/// One of the two KMS APIs; chosen once when the output starts (kmscube's `drm->run`).
protocol KMSCommitter: AnyObject {
    var api: KMSAPI { get }
    /// Sets the mode and shows `framebuffer`; a flip event follows.
    func modeset(framebuffer: UInt32) throws
    /// Shows `framebuffer` on the next vsync without blocking; a flip event follows. `inFence`: a
    /// sync file the scan-out waits for (atomic IN_FENCE_FD; legacy ignores it).
    func flip(framebuffer: UInt32, inFence: Int32?) throws
    /// Whether `flip` can take an IN_FENCE_FD.
    var takesInFences: Bool { get }
    /// Standby: atomic, the CRTC's ACTIVE 0 (the kernel reports the connector's DPMS off); legacy,
    /// the connector's DPMS property off. Waking: legacy sets DPMS on; the next `modeset` does
    /// the rest (atomic: ACTIVE 1).
    func setPower(_ on: Bool) throws
}

/// `drmModeSetCrtc` for the mode, `drmModePageFlip` for every picture.
final class LegacyCommitter: KMSCommitter {
    let api = KMSAPI.legacy
    private let device: DRMDevice
    private let pipe: KMSPipe

    init(device: DRMDevice, pipe: KMSPipe) {
        self.device = device
        self.pipe = pipe
    }

    func modeset(framebuffer: UInt32) throws {
        var connector = pipe.connector
        var mode = pipe.mode
        try drmCheck("drmModeSetCrtc(CRTC \(pipe.crtc), fb \(framebuffer))",
                     drmModeSetCrtc(device.fd, pipe.crtc, framebuffer, 0, 0, &connector, 1, &mode))
        // SetCrtc sends no event; flipping to the same buffer gives the first vsync's timestamp.
        try flip(framebuffer: framebuffer, inFence: nil)
    }

    var takesInFences: Bool { false }

    func setPower(_ on: Bool) throws {
        guard let dpms = try device.properties(of: pipe.connector, type: UInt32(DRM_MODE_OBJECT_CONNECTOR))["DPMS"] else {
            throw DRMError(call: "drmModeObjectGetProperties", detail: "connector \(pipe.connector) has no DPMS property")
        }
        // DRM_MODE_DPMS_ON 0, DRM_MODE_DPMS_OFF 3.
        try drmCheck("drmModeConnectorSetProperty(connector \(pipe.connector), DPMS \(on ? "on" : "off"))",
                     drmModeConnectorSetProperty(device.fd, pipe.connector, dpms.id, on ? 0 : 3))
    }

    func flip(framebuffer: UInt32, inFence: Int32?) throws {
        try drmCheck("drmModePageFlip(CRTC \(pipe.crtc), fb \(framebuffer))",
                     drmModePageFlip(device.fd, pipe.crtc, framebuffer, UInt32(DRM_MODE_PAGE_FLIP_EVENT), device.flipUserData))
    }
}

/// Atomic commits: the first with the mode blob, ACTIVE and ALLOW_MODESET, then non-blocking plane
/// updates with PAGE_FLIP_EVENT. Properties are looked up by name once.
final class AtomicCommitter: KMSCommitter {
    let api = KMSAPI.atomic
    private let device: DRMDevice
    private let pipe: KMSPipe
    private let connectorProps: [String: (id: UInt32, value: UInt64)]
    private let crtcProps: [String: (id: UInt32, value: UInt64)]
    private let planeProps: [String: (id: UInt32, value: UInt64)]
    private var modeBlob: UInt32 = 0   // destroyed in deinit
    /// More of the same commit: another plane's state (the planes output's Y'CbCr plane), added
    /// to every modeset and flip.
    var planeAdditions: ((OpaquePointer) -> Void)?

    init(device: DRMDevice, pipe: KMSPipe) throws {
        self.device = device
        self.pipe = pipe
        connectorProps = try device.properties(of: pipe.connector, type: UInt32(DRM_MODE_OBJECT_CONNECTOR))
        crtcProps = try device.properties(of: pipe.crtc, type: UInt32(DRM_MODE_OBJECT_CRTC))
        planeProps = try device.properties(of: pipe.plane, type: UInt32(DRM_MODE_OBJECT_PLANE))
        for (object, table, names) in [("connector", connectorProps, ["CRTC_ID"]), ("CRTC", crtcProps, ["MODE_ID", "ACTIVE"]),
                                       ("plane", planeProps, ["FB_ID", "CRTC_ID", "SRC_X", "SRC_Y", "SRC_W", "SRC_H",
                                                              "CRTC_X", "CRTC_Y", "CRTC_W", "CRTC_H"])] {
            for name in names where table[name] == nil {
                throw DRMError(call: "drmModeObjectGetProperties", detail: "the \(object) has no \(name) property")
            }
        }
        var mode = pipe.mode
        try drmCheck("drmModeCreatePropertyBlob(mode)",
                     drmModeCreatePropertyBlob(device.fd, &mode, MemoryLayout<drmModeModeInfo>.size, &modeBlob))
    }

    deinit {
        if modeBlob != 0 && device.isOpen { _ = drmModeDestroyPropertyBlob(device.fd, modeBlob) }
    }

    private func commit(_ what: String, flags: UInt32, _ fill: (OpaquePointer) -> Void) throws {
        guard let request = drmModeAtomicAlloc() else { throw DRMError(call: "drmModeAtomicAlloc", errno: ENOMEM) }
        defer { drmModeAtomicFree(request) }
        fill(request)
        // The flip event's user data leads libdrm's handler to the device's event sink.
        try drmCheck("drmModeAtomicCommit(\(what))", drmModeAtomicCommit(device.fd, request, flags, device.flipUserData))
    }

    private func add(_ request: OpaquePointer, _ object: UInt32, _ table: [String: (id: UInt32, value: UInt64)], _ name: String, _ value: UInt64) {
        _ = drmModeAtomicAddProperty(request, object, table[name]!.id, value)
    }

    private func addPlane(_ request: OpaquePointer, framebuffer: UInt32) {
        add(request, pipe.plane, planeProps, "FB_ID", UInt64(framebuffer))
        add(request, pipe.plane, planeProps, "CRTC_ID", UInt64(pipe.crtc))
        planeAdditions?(request)
    }

    func modeset(framebuffer: UInt32) throws {
        let (w, h) = (UInt64(pipe.width), UInt64(pipe.height))
        try commit("modeset, fb \(framebuffer)", flags: UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET | DRM_MODE_PAGE_FLIP_EVENT)) { r in
            add(r, pipe.connector, connectorProps, "CRTC_ID", UInt64(pipe.crtc))
            add(r, pipe.crtc, crtcProps, "MODE_ID", UInt64(modeBlob))
            add(r, pipe.crtc, crtcProps, "ACTIVE", 1)
            addPlane(r, framebuffer: framebuffer)
            for (name, value) in [("SRC_X", 0), ("SRC_Y", 0), ("SRC_W", w << 16), ("SRC_H", h << 16),
                                  ("CRTC_X", 0), ("CRTC_Y", 0), ("CRTC_W", w), ("CRTC_H", h)] as [(String, UInt64)] {
                add(r, pipe.plane, planeProps, name, value)
            }
        }
    }

    var takesInFences: Bool { planeProps["IN_FENCE_FD"] != nil }

    func setPower(_ on: Bool) throws {
        // Waking is the next modeset's (ACTIVE 1 with the mode).
        guard !on else { return }
        guard let request = drmModeAtomicAlloc() else { throw DRMError(call: "drmModeAtomicAlloc", errno: ENOMEM) }
        defer { drmModeAtomicFree(request) }
        add(request, pipe.crtc, crtcProps, "ACTIVE", 0)
        try drmCheck("drmModeAtomicCommit(CRTC \(pipe.crtc) ACTIVE 0)",
                     drmModeAtomicCommit(device.fd, request, UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET), nil))
    }

    func flip(framebuffer: UInt32, inFence: Int32?) throws {
        // With EGL_ANDROID_native_fence_sync the render fence rides along as IN_FENCE_FD and the
        // scan-out waits for it; without (llvmpipe) the commit carries none: the render fence was
        // waited for on the CPU (GPUFrameTimer) and the driver waits implicitly as well.
        try commit("flip, fb \(framebuffer)", flags: UInt32(DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT)) { r in
            addPlane(r, framebuffer: framebuffer)
            if let inFence, takesInFences { add(r, pipe.plane, planeProps, "IN_FENCE_FD", UInt64(bitPattern: Int64(inFence))) }
        }
    }
}

/// The real `PageFlipDevice`: a DRM device and the committer chosen for it.
final class KMSScanout: PageFlipDevice {
    let device: DRMDevice
    let committer: any KMSCommitter
    let pipe: KMSPipe
    private(set) var modeSet = false
    /// The render fence of the picture queued next (used once, then dropped: the kernel keeps its
    /// own reference).
    var inFence: SyncFile?

    init(device: DRMDevice, committer: any KMSCommitter, pipe: KMSPipe) {
        self.device = device
        self.committer = committer
        self.pipe = pipe
    }

    func queueFlip(framebuffer: UInt32) throws {
        if modeSet {
            defer { inFence = nil }
            try committer.flip(framebuffer: framebuffer, inFence: inFence?.fd)
        } else {
            try committer.modeset(framebuffer: framebuffer)
            modeSet = true
        }
    }

    /// Standby (the committer's way), or awake again: then the next picture sets the mode.
    func setPower(_ on: Bool) throws {
        try committer.setPower(on)
        if on { modeSet = false }
    }

    func waitForFlip(timeout: Double) throws -> FlipEvent {
        try device.readFlipEvent(crtc: pipe.crtc, timeout: timeout, waitingFor: "the page-flip event of CRTC \(pipe.crtc) on \(device.path) (\(committer.api.rawValue) API)")
    }
}
