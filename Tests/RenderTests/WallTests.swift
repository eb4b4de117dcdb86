import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport

@Suite struct WallPieceTests {
    let canvas = PixelRect(x: 0, y: 0, width: 656, height: 376)

    @Test func aSpanIsCutAtTheWindowsAndTheBezelsAreNotShown() throws {
        // A 656x376 picture on a 656x376 canvas; the right output's window starts after a 16 px bezel.
        let window = PixelRect(x: 336, y: 0, width: 320, height: 180)
        let piece = try #require(wallPiece(WallPlacement(window: window, region: canvas), bounds: PixelRect(x: 0, y: 0, width: 320, height: 180),
                                           contentWidth: 656, contentHeight: 376, gravity: .resizeAspect))
        #expect(piece.destination == PixelRect(x: 0, y: 0, width: 320, height: 180))
        #expect(abs(piece.source.x0 - 336.0 / 656) < 1e-12 && piece.source.x1 == 1)
        #expect(piece.source.y0 == 0 && abs(piece.source.y1 - 180.0 / 376) < 1e-12)
    }

    @Test func letterboxingAndRegionsOutsideTheWindow() throws {
        let bounds = PixelRect(x: 0, y: 0, width: 320, height: 180)
        // A 4:3 picture in a 400x200 region: 267x200 centred at x 67 (videoRect's rounding).
        let region = PixelRect(x: 0, y: 0, width: 400, height: 200)
        let left = try #require(wallPiece(WallPlacement(window: PixelRect(x: 0, y: 0, width: 320, height: 180), region: region),
                                          bounds: bounds, contentWidth: 160, contentHeight: 120, gravity: .resizeAspect))
        #expect(left.pictureOnCanvas == PixelRect(x: 67, y: 0, width: 266, height: 200))
        #expect(left.destination == PixelRect(x: 67, y: 0, width: 253, height: 180))
        // The output to the right sees 333 - 336 < 0: none of it.
        #expect(wallPiece(WallPlacement(window: PixelRect(x: 336, y: 0, width: 320, height: 180), region: region), bounds: bounds,
                          contentWidth: 160, contentHeight: 120, gravity: .resizeAspect) == nil)
    }

    @Test func aPortraitScreenTurnsItsWindow() throws {
        // A window 180 wide and 320 tall on the canvas, on a screen turned clockwise: its pixels
        // are 320x180. The window's top-left corner lands at the top right.
        let window = PixelRect(x: 100, y: 0, width: 180, height: 320)
        let region = PixelRect(x: 100, y: 0, width: 90, height: 160)  // the window's top-left quarter
        let piece = try #require(wallPiece(WallPlacement(window: window, region: region), bounds: PixelRect(x: 0, y: 0, width: 320, height: 180),
                                           displayRotation: .clockwise90, contentWidth: 90, contentHeight: 160, gravity: .resize))
        #expect(piece.destination == PixelRect(x: 160, y: 0, width: 160, height: 90))
        #expect(piece.source == .full)
        #expect(piece.turn == .clockwise90)
    }
}

/// A 2x2 wall of headless outputs, 320x180 each with 16 px bezels, on a 656x376 canvas: each
/// output's screenshot must be its part of the canvas as one screen of the canvas's size draws it.
@Suite(.serialized) struct WallRenderingTests {
    static let canvas = PixelRect(x: 0, y: 0, width: 656, height: 376)
    static let windows = [PixelRect(x: 0, y: 0, width: 320, height: 180), PixelRect(x: 336, y: 0, width: 320, height: 180),
                          PixelRect(x: 0, y: 196, width: 320, height: 180), PixelRect(x: 336, y: 196, width: 320, height: 180)]
    static let mode60 = RefreshRate(numerator: 60)

    /// A lossless 4:4:4 clip of one frame: red and green saw-tooth ramps of 8 levels per pixel
    /// (a one-pixel slip shows) and blue patches; `tint` makes each clip of a mosaic distinct.
    static func picture(_ width: Int, _ height: Int, tint: Int = 0) throws -> VideoFrame {
        let path = try TestMedia.make("wall-\(width)x\(height)-\(tint).mp4", [
            "-f", "lavfi", "-i", "color=c=black:size=\(width)x\(height):rate=10",
            "-vf", "format=gbrp,geq=r='mod(X*8+\(tint),256)':g='mod(Y*8+\(tint * 3),256)':b='mod(floor(X/41)*64+floor(Y/47)*32+\(tint * 5),256)',format=yuv444p",
            "-frames:v", "1", "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv444p", "-f", "mp4",
        ])
        let decoder = try VideoDecoder(path: path)
        return try #require(try decoder.nextFrame())
    }

    /// Whether each pixel of `shot` (the output with `window`, turned by `rotation`) is the
    /// reference's pixel at its canvas position, or one of its neighbours, within 4/255. Returns
    /// the pixels that are not, and the largest difference at the exact position.
    static func compare(_ shot: RGBAImage, _ reference: RGBAImage, window: PixelRect, rotation: Rotation = .none)
        -> (misses: Int, exactMax: Int) {
        var misses = 0, exactMax = 0
        for fy in 0..<shot.height {
            for fx in 0..<shot.width {
                // The window point this framebuffer pixel shows (the inverse of the screen's turn).
                let (wx, wy): (Int, Int)
                switch rotation {
                case .none: (wx, wy) = (fx, fy)
                case .clockwise90: (wx, wy) = (fy, window.height - 1 - fx)
                case .upsideDown: (wx, wy) = (window.width - 1 - fx, window.height - 1 - fy)
                case .clockwise270: (wx, wy) = (window.width - 1 - fy, fx)
                }
                let p = shot.pixel(x: fx, y: fy)
                func diff(_ x: Int, _ y: Int) -> Int {
                    let q = reference.pixel(x: x, y: y)
                    return max(abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)))
                }
                let cx = window.x + wx, cy = window.y + wy
                let exact = diff(cx, cy)
                exactMax = max(exactMax, exact)
                if exact <= 4 { continue }
                var near = false
                for dy in -1...1 {
                    for dx in -1...1 where (0..<reference.width).contains(cx + dx) && (0..<reference.height).contains(cy + dy) {
                        if diff(cx + dx, cy + dy) <= 4 { near = true }
                    }
                }
                if !near { misses += 1 }
            }
        }
        return (misses, exactMax)
    }

    static func output(_ width: Int, _ height: Int) throws -> HeadlessOutput {
        try HeadlessOutput(name: "wall", mode: DisplayMode(width: width, height: height, refresh: mode60), clock: .virtual,
                           background: RGBColor(red: 20, green: 40, blue: 60))
    }

    @Test func aSpanShowsEachOutputItsPartOfTheCanvas() throws {
        let frame = try Self.picture(656, 376)
        // The reference: one screen the size of the canvas. (One GL context at a time.)
        let reference: RGBAImage = try {
            let screen = try Self.output(656, 376)
            try screen.draw([frame])
            return try screen.screenshot()
        }()
        // The reference is the test picture (a check on the picture itself): the ramps at a few points.
        for (x, y) in [(5, 7), (100, 50), (400, 300), (650, 370)] {
            let p = reference.pixel(x: x, y: y)
            #expect(abs(Int(p.r) - (x * 8 % 256)) <= 6 && abs(Int(p.g) - (y * 8 % 256)) <= 6, "reference at \(x),\(y): \(p)")
        }
        // The bottom-right screen is a portrait one turned clockwise, showing the same window.
        for (i, window) in Self.windows.enumerated() {
            let rotation: Rotation = i == 3 ? .clockwise90 : .none
            let shot: RGBAImage = try {
                let screen = rotation.swapsAxes ? try Self.output(window.height, window.width) : try Self.output(window.width, window.height)
                screen.layer.rotation = rotation
                screen.layer.wallPlacement = WallPlacement(window: window, region: Self.canvas)
                try screen.draw([frame])
                return try screen.screenshot()
            }()
            let result = Self.compare(shot, reference, window: window, rotation: rotation)
            #expect(result.misses == 0, "output \(i) (\(window), rotation \(rotation)): \(result.misses) pixels not the canvas's, largest difference \(result.exactMax)")
            if i == 0 {
                // The comparison can fail: the same screenshot is not the canvas 2 px to the side.
                let slipped = PixelRect(x: window.x + 2, y: window.y, width: window.width, height: window.height)
                #expect(Self.compare(shot, reference, window: slipped).misses > 1000)
            }
        }
    }

    @Test func aMosaicShowsEachRegionsClipAcrossTheOutputs() throws {
        // Four regions that cross the outputs and the bezels, each its own clip and scale:
        // letterboxed 4:3, 2x, 1:1, 2x.
        let regions = [(PixelRect(x: 0, y: 0, width: 400, height: 200), try Self.picture(160, 120, tint: 11)),
                       (PixelRect(x: 400, y: 0, width: 256, height: 200), try Self.picture(128, 100, tint: 23)),
                       (PixelRect(x: 0, y: 200, width: 300, height: 176), try Self.picture(300, 176, tint: 37)),
                       (PixelRect(x: 300, y: 200, width: 356, height: 176), try Self.picture(178, 88, tint: 51))]
        let reference: RGBAImage = try {
            let screen = try Self.output(656, 376)
            try screen.draw([nil])  // binds the target, clears to the background
            for (rect, frame) in regions { try screen.layer.draw(frame, bounds: rect, targetHeight: 376) }
            return try screen.screenshot()
        }()
        // Every region has its clip in the reference: a pixel of each, tinted as its clip.
        for (rect, _) in regions {
            let p = reference.pixel(x: rect.x + rect.width / 2, y: rect.y + rect.height / 2)
            #expect(!(p.r == 20 && p.g == 40 && p.b == 60), "region \(rect) shows only the background")
        }
        let pieces = regions.map { PlayerLayer.WallRegionFrame(frame: $0.1, region: $0.0) }
        for (i, window) in Self.windows.enumerated() {
            let shot: RGBAImage = try {
                let screen = try Self.output(window.width, window.height)
                try screen.draw(regions: pieces, window: window)
                return try screen.screenshot()
            }()
            let result = Self.compare(shot, reference, window: window)
            #expect(result.misses == 0, "output \(i) (\(window)): \(result.misses) pixels not the canvas's, largest difference \(result.exactMax)")
        }
    }

    /// Without the wall placement the layer draws as before: the whole picture in the bounds.
    @Test func withoutAPlacementTheWholePictureIsDrawn() throws {
        let frame = try Self.picture(656, 376)
        let screen = try Self.output(328, 188)
        try screen.draw([frame])
        #expect(screen.layer.videoRect == PixelRect(x: 0, y: 0, width: 328, height: 188))
        screen.layer.wallPlacement = WallPlacement(window: Self.windows[1], region: Self.canvas)
        try screen.draw([frame])
        #expect(screen.layer.videoRect == PixelRect(x: 0, y: 0, width: 328, height: 188))
        screen.layer.wallPlacement = WallPlacement(window: PixelRect(x: 336, y: 0, width: 656, height: 376), region: Self.canvas)
        try screen.draw([frame])
        #expect(screen.layer.videoRect == PixelRect(x: 0, y: 0, width: 160, height: 188))
    }
}
