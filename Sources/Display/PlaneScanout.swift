import Media
import Playback
import Render

/// `display.scanout`: how pictures reach a KMS display.
public enum ScanoutMode: String, Sendable, CaseIterable {
    /// The player layer draws each picture with OpenGL ES into a GBM surface (`KMSGLPresentation`).
    case gl
    /// Pictures go to KMS planes without any GL: swscale converts and scales each one straight
    /// into a mapped dumb buffer that the primary plane scans out (`KMSPlanesPresentation`).
    case planes
    /// `gl` on a hardware renderer, `planes` on a software one (llvmpipe), where drawing every
    /// picture with the CPU costs far more than converting it into the scan-out buffer.
    case auto
}

/// The two ways a KMS output can show pictures (its presentation).
public enum ScanoutKind: String, Sendable {
    case gl, planes
}

/// The scan-out an output uses, and why: chosen once, when the output opens.
public struct ScanoutChoice: Sendable, Equatable {
    public var kind: ScanoutKind
    public var reason: String
    public init(kind: ScanoutKind, reason: String) {
        self.kind = kind
        self.reason = reason
    }
}

/// Whether a card can have a GPU, as its kernel driver tells without any GL being loaded.
public enum CardGPU: Equatable, Sendable {
    /// The driver only scans out: Mesa has no GPU driver for it, so its GL could only be a software
    /// rasterizer. Says which driver and why.
    case none(String)
    /// It may have one: only its GL renderer can tell.
    case unknown
}

/// Kernel DRM drivers that only scan out (firmware framebuffers, emulated display adapters, server
/// management controllers): Mesa has no GPU driver for any of them, nor pairs them with a
/// render-only GPU. (USB adapters and vkms are left out: Mesa's kmsro can pair those with an ARM
/// board's GPU.)
let displayOnlyDrivers: Set<String> = ["simpledrm", "ofdrm", "efidrm", "vesadrm", "bochs-drm", "cirrus", "cirrus-qemu",
                                       "ast", "mgag200", "hyperv_drm", "vboxvideo", "qxl"]

/// `driver` is the kernel driver's name (`drmGetVersion`); `virtio3D` is virtio-gpu's 3D feature
/// (virgl), nil when it was not or could not be asked. virtio-gpu without 3D is what Mesa falls
/// back from to its software rasterizer too.
public func cardGPU(driver: String, virtio3D: Bool?) -> CardGPU {
    if displayOnlyDrivers.contains(driver) {
        return .none("the card's driver (\(driver)) only scans out")
    }
    if driver == "virtio_gpu" && virtio3D == false {
        return .none("the card's driver (virtio_gpu) has no 3D from its host (no virgl)")
    }
    return .unknown
}

/// Chooses the scan-out for `mode`. Under `auto`, `card` settles it when the card has no GPU;
/// otherwise `renderer` is asked: the `GL_RENDERER` the card's GL context reports, or the error that
/// kept one from being made.
public func chooseScanout(_ mode: ScanoutMode, card: CardGPU = .unknown, renderer: () -> Result<String, any Error>) -> ScanoutChoice {
    switch mode {
    case .gl: return ScanoutChoice(kind: .gl, reason: "display.scanout is gl")
    case .planes: return ScanoutChoice(kind: .planes, reason: "display.scanout is planes")
    case .auto:
        if case .none(let why) = card {
            return ScanoutChoice(kind: .planes, reason: "\(why): its GL could only be Mesa's software rasterizer (llvmpipe), so pictures go to the planes and no GL is loaded")
        }
        switch renderer() {
        case .failure(let error):
            return ScanoutChoice(kind: .planes, reason: "no GL renderer on this card (\(error)): pictures go to the planes without GL")
        case .success(let name):
            let lower = name.lowercased()
            if let software = ["llvmpipe", "softpipe", "swrast"].first(where: { lower.contains($0) }) {
                return ScanoutChoice(kind: .planes, reason: "the GL renderer (\(name)) is \(software), a software rasterizer: swscale converts into the scan-out buffer instead")
            }
            return ScanoutChoice(kind: .gl, reason: "the GL renderer (\(name)) is a GPU")
        }
    }
}

/// A dumb buffer's layout as the kernel made it (`DRM_IOCTL_MODE_CREATE_DUMB`): checked before a
/// byte is written, since the pitch and size come from the driver.
struct DumbBufferLayout: Equatable {
    let width: Int
    let height: Int
    /// Bytes from one row to the next (at least `width * 4`; drivers pad it).
    let pitch: Int
    /// Bytes of the mapping.
    let size: Int

    /// nil when the driver's pitch or size cannot hold `width` x `height` 32-bit pixels.
    init?(width: Int, height: Int, pitch: UInt32, size: UInt64) {
        guard width > 0, height > 0, width <= 16384, height <= 16384 else { return nil }
        let pitch = Int(pitch)
        guard pitch >= width * 4, size <= UInt64(Int.max), Int(size) >= pitch * height else { return nil }
        self.width = width
        self.height = height
        self.pitch = pitch
        self.size = Int(size)
    }

    /// Where a rectangle of the buffer goes (nil when it does not lie inside it).
    func placement(of rect: PixelRect) -> ScanoutPlacement? {
        guard rect.x >= 0, rect.y >= 0, rect.width > 0, rect.height > 0,
              rect.x + rect.width <= width, rect.y + rect.height <= height else { return nil }
        return ScanoutPlacement(x: rect.x, y: rect.y, width: rect.width, height: rect.height, pitch: pitch)
    }
}

/// What one picture puts in a scan-out buffer: which part of the frame (its stored pixels), where
/// (in the output's pixels, inside its bounds) and turned how.
public struct ScanoutPiece: Sendable, Equatable {
    public var crop: FrameCrop
    public var destination: PixelRect
    public var turn: Rotation
}

/// Where a `frameWidth` x `frameHeight` frame (stored pixels; `displayWidth` wide once its pixel
/// aspect is applied, turned by `frameRotation`) goes in `bounds` of an output turned clockwise by
/// `displayRotation`, placed by `gravity`; on a wall, the part of it `wall.window` shows of the
/// picture placed in `wall.region`. The same placement as the player layer's (`wallPiece`): a
/// single screen is a wall whose window and region are the whole (unturned) screen. nil when
/// nothing of the picture is visible.
public func scanoutPiece(frameWidth: Int, frameHeight: Int, displayWidth: Int, frameRotation: Rotation,
                         displayRotation: Rotation, gravity: VideoGravity, bounds: PixelRect,
                         wall: WallPlacement?) -> ScanoutPiece? {
    guard frameWidth > 0, frameHeight > 0, bounds.width > 0, bounds.height > 0 else { return nil }
    let screen = displayRotation.swapsAxes ? PixelRect(x: 0, y: 0, width: bounds.height, height: bounds.width)
                                           : PixelRect(x: 0, y: 0, width: bounds.width, height: bounds.height)
    let placement = wall ?? WallPlacement(window: screen, region: screen)
    guard let piece = wallPiece(placement, bounds: bounds, displayRotation: displayRotation, contentWidth: displayWidth,
                                contentHeight: frameHeight, gravity: gravity, contentRotation: frameRotation) else { return nil }
    let s = piece.source
    // The source rectangle is in 0...1 of the frame; clamped before the conversion, as the
    // frame's sizes and aspect come from the file.
    func pixel(_ v: Double, of size: Int) -> Int { v.isFinite ? Int((min(max(v, 0), 1) * Double(size)).rounded()) : 0 }
    let x0 = pixel(s.x0, of: frameWidth), x1 = pixel(s.x1, of: frameWidth)
    let y0 = pixel(s.y0, of: frameHeight), y1 = pixel(s.y1, of: frameHeight)
    let cx0 = max(0, min(frameWidth - 1, x0)), cy0 = max(0, min(frameHeight - 1, y0))
    let crop = FrameCrop(x: cx0, y: cy0, width: max(1, min(frameWidth, x1) - cx0), height: max(1, min(frameHeight, y1) - cy0))
    return ScanoutPiece(crop: crop, destination: piece.destination, turn: piece.turn)
}
