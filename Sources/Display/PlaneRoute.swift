import Foundation
import Media
import Playback
import Render

/// A bad `IN_FORMATS` blob: what in it is wrong.
public struct PlaneBlobError: LocalizedError, CustomStringConvertible, Sendable, Equatable {
    public var errorDescription: String? { description }
    public let description: String
}

/// DRM format modifiers the planes path knows.
public enum DRMModifier {
    /// `DRM_FORMAT_MOD_LINEAR`: rows one after the other (dumb buffers are).
    public static let linear: UInt64 = 0
    /// `DRM_FORMAT_MOD_INVALID`: none given (the driver's implicit layout).
    public static let invalid: UInt64 = 0x00ff_ffff_ffff_ffff
}

/// A plane's formats and the modifiers it takes with each, read from its `IN_FORMATS` blob (the
/// kernel's `drm_format_modifier_blob`: a header of six 32-bit words (version, flags, format
/// count and offset, modifier count and offset), the formats, then 24-byte entries of a 64-bit
/// mask of formats, the index the mask starts at, padding and the 64-bit modifier), in the
/// machine's byte order.
public struct PlaneFormatModifiers: Sendable, Equatable {
    public var formats: [UInt32]
    public var modifiers: [UInt32: Set<UInt64>]

    public init(formats: [UInt32], modifiers: [UInt32: Set<UInt64>]) {
        self.formats = formats
        self.modifiers = modifiers
    }

    /// Parses a blob's bytes; every count and offset is checked against its length.
    public init(blob: [UInt8]) throws(PlaneBlobError) {
        func word32(_ at: Int) -> UInt32 { blob.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
        func word64(_ at: Int) -> UInt64 { blob.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) } }
        guard blob.count >= 24 else { throw PlaneBlobError(description: "IN_FORMATS blob of \(blob.count) bytes is shorter than its 24-byte header") }
        let version = word32(0)
        guard version >= 1 else { throw PlaneBlobError(description: "IN_FORMATS blob version \(version) (1 expected)") }
        let formatCount = Int(word32(8)), formatOffset = Int(word32(12))
        let modifierCount = Int(word32(16)), modifierOffset = Int(word32(20))
        // Int is 64 bits: 32-bit counts times 24 cannot overflow.
        guard formatOffset + formatCount * 4 <= blob.count else {
            throw PlaneBlobError(description: "IN_FORMATS lists \(formatCount) formats at byte \(formatOffset), past its \(blob.count) bytes")
        }
        guard modifierOffset + modifierCount * 24 <= blob.count else {
            throw PlaneBlobError(description: "IN_FORMATS lists \(modifierCount) modifiers at byte \(modifierOffset), past its \(blob.count) bytes")
        }
        let formats = (0..<formatCount).map { word32(formatOffset + $0 * 4) }
        var modifiers: [UInt32: Set<UInt64>] = [:]
        for entry in 0..<modifierCount {
            let at = modifierOffset + entry * 24
            let mask = word64(at), start = Int(word32(at + 8)), modifier = word64(at + 16)
            for bit in 0..<64 where mask & (1 << UInt64(bit)) != 0 {
                guard start + bit < formatCount else {
                    throw PlaneBlobError(description: "IN_FORMATS modifier \(entry) names format \(start + bit) of \(formatCount)")
                }
                modifiers[formats[start + bit], default: []].insert(modifier)
            }
        }
        self.formats = formats
        self.modifiers = modifiers
    }
}

/// A KMS plane as the planes output sees it when it chooses how pictures reach the display.
public struct PlaneDescription: Sendable, Equatable {
    public enum Kind: String, Sendable { case primary, overlay, cursor }
    public var id: UInt32
    public var kind: Kind
    /// The formats the plane lists (`drmModePlane`).
    public var formats: [UInt32]
    /// The modifiers it takes with each format (`IN_FORMATS`); nil when it has no such blob: then
    /// only linear (and implicit) buffers.
    public var modifiers: [UInt32: Set<UInt64>]?
    /// The names of its properties.
    public var properties: Set<String>
    /// The `rotation` property's values by name ("rotate-0" ... "reflect-y"), as masks.
    public var rotations: [String: UInt64]
    /// `COLOR_ENCODING`'s and `COLOR_RANGE`'s values by name.
    public var colorEncodings: [String: UInt64]
    public var colorRanges: [String: UInt64]

    public init(id: UInt32, kind: Kind, formats: [UInt32], modifiers: [UInt32: Set<UInt64>]? = nil, properties: Set<String> = [],
                rotations: [String: UInt64] = [:], colorEncodings: [String: UInt64] = [:], colorRanges: [String: UInt64] = [:]) {
        self.id = id
        self.kind = kind
        self.formats = formats
        self.modifiers = modifiers
        self.properties = properties
        self.rotations = rotations
        self.colorEncodings = colorEncodings
        self.colorRanges = colorRanges
    }

    /// Whether a buffer of `fourcc` laid out as `modifier` can go on the plane.
    public func lists(_ fourcc: UInt32, modifier: UInt64) -> Bool {
        guard formats.contains(fourcc) else { return false }
        // No modifier given: the driver's implicit layout for the format, which it lists.
        if modifier == DRMModifier.invalid { return true }
        guard let modifiers else { return modifier == DRMModifier.linear }
        return modifiers[fourcc]?.contains(modifier) ?? false
    }

    /// "plane 31 (primary)".
    public var name: String { "plane \(id) (\(kind.rawValue))" }
    /// The formats as fourcc names.
    public var formatNames: String { formats.isEmpty ? "nothing" : formats.map(DRMPrimeDescriptor.fourccName).joined(separator: ", ") }
}

/// The `rotation` property value's name for a clockwise turn: KMS turns counter-clockwise, so a
/// clockwise quarter turn is `rotate-270`.
public func kmsRotationName(_ turn: Rotation) -> String {
    switch turn {
    case .none: "rotate-0"
    case .clockwise90: "rotate-270"
    case .upsideDown: "rotate-180"
    case .clockwise270: "rotate-90"
    }
}

/// What besides the planes decides the route.
public struct PlaneRouteConditions: Sendable, Equatable {
    /// Atomic modesetting is in use (else the legacy API).
    public var atomic: Bool
    /// The display's clockwise turn (`display.rotation`).
    public var displayRotation: Rotation
    /// Pictures shown at once (a mosaic's regions).
    public var pictures: Int
    /// What draws over or between the pictures (overlays, transitions), when configured.
    public var blending: String?
    public init(atomic: Bool, displayRotation: Rotation = .none, pictures: Int = 1, blending: String? = nil) {
        self.atomic = atomic
        self.displayRotation = displayRotation
        self.pictures = pictures
        self.blending = blending
    }
}

/// A plane that can show Y'CbCr pictures itself, and how it is set up.
public struct YUVPlaneSetup: Sendable, Equatable {
    public var plane: PlaneDescription
    /// The formats it lists linear (what software frames are copied into), best first.
    public var formats: [YUVScanoutFormat]
    /// The `rotation` value for the display's turn (nil: the plane has no such property and the
    /// display is not turned).
    public var rotation: UInt64?
}

/// How the planes output shows pictures: chosen once per output (at its first connection),
/// through this enum.
public enum PlaneRoute: Sendable, Equatable {
    /// On a plane that lists Y'CbCr formats: a decoder's DMA-BUF frames attached as they are where
    /// the plane lists their format and modifier (path 1), software frames copied (or converted by
    /// swscale) into a Y'CbCr dumb buffer (path 2); the plane scales and converts.
    case yuvPlane(YUVPlaneSetup)
    /// swscale converts and scales each picture into XRGB8888 dumb buffers on the primary plane
    /// (path 3).
    case xrgb

    public var name: String {
        switch self {
        case .yuvPlane(let setup): "yuv-plane \(setup.plane.id)"
        case .xrgb: "xrgb"
        }
    }
}

/// The route and why.
public struct PlaneRouteChoice: Sendable, Equatable {
    public var route: PlaneRoute
    public var reason: String
}

/// Chooses how pictures reach the display from the planes that can show on its CRTC (`planes`:
/// primary, overlays, cursors) and `conditions`. An overlay plane qualifies when it lists NV12,
/// YU12 or P010 linear and has the `rotation` value the display's turn needs (where it is
/// turned); the primary plane keeps the background (and pictures the overlay cannot take) in
/// XRGB8888, so it is never the Y'CbCr plane. Otherwise, and on legacy drivers, with
/// overlays/transitions or a mosaic, it is XRGB8888 (path 3); the reason names what was missing.
public func choosePlaneRoute(planes: [PlaneDescription], conditions: PlaneRouteConditions) -> PlaneRouteChoice {
    func xrgb(_ why: String) -> PlaneRouteChoice {
        PlaneRouteChoice(route: .xrgb, reason: "\(why): swscale into XRGB8888 dumb buffers on the primary plane")
    }
    guard conditions.atomic else {
        return xrgb("legacy (non-atomic) KMS: drmModeSetPlane gives no flip event and cannot set a plane's colour properties with its picture")
    }
    if let blending = conditions.blending {
        return xrgb("\(blending) are drawn into the picture, which a Y'CbCr plane shows unblended")
    }
    if conditions.pictures > 1 {
        return xrgb("a mosaic of \(conditions.pictures) pictures needs one buffer that holds them all")
    }
    var lacking: [String] = []
    for plane in planes where plane.kind == .overlay {
        let formats = YUVScanoutFormat.allCases.filter { plane.lists($0.fourcc, modifier: DRMModifier.linear) }
        guard !formats.isEmpty else {
            lacking.append("\(plane.name) lists \(plane.formatNames): none of NV12, YU12, P010 with the linear modifier")
            continue
        }
        let wanted = kmsRotationName(conditions.displayRotation)
        let rotation = plane.rotations[wanted]
        if conditions.displayRotation != .none && rotation == nil {
            lacking.append("\(plane.name) has no \(wanted) rotation for the display's \(conditions.displayRotation.rawValue)° turn")
            continue
        }
        let colour = ["COLOR_ENCODING", "COLOR_RANGE"].filter { plane.properties.contains($0) }
        return PlaneRouteChoice(route: .yuvPlane(YUVPlaneSetup(plane: plane, formats: formats, rotation: rotation)),
                                reason: "\(plane.name) lists \(formats.map(\.fourccName).joined(separator: ", ")) linear: software frames copied into "
                                    + "Y'CbCr dumb buffers, DMA-BUF frames attached where it lists their format and modifier; the plane scales"
                                    + (colour.isEmpty ? " (no colour properties: the driver's default matrix and range)" : " and takes \(colour.joined(separator: ", "))"))
    }
    if lacking.isEmpty { lacking.append("the CRTC has no overlay plane") }
    let primaries = planes.filter { $0.kind == .primary }.map { "\($0.name) lists \($0.formatNames) and keeps the background" }
    let cursors = planes.filter { $0.kind == .cursor }.count
    let others = primaries + (cursors > 0 ? ["\(cursors) cursor plane\(cursors == 1 ? "" : "s") not used"] : [])
    return xrgb("no overlay plane can show Y'CbCr: \(lacking.joined(separator: "; "))" + (others.isEmpty ? "" : " (\(others.joined(separator: "; ")))"))
}

/// How one picture goes on a Y'CbCr plane route.
public enum PlaneFrameRoute: Sendable, Equatable {
    /// The DMA-BUF frame's own buffers as a framebuffer (path 1).
    case attach(fourcc: UInt32, modifier: UInt64)
    /// The software frame's planes copied into a dumb buffer of the same format (path 2).
    case copy(YUVScanoutFormat)
    /// The software frame converted by swscale into a dumb buffer of this format (path 2).
    case convert(YUVScanoutFormat)
    /// Not on this plane: drawn as on the XRGB route (path 3), for the reason given.
    case xrgb(String)
}

/// The route of one frame of format `format` (a DMA-BUF frame: its descriptor's single layer's
/// fourcc and modifier, `prime`), turned clockwise by `turn` in all (frame and display), on `setup`.
public func routeFrame(format: PixelFormat, prime: (fourcc: UInt32, modifier: UInt64, layers: Int)?, turn: Rotation,
                       setup: YUVPlaneSetup) -> PlaneFrameRoute {
    if turn != .none && setup.plane.rotations[kmsRotationName(turn)] == nil {
        return .xrgb("\(setup.plane.name) has no \(kmsRotationName(turn)) rotation for the picture's \(turn.rawValue)° turn")
    }
    if let prime, prime.layers == 1, setup.plane.lists(prime.fourcc, modifier: prime.modifier) {
        return .attach(fourcc: prime.fourcc, modifier: prime.modifier)
    }
    // A DMA-BUF frame the plane cannot take is copied to memory first and routed as software.
    if let exact = YUVScanoutFormat(exactly: format), setup.formats.contains(exact) { return .copy(exact) }
    guard format.isYCbCr, let first = setup.formats.first else {
        return .xrgb("\(format.rawValue) frames are not Y'CbCr")
    }
    let tenBit = format.bitsPerSample > 8
    let target = tenBit && setup.formats.contains(.p010) ? .p010 : setup.formats.first { $0 != .p010 } ?? first
    return .convert(target)
}

/// A plane's source (16.16 fixed point, in the framebuffer) and destination (CRTC pixels).
public struct PlaneRectangles: Sendable, Equatable {
    public var srcX: UInt64, srcY: UInt64, srcW: UInt64, srcH: UInt64
    public var crtcX: Int32, crtcY: Int32, crtcW: UInt32, crtcH: UInt32

    /// `SRC_*` and `CRTC_*` by property name (`CRTC_X`/`Y` as the kernel's signed 64-bit values).
    public var properties: [(name: String, value: UInt64)] {
        [("SRC_X", srcX), ("SRC_Y", srcY), ("SRC_W", srcW), ("SRC_H", srcH),
         ("CRTC_X", UInt64(bitPattern: Int64(crtcX))), ("CRTC_Y", UInt64(bitPattern: Int64(crtcY))),
         ("CRTC_W", UInt64(crtcW)), ("CRTC_H", UInt64(crtcH))]
    }
}

/// The plane's rectangles for a picture placed as `piece` (`scanoutPiece`: the crop of the frame's
/// stored pixels, widened to whole chroma samples of `format`, and where it goes on the screen).
/// `inBuffer`: the crop was copied to the top left of its own buffer (path 2), so the source
/// starts at 0, 0; else (path 1) the source is the crop inside the frame's buffer. nil when a
/// value is out of the kernel's range.
public func planeRectangles(_ piece: ScanoutPiece, format: PixelFormat, frameWidth: Int, frameHeight: Int,
                            inBuffer: Bool) -> PlaneRectangles? {
    let crop = ScanoutConverter.aligned(piece.crop, format: format, width: frameWidth, height: frameHeight)
    let d = piece.destination
    guard crop.width > 0, crop.height > 0, crop.x >= 0, crop.y >= 0, crop.x + crop.width <= 65535, crop.y + crop.height <= 65535,
          let x = Int32(exactly: d.x), let y = Int32(exactly: d.y), let w = UInt32(exactly: d.width), let h = UInt32(exactly: d.height),
          w > 0, h > 0 else { return nil }
    let (sx, sy) = inBuffer ? (0, 0) : (crop.x, crop.y)
    return PlaneRectangles(srcX: UInt64(sx) << 16, srcY: UInt64(sy) << 16, srcW: UInt64(crop.width) << 16, srcH: UInt64(crop.height) << 16,
                           crtcX: x, crtcY: y, crtcW: w, crtcH: h)
}

/// The values of a plane's `COLOR_ENCODING` and `COLOR_RANGE` for a frame's matrix and range
/// (nil where the plane lacks the property or the value), and what could not be said.
public func planeColorProperties(matrix: ColorMatrix, range: ColorRange, plane: PlaneDescription)
    -> (encoding: UInt64?, range: UInt64?, missing: [String]) {
    let encodingName = switch matrix {
    case .bt601: "ITU-R BT.601 YCbCr"
    case .bt709: "ITU-R BT.709 YCbCr"
    case .bt2020: "ITU-R BT.2020 YCbCr"
    }
    let rangeName = range == .full ? "YCbCr full range" : "YCbCr limited range"
    var missing: [String] = []
    let encoding = plane.colorEncodings[encodingName]
    if encoding == nil {
        missing.append(plane.properties.contains("COLOR_ENCODING") ? "COLOR_ENCODING has no \(encodingName)" : "no COLOR_ENCODING")
    }
    let value = plane.colorRanges[rangeName]
    if value == nil {
        missing.append(plane.properties.contains("COLOR_RANGE") ? "COLOR_RANGE has no \(rangeName)" : "no COLOR_RANGE")
    }
    return (encoding, value, missing)
}
