import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport

/// 4:3, 16:9 and 9:16 clips (as their frame sizes).
let clipShapes: [(name: String, width: Int, height: Int)] = [("4:3", 640, 480), ("16:9", 1280, 720), ("9:16", 720, 1280)]
let fullHD = PixelRect(x: 0, y: 0, width: 1920, height: 1080)

@Suite struct VideoRectRotationTests {
    /// The ideal (unrounded) rectangle, straight from the definitions.
    static func ideal(_ w: Int, _ h: Int, _ gravity: VideoGravity, _ rotation: Rotation) -> (x0: Double, y0: Double, x1: Double, y1: Double) {
        let (cw, ch) = rotation == .clockwise90 || rotation == .clockwise270 ? (Double(h), Double(w)) : (Double(w), Double(h))
        let sx = 1920 / cw, sy = 1080 / ch
        let (w1, h1): (Double, Double)
        switch gravity {
        case .resize: (w1, h1) = (1920, 1080)
        case .resizeAspect: (w1, h1) = (cw * min(sx, sy), ch * min(sx, sy))
        case .resizeAspectFill: (w1, h1) = (cw * max(sx, sy), ch * max(sx, sy))
        }
        return ((1920 - w1) / 2, (1080 - h1) / 2, (1920 + w1) / 2, (1080 + h1) / 2)
    }

    @Test func everyGravityAndRotationIsExactToAPixel() {
        for clip in clipShapes {
            for gravity in VideoGravity.allCases {
                for rotation in Rotation.allCases {
                    let rect = videoRect(contentWidth: clip.width, contentHeight: clip.height, bounds: fullHD,
                                         gravity: gravity, rotation: rotation)
                    let i = Self.ideal(clip.width, clip.height, gravity, rotation)
                    let edges = [Double(rect.x) - i.x0, Double(rect.y) - i.y0,
                                 Double(rect.x + rect.width) - i.x1, Double(rect.y + rect.height) - i.y1]
                    #expect(edges.allSatisfy { abs($0) <= 0.5 }, "\(clip.name) \(gravity) \(rotation): \(rect) vs \(i)")
                }
            }
        }
    }

    @Test func knownRectanglesOnFullHD() {
        func fit(_ w: Int, _ h: Int, _ r: Rotation) -> PixelRect {
            videoRect(contentWidth: w, contentHeight: h, bounds: fullHD, gravity: .resizeAspect, rotation: r)
        }
        #expect(fit(640, 480, .none) == PixelRect(x: 240, y: 0, width: 1440, height: 1080))
        #expect(fit(640, 480, .clockwise90) == PixelRect(x: 555, y: 0, width: 810, height: 1080))
        #expect(fit(1280, 720, .upsideDown) == fullHD)
        #expect(fit(1280, 720, .clockwise270) == PixelRect(x: 656, y: 0, width: 608, height: 1080))
        #expect(fit(720, 1280, .none) == PixelRect(x: 656, y: 0, width: 608, height: 1080))
        #expect(fit(720, 1280, .clockwise90) == fullHD)
        #expect(videoRect(contentWidth: 720, contentHeight: 1280, bounds: fullHD, gravity: .resizeAspectFill)
            == PixelRect(x: 0, y: -1167, width: 1920, height: 3414))
    }

    @Test func rotationsCombineAndRound() {
        #expect(Rotation.clockwise90 + .clockwise270 == Rotation.none)
        #expect(Rotation.upsideDown + .clockwise270 == .clockwise90)
        #expect(Rotation(degrees: -90) == .clockwise270)
        #expect(Rotation(degrees: 89.7) == .clockwise90)
        #expect(Rotation(degrees: 450) == .clockwise90)
        #expect(Rotation(degrees: .nan) == Rotation.none)
    }
}

@Suite(.serialized) struct PlayerLayerGeometryDrawingTests {
    /// A flat frame of one luma level (full range, neutral chroma).
    static func flat(_ width: Int, _ height: Int, luma: Int = 255, rotation: Rotation = .none) throws -> VideoFrame {
        try VideoFrame(format: .yuv420p, width: width, height: height, colorMatrix: .bt709, colorRange: .full,
                       rotation: rotation) { c, _, _ in c == 0 ? luma : 128 }
    }

    /// Four flat quadrants of distinct grey levels: TL 40, TR 100, BL 160, BR 220.
    static func quadrants(_ size: Int, rotation: Rotation = .none) throws -> VideoFrame {
        let half = size / 2
        return try VideoFrame(format: .yuv444p, width: size, height: size, colorMatrix: .bt709, colorRange: .full,
                              rotation: rotation) { c, x, y in
            c != 0 ? 128 : [[40, 100], [160, 220]][y < half ? 0 : 1][x < half ? 0 : 1]
        }
    }

    /// The first and last lit pixel along a row and a column through (x, y).
    static func litSpan(_ image: RGBAImage, x: Int, y: Int) -> (x0: Int, x1: Int, y0: Int, y1: Int)? {
        let row = (0..<image.width).filter { image.pixel(x: $0, y: y).r > 128 }
        let column = (0..<image.height).filter { image.pixel(x: x, y: $0).r > 128 }
        guard let x0 = row.first, let x1 = row.last, let y0 = column.first, let y1 = column.last else { return nil }
        return (x0, x1 + 1, y0, y1 + 1)
    }

    /// What is drawn is where `videoRect` says, for every gravity, display rotation and clip shape.
    @Test func drawnPictureFillsTheReportedRectangle() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual)
        // Small frames of the clip shapes (the rectangle depends only on the aspect ratio).
        for (name, w, h) in [("4:3", 64, 48), ("16:9", 64, 36), ("9:16", 36, 64)] {
            let frame = try Self.flat(w, h)
            for gravity in VideoGravity.allCases {
                for rotation in Rotation.allCases {
                    output.layer.gravity = gravity
                    output.layer.rotation = rotation
                    try output.draw([frame])
                    let rect = try #require(output.layer.videoRect)
                    #expect(rect == videoRect(contentWidth: w, contentHeight: h, bounds: fullHD, gravity: gravity, rotation: rotation))
                    let span = try #require(Self.litSpan(try output.screenshot(), x: 960, y: 540))
                    let visible = (max(rect.x, 0), min(rect.x + rect.width, 1920), max(rect.y, 0), min(rect.y + rect.height, 1080))
                    #expect(span == visible, "\(name) \(gravity) \(rotation): drawn \(span), reported \(rect)")
                }
            }
        }
    }

    @Test func perItemGravityOverridesTheLayers() throws {
        let context = try GLContext.surfaceless()
        let target = try Framebuffer(width: 192, height: 108)
        let layer = try PlayerLayer()
        let bounds = PixelRect(x: 0, y: 0, width: 192, height: 108)
        target.bind()
        try layer.draw(try Self.flat(64, 48), bounds: bounds, gravity: .resize)
        #expect(layer.videoRect == bounds)
        try layer.draw(try Self.flat(64, 48), bounds: bounds)
        #expect(layer.videoRect == PixelRect(x: 24, y: 0, width: 144, height: 108))
        _ = context
    }

    /// The display's rotation turns the picture clockwise: bottom-left comes to the top-left.
    @Test func displayRotationTurnsClockwise() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 64, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        let frame = try Self.quadrants(32)
        let expectations: [(Rotation, [Int])] = [  // TL, TR, BL, BR of the output
            (.none, [40, 100, 160, 220]), (.clockwise90, [160, 40, 220, 100]),
            (.upsideDown, [220, 160, 100, 40]), (.clockwise270, [100, 220, 40, 160]),
        ]
        for (rotation, levels) in expectations {
            output.layer.rotation = rotation
            try output.draw([frame])
            let image = try output.screenshot()
            let drawn = [(16, 16), (48, 16), (16, 48), (48, 48)].map { Int(image.pixel(x: $0.0, y: $0.1).g) }
            #expect(zip(drawn, levels).allSatisfy { abs($0 - $1) <= 2 }, "\(rotation): \(drawn)")
        }
    }

    @Test func texturesAreMadeOncePerSizeAndFormat() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 36, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        let a = try Self.flat(64, 36), b = try Self.flat(64, 36, luma: 20)
        for i in 0..<6 { try output.draw([i % 2 == 0 ? a : b]) }
        #expect(output.layer.textureAllocations == 3)
        let nv12 = try VideoFrame(format: .nv12, width: 64, height: 36, colorMatrix: .bt709, colorRange: .limited) { _, _, _ in 128 }
        try output.draw([nv12])
        try output.draw([nv12])
        // Luma keeps its R8 texture; chroma becomes one RG8 plane.
        #expect(output.layer.textureAllocations == 4)
    }
}

@Suite(.serialized) struct ScreenshotAndImportTests {

    @Test func pngOfWrongSizeIsRefusedClearly() throws {
        let error = try #require(throws: MediaError.self) { try PNGEncoder.encode(rgba: [1, 2, 3], width: 2, height: 2) }
        #expect(error.description.contains("expected 16 bytes of RGBA, got 3"))
    }

    /// An RGB picture (a PNG) is converted once with swscale, says so, and still draws its colours.
    @Test func rgbSourceIsConvertedAndFlagged() throws {
        let width = 48, height = 32
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        let colours: [[UInt8]] = [[230, 30, 40], [20, 200, 60], [40, 60, 220], [128, 128, 128]]
        for y in 0..<height {
            for x in 0..<width {
                let c = colours[(x / 24) + 2 * (y / 16)]
                rgba.replaceSubrange((y * width + x) * 4..<(y * width + x) * 4 + 3, with: c)
            }
        }
        let path = TestMedia.folder + "/rgb-\(UUID().uuidString).png"
        try PNGEncoder.encode(rgba: rgba, width: width, height: height).write(to: URL(fileURLWithPath: path))
        let decoder = try VideoDecoder(path: path)
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.convertedFrom == "rgba")
        #expect(frame.pixelFormat == .yuv444p)
        let output = try HeadlessOutput(mode: DisplayMode(width: width, height: height, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        try output.draw([frame])
        let image = try output.screenshot()
        for (i, c) in colours.enumerated() {
            let p = image.pixel(x: 12 + 24 * (i % 2), y: 8 + 16 * (i / 2))
            let error = zip([p.r, p.g, p.b], c).map { abs(Int($0) - Int($1)) }.max()!
            #expect(error <= 3, "colour \(c) drew \([p.r, p.g, p.b])")
        }
    }

    /// A thumbnail scaled by GL as it is read back: its size, its colours where they were, and
    /// the rest of the output's drawing undisturbed (the target bound again). The next thumbnails
    /// (the small target and its pixels kept) show the next pictures, and leave one still held as it was.
    @Test func aThumbnailIsScaledAsItIsReadBack() throws {
        let width = 96, height = 64
        let red: [UInt8] = [230, 30, 40], blue: [UInt8] = [40, 60, 220]
        func halves(_ left: [UInt8], _ right: [UInt8]) throws -> VideoFrame {
            var rgba = [UInt8](repeating: 255, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    rgba.replaceSubrange((y * width + x) * 4..<(y * width + x) * 4 + 3, with: x < width / 2 ? left : right)
                }
            }
            let path = TestMedia.folder + "/halves-\(UUID().uuidString).png"
            try PNGEncoder.encode(rgba: rgba, width: width, height: height).write(to: URL(fileURLWithPath: path))
            return try #require(try VideoDecoder(path: path).nextFrame())
        }
        func expectHalves(_ image: RGBAImage, _ left: [UInt8], _ right: [UInt8], _ what: String) {
            #expect(image.width == 24 && image.height == 16, "\(what)")
            for (x, c) in [(3, left), (20, right)] {
                let p = image.pixel(x: x, y: 8)
                #expect(zip([p.r, p.g, p.b], c).map { abs(Int($0) - Int($1)) }.max()! <= 4, "\(what) at x \(x): \([p.r, p.g, p.b]), expected \(c)")
            }
        }
        let frame = try halves(red, blue), swapped = try halves(blue, red)
        let output = try HeadlessOutput(mode: DisplayMode(width: width, height: height, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        try output.draw([frame])
        let held = try output.screenshotAsStored(maxWidth: 24)
        expectHalves(held, red, blue, "the first thumbnail")
        try output.draw([swapped])
        expectHalves(try output.screenshotAsStored(maxWidth: 24), blue, red, "the next picture's thumbnail")
        expectHalves(held, red, blue, "the first thumbnail, still held")
        try output.draw([frame])
        expectHalves(try output.screenshotAsStored(maxWidth: 24), red, blue, "a third thumbnail")
        #expect(try output.screenshotAsStored(maxWidth: 48).width == 48)
        #expect(try output.screenshotAsStored(maxWidth: 500).width == width)
        try output.draw([frame])
        let p = try output.screenshot().pixel(x: 80, y: 30)
        #expect(abs(Int(p.b) - 220) <= 4, "drawn after the thumbnail: \([p.r, p.g, p.b])")
    }

    /// At an odd whole ratio (3:1 on both sides) each thumbnail pixel is the source pixel at the
    /// centre of the block it covers, as linear filtering samples it there.
    @Test func aThumbnailAtAnOddWholeRatioTakesEachBlocksCentre() throws {
        let width = 96, height = 48
        var state: UInt32 = 7
        let rgba = (0..<width * height * 4).map { i -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return i % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: state >> 24)
        }
        let path = TestMedia.folder + "/noise-\(UUID().uuidString).png"
        try PNGEncoder.encode(rgba: rgba, width: width, height: height).write(to: URL(fileURLWithPath: path))
        let frame = try #require(try VideoDecoder(path: path).nextFrame())
        let output = try HeadlessOutput(mode: DisplayMode(width: width, height: height, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        try output.draw([frame])
        let full = try output.screenshot(), thumbnail = try output.screenshotAsStored(maxWidth: 32).topRowFirst()
        #expect(thumbnail.width == 32 && thumbnail.height == 16)
        var differing = 0
        for y in 0..<16 {
            for x in 0..<32 {
                let a = thumbnail.pixel(x: x, y: y), b = full.pixel(x: 3 * x + 1, y: 3 * y + 1)
                if zip([a.r, a.g, a.b], [b.r, b.g, b.b]).map({ abs(Int($0) - Int($1)) }).max()! > 1 { differing += 1 }
            }
        }
        #expect(differing == 0, "\(differing) of 512 thumbnail pixels are not their block's centre")
    }

    @Test func dmaBufImportSaysWhatIsMissing() throws {
        let context = try GLContext.surfaceless()
        let layer = try PlayerLayer()
        if context.glExtensions.contains("GL_OES_EGL_image_external_essl3") {
            try layer.prepareExternalImages()  // the external-image program compiles
        }
        guard !context.eglExtensions.contains("EGL_EXT_image_dma_buf_import") else {
            // With the extension, importing needs a real buffer from a device this test does not have.
            return
        }
        let error = try #require(throws: RenderError.self) { try DMABufImporter(context: context) }
        #expect(error.description.contains("EGL_EXT_image_dma_buf_import is not available"))
    }
}
