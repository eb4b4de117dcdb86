import CDRM
import Foundation
import Media
import Playback
import Render

/// A Y'CbCr dumb buffer (NV12, YU12 or P010) holding all of a picture's planes in one allocation
/// (`YUVBufferLayout`: chroma rows below the luma), mapped, with its framebuffer.
typealias YUVDumbBuffer = MappedDumbBuffer<YUVBufferLayout>

extension MappedDumbBuffer where Layout == YUVBufferLayout {
    convenience init(device: DRMDevice, format: YUVScanoutFormat, width: Int, height: Int) throws {
        guard let request = YUVBufferLayout.dumbRequest(format, width: width, height: height) else {
            throw DRMError(call: "DRM_IOCTL_MODE_CREATE_DUMB", detail: "size \(format) \(width)x\(height) out of range")
        }
        try self.init(device: device, what: "\(format) \(width)x\(height)", request: request, fourcc: format.fourcc,
                      width: width, height: height) { pitch, size in
            size <= UInt64(Int.max) ? YUVBufferLayout(format, width: width, height: height, pitch: Int(pitch), size: Int(size)) : nil
        }
    }
}

/// A decoder's DMA-BUF frame as a framebuffer (path 1): each of its buffers imported as a GEM
/// handle (`drmPrimeFDToHandle`), the framebuffer made over them with their offsets, pitches and
/// modifier (`drmModeAddFB2WithModifiers`). Owns the framebuffer and the handles (the kernel gives
/// one handle per buffer however often it is imported, so each distinct handle is closed once,
/// after the framebuffer is removed) and holds the frame, whose DMA-BUFs must live while the
/// plane scans them out: it is released only when the flip that replaces it has completed.
final class PrimeFramebuffer {
    let framebuffer: UInt32
    /// The picture (its DMA-BUF fds stay the frame's: they are never closed here).
    let frame: VideoFrame
    private let handles: Set<UInt32>
    private let device: DRMDevice

    init(device: DRMDevice, frame: VideoFrame, prime: DRMPrimeFrame) throws {
        let d = prime.descriptor
        let what = "DMA-BUF frame \(d.width)x\(d.height)"
        guard d.layers.count == 1, let layer = d.layers.first, (1...4).contains(layer.planes.count),
              let w = UInt32(exactly: d.width), let h = UInt32(exactly: d.height), w > 0, h > 0 else {
            throw DRMError(call: "drmModeAddFB2WithModifiers", detail: "\(what): \(d.layers.count) layers (one with 1-4 planes needed)")
        }
        var imported: [Int: UInt32] = [:]  // object index -> handle
        var owned = Set<UInt32>()
        var made = false
        defer {
            // Until the framebuffer exists the handles are this init's own.
            if !made { for handle in owned { _ = drmCloseBufferHandle(device.fd, handle) } }
        }
        var handles: [UInt32] = [0, 0, 0, 0], pitches: [UInt32] = [0, 0, 0, 0], offsets: [UInt32] = [0, 0, 0, 0]
        var modifiers: [UInt64] = [0, 0, 0, 0]
        var modifier = DRMModifier.invalid
        for (i, plane) in layer.planes.enumerated() {
            guard d.objects.indices.contains(plane.object), let pitch = UInt32(exactly: plane.pitch), let offset = UInt32(exactly: plane.offset) else {
                throw DRMError(call: "drmModeAddFB2WithModifiers", detail: "\(what): plane \(i) names object \(plane.object) of \(d.objects.count) or is out of range")
            }
            let object = d.objects[plane.object]
            if imported[plane.object] == nil {
                var handle: UInt32 = 0
                try drmCheck("drmPrimeFDToHandle(fd \(object.fd))", drmPrimeFDToHandle(device.fd, object.fd, &handle))
                imported[plane.object] = handle
                owned.insert(handle)
            }
            handles[i] = imported[plane.object]!
            pitches[i] = pitch
            offsets[i] = offset
            modifiers[i] = object.modifier
            modifier = object.modifier
        }
        var fb: UInt32 = 0
        let withModifiers = modifier != DRMModifier.invalid
        try drmCheck("drmModeAddFB2WithModifiers(\(what) \(DRMPrimeDescriptor.fourccName(layer.fourcc)), modifier 0x\(String(modifier, radix: 16)))",
                     drmModeAddFB2WithModifiers(device.fd, w, h, layer.fourcc, handles, pitches, offsets, modifiers, &fb,
                                                withModifiers ? UInt32(DRM_MODE_FB_MODIFIERS) : 0))
        made = true  // the handles are this object's from here: closed in deinit
        self.device = device
        self.frame = frame
        self.handles = owned
        framebuffer = fb
    }

    deinit {
        guard device.isOpen else { return }
        _ = drmModeRmFB(device.fd, framebuffer)
        for handle in handles { _ = drmCloseBufferHandle(device.fd, handle) }
    }
}

/// What the Y'CbCr plane shows for one flip.
enum YUVPlaneContent {
    /// Nothing (disabled: the primary plane's picture shows).
    case off
    /// A dumb buffer of the pool (path 2).
    case dumb(YUVDumbBuffer, PlaneRectangles, colour: (UInt64?, UInt64?), rotation: UInt64?)
    /// A DMA-BUF frame (path 1).
    case prime(PrimeFramebuffer, PlaneRectangles, colour: (UInt64?, UInt64?), rotation: UInt64?)

    var buffer: YUVDumbBuffer? {
        if case .dumb(let buffer, _, _, _) = self { return buffer }
        return nil
    }
}

/// The Y'CbCr plane route of one head (`PlaneRoute.yuvPlane`): per picture it decides
/// (`routeFrame`) whether the frame is attached (path 1), copied or converted into one of its
/// dumb buffers (path 2), or drawn into the primary plane's XRGB buffer instead (path 3, the
/// plane disabled); its part of each atomic commit sets the plane's framebuffer, rectangles,
/// rotation and colour properties. Contents are held until the flip that replaces them has
/// completed. Presentation thread only.
final class YUVPlanePresenter {
    static let poolSize = 3
    let setup: YUVPlaneSetup
    private let device: DRMDevice
    private let crtc: UInt32
    private let props: [String: (id: UInt32, value: UInt64)]
    private let writer = YUVPlaneWriter()
    private let logger: Logger
    private var pool: [YUVDumbBuffer] = []
    private var drawn: YUVPlaneContent?
    private var inFlight: YUVPlaneContent?
    private var onScreen: YUVPlaneContent?
    private var reported = Set<String>()
    /// Pictures by route: attached, copied, converted, drawn as XRGB.
    private(set) var counts = (attached: 0, copied: 0, converted: 0, xrgb: 0)

    init(setup: YUVPlaneSetup, device: DRMDevice, crtc: UInt32, logger: Logger) throws {
        self.setup = setup
        self.device = device
        self.crtc = crtc
        self.logger = logger
        props = try device.properties(of: setup.plane.id, type: UInt32(DRM_MODE_OBJECT_PLANE))
        for name in ["FB_ID", "CRTC_ID", "SRC_X", "SRC_Y", "SRC_W", "SRC_H", "CRTC_X", "CRTC_Y", "CRTC_W", "CRTC_H"] where props[name] == nil {
            throw DRMError(call: "drmModeObjectGetProperties", detail: "\(setup.plane.name) has no \(name) property")
        }
    }

    /// Says once per distinct reason why pictures left the plane's route.
    private func note(_ what: String, _ fields: KeyValuePairs<String, String>) {
        guard reported.insert(what).inserted else { return }
        logger.info(what, fields)
    }

    /// Why the driver refused the plane's state (set once): from then on every picture is drawn
    /// into the XRGB buffer and the plane is kept off.
    private(set) var refused: String?

    /// The driver refused a commit with the plane's state: the content in flight becomes "off"
    /// (the commit is tried again without the plane) and the route is left for good.
    func refuse(_ why: String) {
        guard refused == nil else { return }
        refused = why
        inFlight = .off
        pool.removeAll()
        logger.warning("the driver refused the Y'CbCr plane's state; pictures go into XRGB buffers from now",
                       ["plane": "\(setup.plane.id)", "error": why])
    }

    /// Makes the plane's content for `frames` (one picture: the route excludes mosaics); the
    /// primary plane's `target` gets the background, or the picture itself where it cannot go on
    /// the plane.
    func draw(_ frames: [VideoFrame?], layer: ScanoutLayer, into target: XRGBCanvas, bounds: PixelRect) throws {
        drawn = nil
        if !layer.overlays.isEmpty {
            // Overlays (added by a reload, or scheduled) blend into the XRGB picture while they show.
            note("pictures drawn into the XRGB buffer while overlays show", ["overlays": "\(layer.overlays.count)"])
        }
        if refused != nil || !layer.overlays.isEmpty {
            counts.xrgb += frames.contains { $0 != nil } ? 1 : 0
            try drawXRGB(frames, layer: layer, into: target, bounds: bounds)
            drawn = .off
            return
        }
        guard let (frame, piece) = layer.pieces(of: frames, bounds: bounds).first else {
            try drawXRGB(frames, layer: layer, into: target, bounds: bounds)  // the background only
            drawn = .off
            return
        }
        let prime = frame.drmPrime.flatMap { p in
            p.descriptor.layers.first.map { (fourcc: $0.fourcc, modifier: p.descriptor.objects.first?.modifier ?? DRMModifier.invalid,
                                             layers: p.descriptor.layers.count) }
        }
        let turn = frame.rotation + layer.rotation
        let route = routeFrame(format: frame.pixelFormat, prime: prime, turn: turn, setup: setup)
        let rotation = setup.plane.rotations[kmsRotationName(turn)]
        let colour = planeColorProperties(matrix: frame.colorMatrix, range: frame.colorRange, plane: setup.plane)
        if !colour.missing.isEmpty {
            note("the Y'CbCr plane takes the driver's colour defaults", ["plane": "\(setup.plane.id)", "missing": colour.missing.joined(separator: "; ")])
        }
        switch route {
        case .xrgb(let why):
            note("pictures drawn into the XRGB buffer instead of the Y'CbCr plane", ["why": why])
            counts.xrgb += 1
            try drawXRGB(frames, layer: layer, into: target, bounds: bounds)
            drawn = .off
            return
        case .attach:
            if let p = frame.drmPrime, let rects = planeRectangles(piece, format: frame.pixelFormat, frameWidth: frame.width,
                                                                     frameHeight: frame.height, inBuffer: false) {
                do {
                    let fb = try PrimeFramebuffer(device: device, frame: frame, prime: p)
                    paintBackground(target, layer: layer)
                    counts.attached += 1
                    drawn = .prime(fb, rects, colour: (colour.encoding, colour.range), rotation: rotation)
                    return
                } catch {
                    // The decoder copies the rest of its item; this picture is copied below.
                    p.reportImportFailure("\(error)")
                    note("a DMA-BUF frame could not be attached to the plane; copied instead", ["error": "\(error)"])
                }
            }
        case .copy, .convert: break
        }
        // Path 2: the picture in memory, into a Y'CbCr dumb buffer of the crop's size.
        let memory = try frame.copiedToMemory()
        let target2: YUVScanoutFormat
        switch routeFrame(format: memory.pixelFormat, prime: nil, turn: turn, setup: setup) {
        case .copy(let f): target2 = f; counts.copied += 1
        case .convert(let f): target2 = f; counts.converted += 1
        case .attach, .xrgb:
            counts.xrgb += 1
            try drawXRGB([memory], layer: layer, into: target, bounds: bounds)
            drawn = .off
            return
        }
        let crop = ScanoutConverter.aligned(piece.crop, format: memory.pixelFormat, width: memory.width, height: memory.height)
        guard let rects = planeRectangles(piece, format: memory.pixelFormat, frameWidth: memory.width, frameHeight: memory.height, inBuffer: true) else {
            throw OutputUnavailable(description: "the picture's plane rectangles are out of range (crop \(crop), at \(piece.destination))")
        }
        let buffer = try freeBuffer(target2, width: crop.width, height: crop.height)
        try buffer.withBytes { try writer.write(memory, crop: crop, into: $0, layout: buffer.layout) }
        paintBackground(target, layer: layer)
        drawn = .dumb(buffer, rects, colour: (colour.encoding, colour.range), rotation: rotation)
    }

    private func drawXRGB(_ frames: [VideoFrame?], layer: ScanoutLayer, into target: XRGBCanvas, bounds: PixelRect) throws {
        try layer.draw(frames, into: target, bounds: bounds)
    }

    /// The whole primary buffer in the background colour (painted only when it was not already).
    private func paintBackground(_ target: XRGBCanvas, layer: ScanoutLayer) {
        if target.painted.map({ !$0.pieces.isEmpty || $0.background != layer.background }) ?? true {
            target.fill(PixelRect(x: 0, y: 0, width: target.layout.width, height: target.layout.height), with: layer.background)
            target.painted = ([], layer.background)
        } else {
            for rect in target.overlaid { target.fill(rect, with: layer.background) }
        }
        target.overlaid = []
    }

    /// A pool buffer of `format` and size that is neither on screen nor in flight; the pool is
    /// made again when the picture's format or size changes.
    private func freeBuffer(_ format: YUVScanoutFormat, width: Int, height: Int) throws -> YUVDumbBuffer {
        if let first = pool.first, first.layout.format != format || first.layout.width != width || first.layout.height != height {
            pool.removeAll()  // buffers on screen or in flight stay alive through their content
        }
        let busy = [inFlight?.buffer, onScreen?.buffer].compactMap { $0.map(ObjectIdentifier.init) }
        if let free = pool.first(where: { !busy.contains(ObjectIdentifier($0)) }) { return free }
        let made = try YUVDumbBuffer(device: device, format: format, width: width, height: height)
        if pool.count < Self.poolSize { pool.append(made) }
        if pool.count == 1 {
            logger.info("Y'CbCr plane buffers", ["plane": "\(setup.plane.id)", "format": format.fourccName, "size": "\(width)x\(height)",
                                                 "pitch": "\(made.layout.planes[0].pitch)", "bytes": "\(made.layout.size)"])
        }
        return made
    }

    /// The drawn content goes into the next commit (`add(to:)`).
    func queued() {
        inFlight = drawn ?? inFlight
        drawn = nil
    }

    /// The flip completed: the content in flight is on screen, the one before released (a
    /// DMA-BUF frame's framebuffer removed, its handles closed, the frame let go).
    func flipped() {
        if let inFlight { onScreen = inFlight }
        inFlight = nil
    }

    /// Adds the plane's state for the content in flight to an atomic request.
    func add(to request: OpaquePointer) {
        func set(_ name: String, _ value: UInt64) {
            if let id = props[name]?.id { _ = drmModeAtomicAddProperty(request, setup.plane.id, id, value) }
        }
        let (fb, rects, colour, rotation): (UInt32, PlaneRectangles?, (UInt64?, UInt64?), UInt64?) = switch inFlight ?? .off {
        case .off: (0, nil, (nil, nil), nil)
        case .dumb(let b, let r, let c, let t): (b.framebuffer, r, c, t)
        case .prime(let p, let r, let c, let t): (p.framebuffer, r, c, t)
        }
        guard let rects else {
            set("FB_ID", 0)
            set("CRTC_ID", 0)
            return
        }
        set("FB_ID", UInt64(fb))
        set("CRTC_ID", UInt64(crtc))
        for (name, value) in rects.properties { set(name, value) }
        if let rotation { set("rotation", rotation) }
        if let encoding = colour.0 { set("COLOR_ENCODING", encoding) }
        if let range = colour.1 { set("COLOR_RANGE", range) }
    }
}
