import CDRM
import Foundation
import Media
import Render

/// One XRGB8888 dumb buffer of a DRM card, mapped into memory, with its framebuffer: the one owner
/// of the kernel's buffer handle, the mapping and the framebuffer id, which `deinit` removes
/// (`drmModeRmFB`, `munmap`, `DRM_IOCTL_MODE_DESTROY_DUMB`), while the card is open.
final class DumbBuffer {
    let layout: DumbBufferLayout
    let handle: UInt32
    let framebuffer: UInt32
    /// What was last painted into it (the pieces and background), so that an unchanged layout is
    /// not cleared again; nil: unknown (clear everything).
    var painted: (pieces: [PixelRect], background: RGBColor)?
    /// Where overlays were blended in over what was painted (ScanoutLayer).
    var overlaid: [PixelRect] = []
    private let device: DRMDevice
    private let bytes: UnsafeMutableRawPointer

    init(device: DRMDevice, width: Int, height: Int) throws {
        guard let w = UInt32(exactly: width), let h = UInt32(exactly: height), width > 0, height > 0 else {
            throw DRMError(call: "DRM_IOCTL_MODE_CREATE_DUMB", detail: "size \(width)x\(height) out of range")
        }
        var create = drm_mode_create_dumb()
        create.width = w
        create.height = h
        create.bpp = 32
        try drmCheck("DRM_IOCTL_MODE_CREATE_DUMB(\(width)x\(height), 32 bpp)", marquee_drm_create_dumb(device.fd, &create))
        let handle = create.handle
        guard let layout = DumbBufferLayout(width: width, height: height, pitch: create.pitch, size: create.size) else {
            _ = marquee_drm_destroy_dumb(device.fd, handle)
            throw DRMError(call: "DRM_IOCTL_MODE_CREATE_DUMB(\(width)x\(height))",
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
            throw DRMError(call: "mmap(dumb buffer \(width)x\(height), \(layout.size) bytes)", errno: error)
        }
        var handles: (UInt32, UInt32, UInt32, UInt32) = (handle, 0, 0, 0)
        var pitches: (UInt32, UInt32, UInt32, UInt32) = (create.pitch, 0, 0, 0)
        var offsets: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        var fb: UInt32 = 0
        let result = withUnsafePointer(to: &handles) { hp in
            withUnsafePointer(to: &pitches) { pp in
                withUnsafePointer(to: &offsets) { op in
                    drmModeAddFB2(device.fd, w, h, ScanoutFormat.xrgb8888.code,
                                  UnsafeRawPointer(hp).assumingMemoryBound(to: UInt32.self),
                                  UnsafeRawPointer(pp).assumingMemoryBound(to: UInt32.self),
                                  UnsafeRawPointer(op).assumingMemoryBound(to: UInt32.self), &fb, 0)
                }
            }
        }
        do {
            try drmCheck("drmModeAddFB2(dumb buffer \(width)x\(height) XR24)", result)
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

    /// The buffer's picture as RGBA rows, top row first.
    func readBack() -> RGBAImage {
        var pixels = [UInt8](repeating: 255, count: layout.width * layout.height * 4)
        pixels.withUnsafeMutableBufferPointer { out in
            for y in 0..<layout.height {
                let row = bytes + y * layout.pitch
                for x in 0..<layout.width {
                    let o = (y * layout.width + x) * 4
                    out[o] = row.load(fromByteOffset: x * 4 + 2, as: UInt8.self)
                    out[o + 1] = row.load(fromByteOffset: x * 4 + 1, as: UInt8.self)
                    out[o + 2] = row.load(fromByteOffset: x * 4, as: UInt8.self)
                }
            }
        }
        return RGBAImage(width: layout.width, height: layout.height, pixels: pixels)
    }
}
