import CDRM
import Foundation
import Media
import Render

/// What a dumb buffer's picture needs of it: the bytes to map and where each plane lies.
protocol DumbBufferPlanes {
    var size: Int { get }
    var spans: [(offset: Int, pitch: Int)] { get }
}

extension DumbBufferLayout: DumbBufferPlanes {
    var spans: [(offset: Int, pitch: Int)] { [(0, pitch)] }
}

extension YUVBufferLayout: DumbBufferPlanes {
    var spans: [(offset: Int, pitch: Int)] { planes.map { ($0.offset, $0.pitch) } }
}

/// A dumb buffer of a DRM card, mapped into memory, with a framebuffer over all of its planes (one
/// allocation: each plane at its own offset and pitch): the one owner of the kernel's buffer
/// handle, the mapping and the framebuffer id, which `deinit` removes (`drmModeRmFB`, `munmap`,
/// `DRM_IOCTL_MODE_DESTROY_DUMB`), while the card is open. `DumbBuffer` is an XRGB8888 one;
/// the Y'CbCr plane route uses `MappedDumbBuffer<YUVBufferLayout>` (YUVPlaneScanout.swift).
final class MappedDumbBuffer<Layout: DumbBufferPlanes> {
    let layout: Layout
    let framebuffer: UInt32
    /// The mapping's first byte, valid while this lives.
    let bytes: UnsafeMutableRawPointer
    private let handle: UInt32
    private let device: DRMDevice

    /// Asks the driver for a buffer of `request` (width, height, bits per pixel), reads its pitch
    /// and size into a layout (`makeLayout`: nil when they cannot hold the picture), maps it and
    /// makes a `fourcc` framebuffer of `width` x `height` over the layout's planes. `what` names
    /// the buffer in errors.
    init(device: DRMDevice, what: String, request: (width: Int, height: Int, bitsPerPixel: Int),
         fourcc: UInt32, width: Int, height: Int, layout makeLayout: (_ pitch: UInt32, _ size: UInt64) -> Layout?) throws {
        guard width > 0, height > 0, let w = UInt32(exactly: width), let h = UInt32(exactly: height),
              let requestWidth = UInt32(exactly: request.width), let requestHeight = UInt32(exactly: request.height),
              let bitsPerPixel = UInt32(exactly: request.bitsPerPixel) else {
            throw DRMError(call: "DRM_IOCTL_MODE_CREATE_DUMB", detail: "size \(what) out of range")
        }
        var create = drm_mode_create_dumb()
        create.width = requestWidth
        create.height = requestHeight
        create.bpp = bitsPerPixel
        try drmCheck("DRM_IOCTL_MODE_CREATE_DUMB(\(what): \(request.width)x\(request.height), \(request.bitsPerPixel) bpp)",
                     marquee_drm_create_dumb(device.fd, &create))
        let handle = create.handle
        guard let layout = makeLayout(create.pitch, create.size), (1...4).contains(layout.spans.count) else {
            _ = marquee_drm_destroy_dumb(device.fd, handle)
            throw DRMError(call: "DRM_IOCTL_MODE_CREATE_DUMB(\(what))",
                           detail: "the driver's pitch \(create.pitch) and size \(create.size) cannot hold the picture")
        }
        var map = drm_mode_map_dumb()
        map.handle = handle
        do {
            try drmCheck("DRM_IOCTL_MODE_MAP_DUMB(handle \(handle))", marquee_drm_map_dumb(device.fd, &map))
        } catch {
            _ = marquee_drm_destroy_dumb(device.fd, handle)
            throw error
        }
        guard map.offset <= UInt64(Int.max),
              let mapped = mmap(nil, layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, device.fd, off_t(map.offset)),
              mapped != MAP_FAILED else {
            let error = errno
            _ = marquee_drm_destroy_dumb(device.fd, handle)
            throw DRMError(call: "mmap(dumb buffer \(what), \(layout.size) bytes)", errno: error)
        }
        // Every plane is in the one buffer: the same handle, its own offset and pitch.
        var handles: [UInt32] = [0, 0, 0, 0], pitches: [UInt32] = [0, 0, 0, 0], offsets: [UInt32] = [0, 0, 0, 0]
        for (i, span) in layout.spans.enumerated() {
            handles[i] = handle
            pitches[i] = UInt32(clamping: span.pitch)
            offsets[i] = UInt32(clamping: span.offset)
        }
        var fb: UInt32 = 0
        let result = drmModeAddFB2(device.fd, w, h, fourcc, handles, pitches, offsets, &fb, 0)
        do {
            try drmCheck("drmModeAddFB2(dumb buffer \(what))", result)
        } catch {
            munmap(mapped, layout.size)
            _ = marquee_drm_destroy_dumb(device.fd, handle)
            throw error
        }
        self.device = device
        self.layout = layout
        self.handle = handle
        self.framebuffer = fb
        self.bytes = mapped
    }

    deinit {
        munmap(bytes, layout.size)
        guard device.isOpen else { return }  // closing the card freed them already
        _ = drmModeRmFB(device.fd, framebuffer)
        _ = marquee_drm_destroy_dumb(device.fd, handle)
    }

    /// Calls `body` with the mapping (valid only inside it).
    func withBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: bytes, count: layout.size))
    }
}

/// One XRGB8888 dumb buffer of a DRM card, mapped into memory, with its framebuffer
/// (`MappedDumbBuffer`); the planes scan-out paints its `canvas`.
final class DumbBuffer {
    let canvas: XRGBCanvas
    private let mapped: MappedDumbBuffer<DumbBufferLayout>
    var framebuffer: UInt32 { mapped.framebuffer }

    init(device: DRMDevice, width: Int, height: Int) throws {
        mapped = try MappedDumbBuffer(device: device, what: "\(width)x\(height) XR24", request: (width, height, 32),
                                      fourcc: ScanoutFormat.xrgb8888.code, width: width, height: height) { pitch, size in
            DumbBufferLayout(width: width, height: height, pitch: pitch, size: size)
        }
        canvas = XRGBCanvas(mapped)
    }
}

/// An XRGB8888 picture in memory that the scan-out layer paints, and what it painted there: a
/// dumb buffer's mapping, or memory of its own (the headless output without GL).
final class XRGBCanvas {
    /// What was last painted into it (the pieces and background), so that an unchanged layout is
    /// not cleared again; nil: unknown (clear everything).
    var painted: (pieces: [PixelRect], background: RGBColor)?
    /// Where overlays were blended in over what was painted (ScanoutLayer).
    var overlaid: [PixelRect] = []
    let layout: DumbBufferLayout
    private let bytes: UnsafeMutableRawPointer
    /// The dumb buffer whose mapping `bytes` is (kept alive by this reference); nil: this canvas
    /// allocated them and frees them in `deinit`.
    private let mapping: MappedDumbBuffer<DumbBufferLayout>?

    /// Paints into `mapping`.
    init(_ mapping: MappedDumbBuffer<DumbBufferLayout>) {
        self.mapping = mapping
        layout = mapping.layout
        bytes = mapping.bytes
    }

    /// A `width` x `height` picture of its own, black; nil when no layout can hold that size.
    init?(width: Int, height: Int) {
        guard (1...16384).contains(width), (1...16384).contains(height),
              let layout = DumbBufferLayout(width: width, height: height, pitch: UInt32(width * 4), size: UInt64(width * height * 4)) else {
            return nil
        }
        self.layout = layout
        mapping = nil
        bytes = UnsafeMutableRawPointer.allocate(byteCount: layout.size, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: layout.size)
    }

    deinit {
        if mapping == nil { bytes.deallocate() }
    }

    /// Calls `body` with the picture's bytes (valid only inside it).
    func withBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: bytes, count: layout.size))
    }

    /// Fills `rect` (clipped to the buffer) with `color`.
    func fill(_ rect: PixelRect, with color: RGBColor) {
        let x0 = max(0, rect.x), y0 = max(0, rect.y)
        let x1 = min(layout.width, rect.x + rect.width), y1 = min(layout.height, rect.y + rect.height)
        guard x1 > x0, y1 > y0 else { return }
        let pixel = UInt32(color.red) << 16 | UInt32(color.green) << 8 | UInt32(color.blue) | 0xFF00_0000
        for y in y0..<y1 {
            let row = (bytes + y * layout.pitch + x0 * 4).assumingMemoryBound(to: UInt32.self)
            row.update(repeating: pixel.littleEndian, count: x1 - x0)
        }
    }

    /// The picture as RGBA rows, top row first; with `maxWidth` below its width, scaled down to
    /// that width (its aspect kept) as it is read, each pixel the mean of the 2x2 pixels nearest
    /// its centre (as a GL linear filter samples): a thumbnail without copying the whole picture.
    func readBack(maxWidth: Int? = nil) -> RGBAImage {
        let (width, height, pitch) = (layout.width, layout.height, layout.pitch)
        let w = min(width, max(1, maxWidth ?? width))
        let h = w == width ? height : max(1, Int((Double(height) * Double(w) / Double(width)).rounded()))
        // The source column and row each output pixel starts its 2x2 at (the last one repeated).
        func starts(_ out: Int, _ size: Int) -> [(Int, Int)] {
            (0..<out).map { i in
                guard out != size else { return (i, i) }
                let c = min(max((Double(i) + 0.5) * Double(size) / Double(out) - 0.5, 0), Double(size - 1))
                let p = Int(c)
                return (p, min(p + 1, size - 1))
            }
        }
        var pixels = [UInt8](repeating: 255, count: w * h * 4)
        pixels.withUnsafeMutableBufferPointer { out in
            guard w != width else {
                for y in 0..<height {
                    let row = (bytes + y * pitch).assumingMemoryBound(to: UInt32.self)
                    for x in 0..<width {
                        let (p, o) = (UInt32(littleEndian: row[x]), (y * width + x) * 4)
                        (out[o], out[o + 1], out[o + 2]) = (UInt8(p >> 16 & 0xFF), UInt8(p >> 8 & 0xFF), UInt8(p & 0xFF))
                    }
                }
                return
            }
            let columns = starts(w, width), rows = starts(h, height)
            for (y, (r0, r1)) in rows.enumerated() {
                let top = (bytes + r0 * pitch).assumingMemoryBound(to: UInt32.self)
                let bottom = (bytes + r1 * pitch).assumingMemoryBound(to: UInt32.self)
                for (x, (c0, c1)) in columns.enumerated() {
                    let o = (y * w + x) * 4
                    let (p, q) = (UInt32(littleEndian: top[c0]), UInt32(littleEndian: top[c1]))
                    let (r, t) = (UInt32(littleEndian: bottom[c0]), UInt32(littleEndian: bottom[c1]))
                    // XRGB: red in bits 16-23, green 8-15, blue 0-7.
                    func mean(_ shift: UInt32) -> UInt8 {
                        let top: UInt32 = (p >> shift & 0xFF) + (q >> shift & 0xFF)
                        let bottom: UInt32 = (r >> shift & 0xFF) + (t >> shift & 0xFF)
                        return UInt8((top + bottom + 2) / 4)
                    }
                    (out[o], out[o + 1], out[o + 2]) = (mean(16), mean(8), mean(0))
                }
            }
        }
        return RGBAImage(width: w, height: h, pixels: pixels)
    }
}
