import Media
import Playback
import Render

/// The KMS planes output's picture path: places each frame as the player layer would (gravity,
/// the frame's and the display's rotation, a wall's window, a mosaic's regions) and has swscale
/// convert and scale it in one pass straight into the mapped dumb buffer shown next. No GL.
///
/// The background is painted only where a buffer's layout changed (a new picture size, gravity,
/// placement or colour): pictures of one layout overwrite the same rectangles. Used from the
/// presentation thread only.
public final class ScanoutLayer: PictureLayer {
    public var gravity: VideoGravity = .resizeAspect
    public var rotation: Rotation = .none
    public var background: RGBColor = .black
    public var wallPlacement: WallPlacement?
    public var mosaicRegions: [(region: PixelRect, gravity: VideoGravity?)] = []
    /// Blended into the buffer in software after the picture is written, each over its own
    /// rectangle only.
    public var overlays: [OverlayPicture] = []
    public private(set) var videoRect: PixelRect?
    public private(set) var framesNotDrawn = 0
    /// Pictures drawn.
    public private(set) var picturesDrawn = 0
    private let converter = ScanoutConverter()

    public init() {}

    /// The pieces `frames` make in `bounds` (one frame per mosaic region, else the first).
    func pieces(of frames: [VideoFrame?], bounds: PixelRect) -> [(frame: VideoFrame, piece: ScanoutPiece)] {
        var placed: [(VideoFrame?, WallPlacement?, VideoGravity)] = []
        if frames.count > 1, let window = wallPlacement?.window, !mosaicRegions.isEmpty {
            for (frame, region) in zip(frames, mosaicRegions) {
                placed.append((frame, WallPlacement(window: window, region: region.region), region.gravity ?? gravity))
            }
        } else {
            placed.append((frames.first ?? nil, wallPlacement, gravity))
        }
        return placed.compactMap { frame, wall, gravity in
            guard let frame else { return nil }
            return scanoutPiece(frameWidth: frame.width, frameHeight: frame.height, displayWidth: frame.displayWidth,
                                frameRotation: frame.rotation, displayRotation: rotation, gravity: gravity,
                                bounds: bounds, wall: wall).map { (frame, $0) }
        }
    }

    /// Draws `frames` into `buffer`, whose whole is `bounds` of the output.
    func draw(_ frames: [VideoFrame?], into buffer: DumbBuffer, bounds: PixelRect) throws {
        var memoryFrames: [VideoFrame?] = []
        for frame in frames {
            guard let frame, frame.drmPrime != nil else {
                memoryFrames.append(frame)
                continue
            }
            do {
                memoryFrames.append(try frame.copiedToMemory())
            } catch {
                framesNotDrawn += 1  // the background where it would have been
                memoryFrames.append(nil)
            }
        }
        let pieces = pieces(of: memoryFrames, bounds: bounds)
        let layout = pieces.map(\.piece.destination)
        if buffer.painted.map({ $0.pieces != layout || $0.background != background }) ?? true {
            buffer.fill(PixelRect(x: 0, y: 0, width: buffer.layout.width, height: buffer.layout.height), with: background)
            buffer.painted = (layout, background)
        } else {
            // Where overlays were blended into this buffer before: the background again (the
            // picture then overwrites its part), so they never blend over themselves.
            for rect in buffer.overlaid { buffer.fill(rect, with: background) }
        }
        buffer.overlaid = []
        for (frame, piece) in pieces {
            guard let placement = buffer.layout.placement(of: piece.destination) else { continue }
            do {
                try buffer.withBytes { bytes in
                    try converter.convert(frame, crop: piece.crop, turn: piece.turn, into: bytes, placement: placement)
                }
            } catch {
                buffer.painted = nil  // partly written: paint it all next time
                throw error
            }
        }
        blendOverlays(into: buffer)
        videoRect = wallPlacement == nil ? pieces.last?.piece.destination : nil
        picturesDrawn += pieces.isEmpty ? 0 : 1
    }

    /// Blends `overlays` over the picture in `buffer`, remembering where.
    func blendOverlays(into buffer: DumbBuffer) {
        let (width, height, pitch) = (buffer.layout.width, buffer.layout.height, buffer.layout.pitch)
        for overlay in overlays {
            guard let rect = intersection(overlay.rect, PixelRect(x: 0, y: 0, width: width, height: height)) else { continue }
            buffer.withBytes { overlay.blend(intoXRGB: $0, width: width, height: height, pitch: pitch) }
            buffer.overlaid.append(rect)
        }
    }
}
