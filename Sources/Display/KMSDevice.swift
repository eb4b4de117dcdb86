import CDRM
import Foundation
import Playback
import Render

/// A failing DRM call: names the call, its errno and what it was doing.
public struct DRMError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32
    public let detail: String
    public init(call: String, errno: Int32 = 0, detail: String = "") {
        self.call = call
        self.errno = errno
        self.detail = detail
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

/// The CRTC's state before Marquee touched it, put back on exit.
struct SavedCRTC {
    var crtc: drmModeCrtc
}

/// An open DRM card (`/dev/dri/cardN`): the file descriptor, its resources, events. Owns the fd
/// (closed in deinit). One process opens a card once (only one fd can be DRM master); the outputs
/// of a wall node share it, each from its own presentation thread: flip events are handed to the
/// CRTC they belong to, and each CRTC is claimed by one output.
final class DRMDevice: @unchecked Sendable {
    // @unchecked: `lock` guards `pendingFlips` and `claimed`; the rest is immutable or, like
    // `isOpen`, changed only by the owner once every output is closed.
    let path: String
    let fd: Int32
    /// Atomic modesetting was accepted (`DRM_CLIENT_CAP_ATOMIC`).
    let atomic: Bool

    /// Opens `path` and asks for universal planes and, when `wantAtomic`, atomic modesetting.
    init(path: String, wantAtomic: Bool) throws {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let why = switch code {
            case ENOENT: "no such device"
            case EACCES, EPERM: "no permission to open it (run as root, or join the video group / hold a seat)"
            default: String(cString: strerror(code))
            }
            throw DRMError(call: "open(\(path))", errno: code, detail: why)
        }
        self.path = path
        self.fd = fd  // closed in deinit from here on
        _ = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1)
        atomic = wantAtomic && drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
    }

    private(set) var isOpen = true
    private let lock = NSLock()
    /// Flip events read by one output's thread that belong to another output's CRTC.
    private var pendingFlips: [UInt32: [FlipEvent]] = [:]
    /// CRTCs driven by an output of this process.
    private var claimed = Set<UInt32>()

    deinit { close() }

    /// Drops DRM master and closes the fd (once).
    func close() {
        guard isOpen else { return }
        isOpen = false
        _ = drmDropMaster(fd)
        Glibc.close(fd)
    }

    /// Whether this fd may modeset (it is DRM master).
    var isMaster: Bool { drmIsMaster(fd) != 0 }

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
        try lock.withLock {
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
            claimed.insert(choice.id)
            return choice
        }
    }

    func releaseCRTC(_ crtc: UInt32) {
        lock.withLock {
            claimed.remove(crtc)
            pendingFlips[crtc] = nil
        }
    }

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
        guard let props = drmModeObjectGetProperties(fd, object, type) else {
            throw DRMError(call: "drmModeObjectGetProperties(\(object))", errno: errno)
        }
        defer { drmModeFreeObjectProperties(props) }
        var table: [String: (id: UInt32, value: UInt64)] = [:]
        for i in 0..<Int(props.pointee.count_props) {
            guard let prop = drmModeGetProperty(fd, props.pointee.props[i]) else { continue }
            let name = withUnsafeBytes(of: prop.pointee.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            table[name] = (prop.pointee.prop_id, props.pointee.prop_values[i])
            drmModeFreeProperty(prop)
        }
        return table
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

    /// Puts a saved CRTC back (mode, framebuffer, position) on `connector`, with the legacy call,
    /// which every driver has, atomic or not.
    func restore(_ saved: SavedCRTC, connector: UInt32) throws {
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

    /// Waits up to `timeout` seconds for the next page-flip event of `crtc`; retries EINTR/EAGAIN.
    /// Outputs on other CRTCs may wait at the same time on their own threads: whichever reads the
    /// fd keeps the events of the others for them. (An event without a CRTC, from kernels before
    /// 4.12, belongs to whoever reads it.)
    func readFlipEvent(crtc: UInt32, timeout: Double, waitingFor: @autoclosure () -> String) throws -> FlipEvent {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw WaitTimeout(waitingFor: waitingFor(), seconds: timeout) }
            let next: FlipEvent? = try lock.withLock {
                if let event = pendingFlips[crtc]?.first {
                    pendingFlips[crtc]!.removeFirst()
                    return event
                }
                // Poll under the lock: while other outputs share the fd, for at most a millisecond,
                // so that another output's thread soon gets its turn to collect what was read for
                // it; a lone output waits for its event in one poll.
                let milliseconds = max(0, (remaining * 1000).rounded(.up))
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, Int32(claimed.count > 1 ? min(1, milliseconds) : milliseconds))
                if ready < 0 {
                    if errno == EINTR || errno == EAGAIN { return nil }
                    throw DRMError(call: "poll(\(path))", errno: errno)
                }
                if ready == 0 { return nil }
                var mine: FlipEvent?
                for event in try readEvents() {
                    if mine == nil && (event.crtc == crtc || event.crtc == 0) {
                        mine = event
                    } else {
                        pendingFlips[event.crtc, default: []].append(event)
                    }
                }
                return mine
            }
            if let next { return next }
            usleep(200)  // lets another output's thread take the lock
        }
    }

    /// The page-flip events one `read` of the fd returns (none after EINTR/EAGAIN).
    private func readEvents() throws -> [FlipEvent] {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return [] }
            throw DRMError(call: "read(\(path))", errno: errno)
        }
        // struct drm_event {u32 type, length}; drm_event_vblank adds u64 user_data, u32 tv_sec,
        // tv_usec, sequence, crtc_id.
        var offset = 0
        var events: [FlipEvent] = []
        func u32(_ at: Int) -> UInt32 { buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
        while offset + 8 <= count {
            let type = u32(offset), length = Int(u32(offset + 4))
            guard length >= 8, offset + length <= count else { break }
            if type == UInt32(DRM_EVENT_FLIP_COMPLETE), length >= 32 {
                let seconds = Int64(u32(offset + 16)), micros = Int64(u32(offset + 20))
                events.append(FlipEvent(sequence: u32(offset + 24), time: seconds * 1_000_000_000 + micros * 1000, crtc: u32(offset + 28)))
            }
            offset += length
        }
        return events
    }
}

/// The `/dev/dri/card*` nodes, sorted.
func drmCards(dev: String = "/dev/dri") -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: dev)) ?? []
    return entries.filter { $0.hasPrefix("card") }.sorted().map { "\(dev)/\($0)" }
}
