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
    /// A transition's pictures are converted here and blended into the buffer (its size).
    private var mixScratch: [UInt8] = []
    /// Pictures drawn as a transition's mix.
    public private(set) var mixedDraws = 0

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
    func draw(_ frames: [VideoFrame?], into buffer: XRGBCanvas, bounds: PixelRect, mixes: [FrameMix<VideoFrame>?] = []) throws {
        let memoryFrames = frames.map(inMemory)
        if mixes.contains(where: { $0 != nil }) {
            try drawMixed(memoryFrames, mixes: mixes, into: buffer, bounds: bounds)
            return
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
        videoRect = pieces.last.map { reportedRect($0.frame, $0.piece, bounds: bounds) }
        picturesDrawn += pieces.isEmpty ? 0 : 1
    }

    /// Where the picture is, as the player layer reports it: on one screen the whole placed
    /// picture (under aspect fill partly outside `bounds`); on a wall or mosaic the part drawn.
    private func reportedRect(_ frame: VideoFrame, _ piece: ScanoutPiece, bounds: PixelRect) -> PixelRect {
        guard wallPlacement == nil else { return piece.destination }
        return Render.videoRect(contentWidth: frame.displayWidth, contentHeight: frame.height, bounds: bounds, gravity: gravity,
                                rotation: frame.rotation + rotation)
    }

    /// Blends `overlays` over the picture in `buffer`, remembering where.
    func blendOverlays(into buffer: XRGBCanvas) {
        let (width, height, pitch) = (buffer.layout.width, buffer.layout.height, buffer.layout.pitch)
        for overlay in overlays {
            guard let rect = intersection(overlay.rect, PixelRect(x: 0, y: 0, width: width, height: height)) else { continue }
            buffer.withBytes { overlay.blend(intoXRGB: $0, width: width, height: height, pitch: pitch) }
            buffer.overlaid.append(rect)
        }
    }

    /// A DMA-BUF frame copied to memory (nil, counted, where it cannot be).
    private func inMemory(_ frame: VideoFrame?) -> VideoFrame? {
        guard let frame, frame.drmPrime != nil else { return frame }
        do {
            return try frame.copiedToMemory()
        } catch {
            framesNotDrawn += 1  // the background where it would have been
            return nil
        }
    }

    /// A transition: the buffer is painted with the background, then per lane the other picture
    /// and the lane's own are each converted into the scratch buffer and blended over it with the
    /// alphas that make frameWeight x frame + otherWeight x other + the rest x background.
    private func drawMixed(_ frames: [VideoFrame?], mixes: [FrameMix<VideoFrame>?], into buffer: XRGBCanvas, bounds: PixelRect) throws {
        let whole = PixelRect(x: 0, y: 0, width: buffer.layout.width, height: buffer.layout.height)
        buffer.fill(whole, with: background)
        buffer.painted = nil  // the next picture paints its layout again
        if mixScratch.count != buffer.layout.size { mixScratch = [UInt8](repeating: 0, count: buffer.layout.size) }
        var drawn = false
        for lane in frames.indices {
            let mix = lane < mixes.count ? mixes[lane] : nil
            let alphas = mix?.blendAlphas ?? (other: 0, frame: 1)
            var layers: [(VideoFrame, Float)] = []
            if let other = inMemory(mix?.other), alphas.other > 0 { layers.append((other, alphas.other)) }
            if let frame = frames[lane], alphas.frame > 0 { layers.append((frame, alphas.frame)) }
            for (frame, alpha) in layers {
                // The lane's placement, for this frame's own size.
                var only = [VideoFrame?](repeating: nil, count: frames.count)
                only[lane] = frame
                for (frame, piece) in pieces(of: only, bounds: bounds) {
                    guard let placement = buffer.layout.placement(of: piece.destination) else { continue }
                    if alpha >= 1 {
                        try buffer.withBytes { bytes in
                            try converter.convert(frame, crop: piece.crop, turn: piece.turn, into: bytes, placement: placement)
                        }
                    } else {
                        try mixScratch.withUnsafeMutableBytes { scratch in
                            try converter.convert(frame, crop: piece.crop, turn: piece.turn, into: scratch, placement: placement)
                            buffer.withBytes { bytes in
                                ScanoutConverter.blend(UnsafeRawBufferPointer(scratch), into: bytes, placement: placement, alpha: alpha)
                            }
                        }
                    }
                    videoRect = reportedRect(frame, piece, bounds: bounds)
                    drawn = true
                }
            }
        }
        buffer.overlaid = []
        blendOverlays(into: buffer)
        picturesDrawn += drawn ? 1 : 0
        mixedDraws += 1
    }
}
