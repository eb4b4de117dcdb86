import Media

/// A rectangle in a frame's own texture coordinates: 0...1 across its stored (unturned) width and
/// height, y down like its rows.
public struct TextureRect: Sendable, Equatable, CustomStringConvertible {
    public var x0: Double
    public var y0: Double
    public var x1: Double
    public var y1: Double
    public init(x0: Double, y0: Double, x1: Double, y1: Double) {
        self.x0 = x0
        self.y0 = y0
        self.x1 = x1
        self.y1 = y1
    }
    /// The whole frame.
    public static let full = TextureRect(x0: 0, y0: 0, x1: 1, y1: 1)
    public var description: String { "(\(x0), \(y0))-(\(x1), \(y1))" }
}

/// An output seen as a window onto a wall's canvas: the output shows `window` (its rectangle on the
/// canvas, in canvas pixels) and the picture is placed by gravity inside `region` (a rectangle of
/// the canvas). What falls outside the window, such as the canvas behind a bezel, is not shown.
public struct WallPlacement: Sendable, Equatable {
    public var window: PixelRect
    public var region: PixelRect
    public init(window: PixelRect, region: PixelRect) {
        self.window = window
        self.region = region
    }
}

/// The part of a picture one output shows.
public struct WallPiece: Sendable, Equatable {
    /// Where the part goes, in the output's pixels (top-left origin), inside its bounds.
    public var destination: PixelRect
    /// Which part of the frame it is, in the frame's own texture coordinates.
    public var source: TextureRect
    /// The turn from the frame's texture to the output: the frame's rotation, then the display's.
    public var turn: Rotation
    /// The whole picture's rectangle on the canvas (past the region with `.resizeAspectFill`).
    public var pictureOnCanvas: PixelRect
}

/// What an output shows of a `contentWidth` x `contentHeight` picture (turned by
/// `contentRotation`) placed by `gravity` in `placement.region` of the canvas, when the output shows
/// `placement.window` of the canvas in `bounds` of its own pixels, turned clockwise by
/// `displayRotation` (a portrait screen: its window is taller than wide, its pixels wider than
/// tall). nil when none of the picture falls in the window.
///
/// The picture's rectangle on the canvas is `videoRect` of the region, exactly as a single screen
/// of the canvas's size would place it, so every output samples the frame at the canvas pixels it
/// covers. A window whose size (once turned) differs from `bounds` is scaled to it.
public func wallPiece(_ placement: WallPlacement, bounds: PixelRect, displayRotation: Rotation = .none,
                      contentWidth: Int, contentHeight: Int, gravity: VideoGravity,
                      contentRotation: Rotation = .none) -> WallPiece? {
    let window = placement.window, region = placement.region
    guard contentWidth > 0, contentHeight > 0, window.width > 0, window.height > 0,
          bounds.width > 0, bounds.height > 0 else { return nil }
    let picture = videoRect(contentWidth: contentWidth, contentHeight: contentHeight, bounds: region,
                            gravity: gravity, rotation: contentRotation)
    guard picture.width > 0, picture.height > 0,
          let inRegion = intersection(picture, region), let visible = intersection(inRegion, window) else { return nil }

    // The visible part in the turned picture's coordinates (0...1, y down), then in the frame's.
    let s0x = Double(visible.x - picture.x) / Double(picture.width)
    let s0y = Double(visible.y - picture.y) / Double(picture.height)
    let s1x = Double(visible.x + visible.width - picture.x) / Double(picture.width)
    let s1y = Double(visible.y + visible.height - picture.y) / Double(picture.height)
    let a = textureCoordinate(s0x, s0y, contentRotation), b = textureCoordinate(s1x, s1y, contentRotation)
    let source = TextureRect(x0: min(a.0, b.0), y0: min(a.1, b.1), x1: max(a.0, b.0), y1: max(a.1, b.1))

    // Into the window's own coordinates, turned with the screen, then scaled to the bounds.
    let local = PixelRect(x: visible.x - window.x, y: visible.y - window.y, width: visible.width, height: visible.height)
    let turned = turn(local, within: window.width, window.height, by: displayRotation)
    let (turnedWidth, turnedHeight) = displayRotation.swapsAxes ? (window.height, window.width) : (window.width, window.height)
    let sx = Double(bounds.width) / Double(turnedWidth), sy = Double(bounds.height) / Double(turnedHeight)
    let x0 = Int((Double(turned.x) * sx).rounded()), x1 = Int((Double(turned.x + turned.width) * sx).rounded())
    let y0 = Int((Double(turned.y) * sy).rounded()), y1 = Int((Double(turned.y + turned.height) * sy).rounded())
    guard x1 > x0, y1 > y0 else { return nil }
    return WallPiece(destination: PixelRect(x: bounds.x + x0, y: bounds.y + y0, width: x1 - x0, height: y1 - y0),
                     source: source, turn: contentRotation + displayRotation, pictureOnCanvas: picture)
}

/// The overlap of two rectangles; nil when they do not overlap.
public func intersection(_ a: PixelRect, _ b: PixelRect) -> PixelRect? {
    let x0 = max(a.x, b.x), y0 = max(a.y, b.y)
    let x1 = min(a.x + a.width, b.x + b.width), y1 = min(a.y + a.height, b.y + b.height)
    guard x1 > x0, y1 > y0 else { return nil }
    return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
}

/// Where point (x, y) of a picture turned clockwise by `rotation` is in the unturned frame
/// (the same mapping as the layer's vertex shader).
func textureCoordinate(_ x: Double, _ y: Double, _ rotation: Rotation) -> (Double, Double) {
    switch rotation {
    case .none: (x, y)
    case .clockwise90: (y, 1 - x)
    case .upsideDown: (1 - x, 1 - y)
    case .clockwise270: (1 - y, x)
    }
}

/// `rect` inside a `width` x `height` area, once the area is turned clockwise by `rotation`.
func turn(_ rect: PixelRect, within width: Int, _ height: Int, by rotation: Rotation) -> PixelRect {
    switch rotation {
    case .none: rect
    case .clockwise90: PixelRect(x: height - rect.y - rect.height, y: rect.x, width: rect.height, height: rect.width)
    case .upsideDown: PixelRect(x: width - rect.x - rect.width, y: height - rect.y - rect.height, width: rect.width, height: rect.height)
    case .clockwise270: PixelRect(x: rect.y, y: width - rect.x - rect.width, width: rect.height, height: rect.width)
    }
}
