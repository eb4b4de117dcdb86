import CDRM
import Foundation
import Playback
import Render
import SystemCalls

/// A failing DRM call: names the call, its errno and what it was doing.
public struct DRMError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let call: String
    public let errno: Int32
    public let detail: String
    /// The failed system call behind it, when there was one.
    public let cause: SystemCallError?
    public init(call: String, errno: Int32 = 0, detail: String = "", cause: SystemCallError? = nil) {
        self.call = call
        self.errno = errno
        self.detail = detail
        self.cause = cause
    }
    init(_ error: SystemCallError, detail: String = "") {
        self.init(call: error.call, errno: error.errno, detail: detail, cause: error)
    }
    public var description: String {
        var text = "\(call) failed"
        if errno != 0 { text += " (errno \(errno): \(String(cString: strerror(errno))))" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}

/// Runs a libdrm call that returns a negative value (or -1 and errno) on failure.
@discardableResult
func drmCheck(_ call: @autoclosure () -> String, _ result: Int32, _ detail: @autoclosure () -> String = "") throws(DRMError) -> Int32 {
    if result < 0 {
        throw DRMError(call: call(), errno: result == -1 ? errno : -result, detail: detail())
    }
    return result
}

/// A connector as Marquee sees it.
public struct KMSConnector: Sendable {
    public let id: UInt32
    /// The kernel's name: connector type + index, e.g. `HDMI-A-1`, `Virtual-1`.
    public let name: String
    public let connected: Bool
    public let modes: [KMSMode]
}

/// What the display showed before Marquee touched it, put back on exit: the CRTC as the legacy
/// API sees it and, on an atomic device, every property of the connector, the CRTC and the planes
/// on it (`SavedAtomicState`).
struct SavedCRTC {
    var crtc: drmModeCrtc
    var atomic: SavedAtomicState?
}

/// One property value of a KMS object, as read before Marquee's first modeset. A blob's bytes are
/// kept (its id may be gone by the time it is put back: the kernel frees a blob nobody uses).
struct SavedProperty: Equatable {
    var object: UInt32
    var objectType: UInt32
    var property: UInt32
    var name: String
    var value: UInt64
    var blob: [UInt8]?
}

/// The atomic state of a pipe: every writable property of its connector, its CRTC and each plane
/// that shows on the CRTC (and of the primary plane Marquee uses), restored in one atomic commit
/// with ALLOW_MODESET.
struct SavedAtomicState: Equatable {
    var properties: [SavedProperty]
    /// The planes saved (the primary first).
    var planes: [UInt32]
}

/// A property as `drmModeGetProperty` gives it, with what saving needs to know.
struct PropertyInfo {
    var id: UInt32
    var name: String
    var value: UInt64
    var immutable: Bool
    var isBlob: Bool
}

/// Which properties of a saved state to write back: the writable ones, without those that are
/// requests rather than state (fences, damage clips) and DPMS, which atomic commits refuse.
/// `core`: only what Marquee's own commits set (the fallback when a driver refuses the full set).
func restorable(_ property: PropertyInfo, core: Bool = false) -> Bool {
    if property.immutable { return false }
    if ["IN_FENCE_FD", "OUT_FENCE_PTR", "FB_DAMAGE_CLIPS", "DPMS"].contains(property.name) { return false }
    if core {
        return ["CRTC_ID", "MODE_ID", "ACTIVE", "FB_ID", "SRC_X", "SRC_Y", "SRC_W", "SRC_H",
                "CRTC_X", "CRTC_Y", "CRTC_W", "CRTC_H"].contains(property.name)
    }
    return true
}

/// An open DRM card (`/dev/dri/cardN`): the file descriptor, its resources, events. Owns the fd
/// (closed in deinit). One process opens a card once (only one fd can be DRM master); the outputs
/// of a wall node share it, each from its own presentation thread: flip events are handed to the
/// CRTC they belong to, and each CRTC is claimed by one output.
final class DRMDevice: @unchecked Sendable {
    // @unchecked: `shared` guards what the outputs share; `sink` is used only by the thread that
    // reads the fd (`Shared.reading`); the rest is immutable or, like `file`, changed only by the
    // owner once every output is closed.
    let path: String
    /// The descriptor's number, for libdrm's calls (valid while `isOpen`).
    let fd: Int32
    private var file: FileDescriptor?
    /// Atomic modesetting was accepted (`DRM_CLIENT_CAP_ATOMIC`).
    let atomic: Bool

    /// Opens `path` and asks for universal planes and, when `wantAtomic`, atomic modesetting.
    init(path: String, wantAtomic: Bool) throws {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDWR)
        } catch {
            let why = switch error.errno {
            case ENOENT: "no such device"
            case EACCES, EPERM: "no permission to open it (run as root, or join the video group / hold a seat)"
            default: error.reason
            }
            throw DRMError(error, detail: why)
        }
        self.path = path
        self.fd = file.rawValue
        self.file = consume file  // closed by close() or deinit
        _ = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1)
        atomic = wantAtomic && drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
    }

    var isOpen: Bool { file != nil }
    /// What the outputs of the card share; waiters are woken when a reader has handed events out
    /// or stopped reading.
    private struct Shared {
        /// Flip events read by one output's thread that belong to another output's CRTC.
        var pendingFlips: [UInt32: [FlipEvent]] = [:]
        /// Whether an output's thread is waiting on the fd now (the others wait for it to hand out).
        var reading = false
        /// CRTCs driven by an output of this process.
        var claimed = Set<UInt32>()
        /// The virtual terminal whose switches this card follows (set by `followVT`).
        var switcher: VTSwitcher?
    }
    private let shared = Monitor(Shared())

    var vt: VTSwitcher? { shared.withLock { $0.switcher } }

    /// Follows the process's VT (`VTSwitcher.forProcess`); the outputs of a shared card call it
    /// from their own threads, the first one opens it.
    func followVT(logger: Logger) {
        shared.withLock { state in
            if state.switcher == nil { state.switcher = VTSwitcher.forProcess(logger: logger) }
        }
    }
    /// Where libdrm's page-flip handler puts the events of one `drmHandleEvent` call.
    private let sink = FlipEventSink()

    /// The user data every page flip and atomic commit of this device carries: libdrm hands it to
    /// the page-flip handler, which finds the event sink through it. Valid while the device lives.
    var flipUserData: UnsafeMutableRawPointer { Unmanaged.passUnretained(sink).toOpaque() }

    deinit { close() }

    /// Drops DRM master and closes the fd (once).
    func close() {
        guard isOpen else { return }
        vt?.finish(self)
        guard let file = file.take() else { return }
        _ = drmDropMaster(fd)
        do {
            try file.close()
        } catch {
            // Nothing to do about it: the descriptor is released either way.
        }
    }

    /// Whether this fd may modeset (it is DRM master).
    var isMaster: Bool { drmIsMaster(fd) != 0 }

    /// Whether the card can have a GPU, from its kernel driver's name and (virtio-gpu) its 3D
    /// feature: asked without loading GL. A query that fails leaves it `unknown`, which only means
    /// the GL renderer is asked instead.
    func gpu() -> CardGPU {
        guard let version = drmGetVersion(fd) else { return .unknown }
        defer { drmFreeVersion(version) }
        guard let name = version.pointee.name.map({ String(cString: $0) }) else { return .unknown }
        var virtio3D: Bool?
        if name == "virtio_gpu" {
            var value: Int32 = 0
            virtio3D = marquee_virtgpu_has_3d(fd, &value) == 0 ? value != 0 : nil
        }
        return cardGPU(driver: name, virtio3D: virtio3D)
    }

    // MARK: Resources

    struct Resources {
        var crtcs: [UInt32]
        var connectors: [UInt32]
    }

    func resources() throws -> Resources {
        guard let res = drmModeGetResources(fd) else {
            throw DRMError(call: "drmModeGetResources", errno: errno, detail: "\(path) has no display resources (a render-only device?)")
        }
        defer { drmModeFreeResources(res) }
        let r = res.pointee
        return Resources(crtcs: Array(UnsafeBufferPointer(start: r.crtcs, count: Int(r.count_crtcs))),
                         connectors: Array(UnsafeBufferPointer(start: r.connectors, count: Int(r.count_connectors))))
    }

    /// A connector with its modes; `rawModes` are the kernel's structs, in the same order.
    func connector(_ id: UInt32) throws -> (KMSConnector, rawModes: [drmModeModeInfo], encoders: [UInt32], currentEncoder: UInt32) {
        guard let c = drmModeGetConnector(fd, id) else {
            throw DRMError(call: "drmModeGetConnector(\(id))", errno: errno)
        }
        defer { drmModeFreeConnector(c) }
        let p = c.pointee
        let typeName = drmModeGetConnectorTypeName(p.connector_type).map { String(cString: $0) } ?? "Unknown\(p.connector_type)"
        let raw = Array(UnsafeBufferPointer(start: p.modes, count: Int(p.count_modes)))
        let modes = raw.enumerated().map { index, m in
            let total = Int64(m.htotal) * Int64(m.vtotal)
            let refresh = total > 0 && m.clock > 0 ? RefreshRate(numerator: Int64(m.clock) * 1000, denominator: total)
                                                   : RefreshRate(numerator: Int64(max(m.vrefresh, 1)))
            return KMSMode(width: Int(m.hdisplay), height: Int(m.vdisplay), refresh: refresh,
                           preferred: m.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0, index: index)
        }
        let connector = KMSConnector(id: id, name: "\(typeName)-\(p.connector_type_id)",
                                     connected: p.connection == DRM_MODE_CONNECTED, modes: modes)
        return (connector, raw, Array(UnsafeBufferPointer(start: p.encoders, count: Int(p.count_encoders))), p.encoder_id)
    }

    /// The CRTC to drive `encoders` with: the one the current encoder uses, else the first possible.
    /// A CRTC for the connector, claimed for it (`releaseCRTC` gives it back): the one its encoder
    /// drives now, else the first its encoders can use that no other output of this process has.
    func chooseCRTC(encoders: [UInt32], currentEncoder: UInt32, crtcs: [UInt32]) throws -> (id: UInt32, index: Int) {
        try shared.withLock { (state: inout Shared) throws(DRMError) -> (id: UInt32, index: Int) in
            let claimed = state.claimed
            var choice: (id: UInt32, index: Int)?
            if currentEncoder != 0, let e = drmModeGetEncoder(fd, currentEncoder) {
                defer { drmModeFreeEncoder(e) }
                if let index = crtcs.firstIndex(of: e.pointee.crtc_id), !claimed.contains(e.pointee.crtc_id) {
                    choice = (e.pointee.crtc_id, index)
                }
            }
            search: for encoder in encoders where choice == nil {
                guard let e = drmModeGetEncoder(fd, encoder) else { continue }
                defer { drmModeFreeEncoder(e) }
                for (index, crtc) in crtcs.enumerated() where e.pointee.possible_crtcs & (1 << UInt32(index)) != 0 && !claimed.contains(crtc) {
                    choice = (crtc, index)
                    break search
                }
            }
            guard let choice else {
                throw DRMError(call: "drmModeGetEncoder", detail: "no free CRTC can drive the connector's encoders \(encoders)"
                               + (claimed.isEmpty ? "" : " (CRTCs \(claimed.sorted()) drive other outputs)"))
            }
            state.claimed.insert(choice.id)
            return choice
        }
    }

    func releaseCRTC(_ crtc: UInt32) {
        shared.withLock { state in
            state.claimed.remove(crtc)
            state.pendingFlips[crtc] = nil
        }
    }

    /// How many CRTCs outputs of this process drive now.
    var claimedCRTCs: Int { shared.withLock { $0.claimed.count } }

    /// The primary plane that can show on CRTC number `crtcIndex`.
    func primaryPlane(crtcIndex: Int) throws -> UInt32 {
        guard let planes = drmModeGetPlaneResources(fd) else {
            throw DRMError(call: "drmModeGetPlaneResources", errno: errno)
        }
        defer { drmModeFreePlaneResources(planes) }
        for id in UnsafeBufferPointer(start: planes.pointee.planes, count: Int(planes.pointee.count_planes)) {
            guard let plane = drmModeGetPlane(fd, id) else { continue }
            let possible = plane.pointee.possible_crtcs
            drmModeFreePlane(plane)
            guard possible & (1 << UInt32(crtcIndex)) != 0 else { continue }
            if (try? properties(of: id, type: UInt32(DRM_MODE_OBJECT_PLANE)))?["type"]?.value == UInt64(DRM_PLANE_TYPE_PRIMARY) {
                return id
            }
        }
        throw DRMError(call: "drmModeGetPlane", detail: "no primary plane for CRTC index \(crtcIndex)")
    }

    /// The fourccs every primary plane of the card lists (`drmModePlane` formats): the head's plane
    /// is chosen only when a display connects, so a format is used only where any of them has it.
    func primaryPlaneFormats() throws -> Set<String> {
        guard let planes = drmModeGetPlaneResources(fd) else {
            throw DRMError(call: "drmModeGetPlaneResources", errno: errno)
        }
        defer { drmModeFreePlaneResources(planes) }
        var common: Set<String>?
        for id in UnsafeBufferPointer(start: planes.pointee.planes, count: Int(planes.pointee.count_planes)) {
            guard (try? properties(of: id, type: UInt32(DRM_MODE_OBJECT_PLANE)))?["type"]?.value == UInt64(DRM_PLANE_TYPE_PRIMARY),
                  let plane = drmModeGetPlane(fd, id) else { continue }
            defer { drmModeFreePlane(plane) }
            let formats = Set(UnsafeBufferPointer(start: plane.pointee.formats, count: Int(plane.pointee.count_formats))
                .map { ScanoutFormat(code: $0).description })
            common = common.map { $0.intersection(formats) } ?? formats
        }
        return common ?? []
    }

    /// An object's properties by name: their ids and current values.
    func properties(of object: UInt32, type: UInt32) throws -> [String: (id: UInt32, value: UInt64)] {
        var table: [String: (id: UInt32, value: UInt64)] = [:]
        for property in try propertyList(of: object, type: type) { table[property.name] = (property.id, property.value) }
        return table
    }

    /// An object's properties in the kernel's order, with their flags.
    func propertyList(of object: UInt32, type: UInt32) throws -> [PropertyInfo] {
        guard let props = drmModeObjectGetProperties(fd, object, type) else {
            throw DRMError(call: "drmModeObjectGetProperties(\(object))", errno: errno)
        }
        defer { drmModeFreeObjectProperties(props) }
        var list: [PropertyInfo] = []
        for i in 0..<Int(props.pointee.count_props) {
            guard let prop = drmModeGetProperty(fd, props.pointee.props[i]) else { continue }
            defer { drmModeFreeProperty(prop) }
            let name = withUnsafeBytes(of: prop.pointee.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let flags = prop.pointee.flags
            list.append(PropertyInfo(id: prop.pointee.prop_id, name: name, value: props.pointee.prop_values[i],
                                     immutable: flags & UInt32(DRM_MODE_PROP_IMMUTABLE) != 0,
                                     isBlob: flags & UInt32(DRM_MODE_PROP_BLOB) != 0))
        }
        return list
    }

    /// A property blob's bytes (nil when it is gone).
    func blobBytes(_ id: UInt32) -> [UInt8]? {
        guard id != 0, let blob = drmModeGetPropertyBlob(fd, id) else { return nil }
        defer { drmModeFreePropertyBlob(blob) }
        return Array(UnsafeRawBufferPointer(start: blob.pointee.data, count: Int(blob.pointee.length)))
    }

    /// The planes that can show on CRTC number `crtcIndex`, and the CRTC each is on now (0: none).
    func planes(crtcIndex: Int) throws -> [(id: UInt32, crtc: UInt32)] {
        guard let planes = drmModeGetPlaneResources(fd) else {
            throw DRMError(call: "drmModeGetPlaneResources", errno: errno)
        }
        defer { drmModeFreePlaneResources(planes) }
        var list: [(id: UInt32, crtc: UInt32)] = []
        for id in UnsafeBufferPointer(start: planes.pointee.planes, count: Int(planes.pointee.count_planes)) {
            guard let plane = drmModeGetPlane(fd, id) else { continue }
            defer { drmModeFreePlane(plane) }
            if plane.pointee.possible_crtcs & (1 << UInt32(crtcIndex)) != 0 { list.append((id, plane.pointee.crtc_id)) }
        }
        return list
    }

    // MARK: Framebuffers, state, events

    /// A DRM framebuffer on a GBM buffer (`drmModeAddFB2`). Removed with `removeFramebuffer`.
    func addFramebuffer(_ buffer: ScanoutBuffer) throws -> UInt32 {
        var handles: (UInt32, UInt32, UInt32, UInt32) = (buffer.handle, 0, 0, 0)
        var pitches: (UInt32, UInt32, UInt32, UInt32) = (buffer.stride, 0, 0, 0)
        var offsets: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        var fb: UInt32 = 0
        let result = withUnsafePointer(to: &handles) { h in
            withUnsafePointer(to: &pitches) { p in
                withUnsafePointer(to: &offsets) { o in
                    drmModeAddFB2(fd, UInt32(buffer.width), UInt32(buffer.height), buffer.format.code,
                                  UnsafeRawPointer(h).assumingMemoryBound(to: UInt32.self),
                                  UnsafeRawPointer(p).assumingMemoryBound(to: UInt32.self),
                                  UnsafeRawPointer(o).assumingMemoryBound(to: UInt32.self), &fb, 0)
                }
            }
        }
        try drmCheck("drmModeAddFB2", result, "\(buffer.width)x\(buffer.height) \(buffer.format)")
        return fb
    }

    func removeFramebuffer(_ fb: UInt32) { _ = drmModeRmFB(fd, fb) }

    func saveCRTC(_ crtc: UInt32) throws -> SavedCRTC {
        guard let saved = drmModeGetCrtc(fd, crtc) else { throw DRMError(call: "drmModeGetCrtc(\(crtc))", errno: errno) }
        defer { drmModeFreeCrtc(saved) }
        return SavedCRTC(crtc: saved.pointee)
    }

    /// What `pipe`'s display shows now, before Marquee's first modeset on it: the CRTC (legacy)
    /// and, on an atomic device, the full atomic state of its connector, CRTC and planes.
    func saveState(of pipe: KMSPipe) throws -> SavedCRTC {
        var saved = try saveCRTC(pipe.crtc)
        if atomic {
            guard let index = try resources().crtcs.firstIndex(of: pipe.crtc) else {
                throw DRMError(call: "drmModeGetResources", detail: "CRTC \(pipe.crtc) is not one of \(path)'s")
            }
            saved.atomic = try saveAtomicState(of: pipe, crtcIndex: index)
        }
        return saved
    }

    /// Every writable property of the connector, the CRTC, the primary plane and each other plane
    /// showing on the CRTC now (cursor, overlays).
    func saveAtomicState(of pipe: KMSPipe, crtcIndex: Int) throws -> SavedAtomicState {
        let others = try planes(crtcIndex: crtcIndex).filter { $0.crtc == pipe.crtc && $0.id != pipe.plane }.map(\.id)
        let objects: [(UInt32, UInt32)] = [(pipe.connector, UInt32(DRM_MODE_OBJECT_CONNECTOR)), (pipe.crtc, UInt32(DRM_MODE_OBJECT_CRTC))]
            + ([pipe.plane] + others).map { ($0, UInt32(DRM_MODE_OBJECT_PLANE)) }
        var properties: [SavedProperty] = []
        for (object, type) in objects {
            for property in try propertyList(of: object, type: type) where restorable(property) {
                properties.append(SavedProperty(object: object, objectType: type, property: property.id, name: property.name,
                                                value: property.value, blob: property.isBlob ? blobBytes(UInt32(truncatingIfNeeded: property.value)) : nil))
            }
        }
        return SavedAtomicState(properties: properties, planes: [pipe.plane] + others)
    }

    /// How a saved state went back: "atomic", "atomic (core properties)" or "legacy"; why a
    /// fuller way was refused; and the saved properties that read differently afterwards.
    struct Restored {
        var how: String
        var refused: [String] = []
        var differences: [String] = []
    }

    /// Puts a saved display state back: on an atomic device every saved property in one commit
    /// with ALLOW_MODESET (blobs made again from their bytes); where the driver refuses that, only
    /// the properties Marquee's commits set; then, or on a legacy device, the CRTC with
    /// `drmModeSetCrtc`. The properties are read back and compared with the saved ones.
    @discardableResult
    func restore(_ saved: SavedCRTC, connector: UInt32) throws -> Restored {
        var refused: [String] = []
        if let state = saved.atomic {
            for core in [false, true] {
                do {
                    try commitAtomicState(state, core: core)
                    return Restored(how: core ? "atomic (core properties)" : "atomic", refused: refused, differences: differences(from: state))
                } catch {
                    refused.append("\(error)")
                }
            }
        }
        try restoreLegacy(saved, connector: connector)
        return Restored(how: "legacy", refused: refused, differences: saved.atomic.map(differences(from:)) ?? [])
    }

    /// The saved properties whose value reads differently now (a blob: its bytes), as
    /// "NAME of OBJECT: SAVED -> NOW".
    func differences(from state: SavedAtomicState) -> [String] {
        var current: [UInt32: [UInt32: PropertyInfo]] = [:]
        var found: [String] = []
        for saved in state.properties {
            if current[saved.object] == nil {
                let list = (try? propertyList(of: saved.object, type: saved.objectType)) ?? []
                current[saved.object] = Dictionary(list.map { ($0.id, $0) }) { first, _ in first }
            }
            guard let now = current[saved.object]?[saved.property] else {
                found.append("\(saved.name) of \(saved.object): gone")
                continue
            }
            if let bytes = saved.blob {
                if blobBytes(UInt32(truncatingIfNeeded: now.value)) != bytes { found.append("\(saved.name) of \(saved.object): blob differs") }
            } else if now.value != saved.value {
                found.append("\(saved.name) of \(saved.object): \(saved.value) -> \(now.value)")
            }
        }
        return found
    }

    /// One atomic commit (blocking, ALLOW_MODESET) of the saved properties.
    func commitAtomicState(_ state: SavedAtomicState, core: Bool) throws {
        guard let request = drmModeAtomicAlloc() else { throw DRMError(call: "drmModeAtomicAlloc", errno: ENOMEM) }
        defer { drmModeAtomicFree(request) }
        var blobs: [UInt32] = []
        defer { for blob in blobs { _ = drmModeDestroyPropertyBlob(fd, blob) } }
        for property in state.properties
        where restorable(PropertyInfo(id: property.property, name: property.name, value: property.value, immutable: false,
                                      isBlob: property.blob != nil), core: core) {
            var value = property.value
            if let bytes = property.blob {
                var blob: UInt32 = 0
                try drmCheck("drmModeCreatePropertyBlob(\(property.name) of object \(property.object))",
                             bytes.withUnsafeBytes { drmModeCreatePropertyBlob(fd, $0.baseAddress, $0.count, &blob) })
                blobs.append(blob)
                value = UInt64(blob)
            }
            try drmCheck("drmModeAtomicAddProperty(\(property.name))",
                         drmModeAtomicAddProperty(request, property.object, property.property, value))
        }
        try drmCheck("drmModeAtomicCommit(restore \(core ? "core properties" : "the saved state"))",
                     drmModeAtomicCommit(fd, request, UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET), nil))
    }

    /// Puts a saved CRTC back (mode, framebuffer, position) on `connector`, with the legacy call,
    /// which every driver has, atomic or not.
    func restoreLegacy(_ saved: SavedCRTC, connector: UInt32) throws {
        var s = saved
        var connectorID = connector
        let result: Int32
        if s.crtc.mode_valid != 0 && s.crtc.buffer_id != 0 {
            result = drmModeSetCrtc(fd, s.crtc.crtc_id, s.crtc.buffer_id, s.crtc.x, s.crtc.y, &connectorID, 1, &s.crtc.mode)
        } else {
            result = drmModeSetCrtc(fd, s.crtc.crtc_id, 0, 0, 0, nil, 0, nil)
        }
        try drmCheck("drmModeSetCrtc(restore CRTC \(s.crtc.crtc_id), fb \(s.crtc.buffer_id))", result)
    }

    /// Waits up to `timeout` seconds for the next page-flip event of `crtc`; throws `WaitTimeout`
    /// naming `waitingFor` when none comes in time. Outputs on other CRTCs may wait at the same
    /// time on their own threads: one of them waits on the fd and reads it, keeps the events of the
    /// others for them and wakes them. (An event without a CRTC, from kernels before 4.12,
    /// belongs to whoever reads it.)
    func readFlipEvent(crtc: UInt32, timeout: Double, waitingFor: @autoclosure () -> String) throws -> FlipEvent {
        let clock = MonotonicTime()
        let deadline = clock.now() + Int64(min(max(timeout, 0), 86_400) * 1e9)
        func left() -> Double { Double(deadline - clock.now()) / 1e9 }
        enum Step { case event(FlipEvent), read, timedOut }
        while true {
            // This CRTC's next event, or the fd to read (nobody reads it now), or the end of the wait.
            let step = shared.wait(until: { $0.pendingFlips[crtc]?.isEmpty == false || !$0.reading }, timeout: max(left(), 0)) { state, _ in
                if let event = state.pendingFlips[crtc]?.first {
                    state.pendingFlips[crtc]!.removeFirst()
                    return Step.event(event)
                }
                if state.reading || left() <= 0 { return Step.timedOut }
                state.reading = true
                return Step.read
            }
            switch step {
            case .event(let event): return event
            case .timedOut: throw WaitTimeout(waitingFor: waitingFor(), seconds: timeout)
            case .read: break
            }
            let read = Result { () throws -> [FlipEvent] in
                let ready: Bool
                do throws(SystemCallError) {
                    ready = try FileDescriptor.poll(fd, timeout: left())
                } catch {
                    throw DRMError(error, detail: "waiting for \(waitingFor())")
                }
                return ready ? try handleEvents() : []
            }
            shared.update { state in
                state.reading = false
                for event in (try? read.get()) ?? [] {
                    state.pendingFlips[event.crtc == 0 ? crtc : event.crtc, default: []].append(event)
                }
            }
            if case .failure(let error) = read { throw error }
        }
    }

    /// The page-flip events of one read of the fd, through libdrm's `drmHandleEvent` (none when a
    /// signal or another reader came first). Called by the one thread that reads now.
    private func handleEvents() throws -> [FlipEvent] {
        var context = drmEventContext()
        // Version 3 brings page_flip_handler2 (with the CRTC); an older libdrm calls the first.
        context.version = 3
        context.page_flip_handler = { _, sequence, seconds, microseconds, userData in
            FlipEventSink.deliver(userData, FlipEvent(sequence: sequence, time: Int64(seconds) * 1_000_000_000 + Int64(microseconds) * 1000, crtc: 0))
        }
        context.page_flip_handler2 = { _, sequence, seconds, microseconds, crtc, userData in
            FlipEventSink.deliver(userData, FlipEvent(sequence: sequence, time: Int64(seconds) * 1_000_000_000 + Int64(microseconds) * 1000, crtc: crtc))
        }
        sink.events = []
        do {
            try systemCall("drmHandleEvent(\(path))") { drmHandleEvent(fd, &context) }
        } catch where error.wouldBlock {
            return []
        } catch {
            throw DRMError(error)
        }
        defer { sink.events = [] }
        return sink.events
    }
}

/// Collects the page-flip events libdrm hands to the handler during one `drmHandleEvent` call; the
/// C handler finds it through the flip's user data (`DRMDevice.flipUserData`).
final class FlipEventSink {
    var events: [FlipEvent] = []

    /// Called from libdrm's handler: `userData` is the sink of the device the flip was queued on
    /// (a flip queued without it cannot be told apart and is left out).
    static func deliver(_ userData: UnsafeMutableRawPointer?, _ event: FlipEvent) {
        guard let userData else { return }
        Unmanaged<FlipEventSink>.fromOpaque(userData).takeUnretainedValue().events.append(event)
    }
}

/// The `/dev/dri/card*` nodes, sorted.
func drmCards(dev: String = "/dev/dri") -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: dev)) ?? []
    return entries.filter { $0.hasPrefix("card") }.sorted().map { "\(dev)/\($0)" }
}
