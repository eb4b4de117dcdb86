import Display
import Foundation
import Media
import Playback
import Render
import Testing

/// Issue 32: the headless output without GL (`HeadlessPlanesOutput`) shows what the GL one shows,
/// so `display.scanout` `auto` may choose it where there is no GPU.
@Suite(.serialized) struct HeadlessPlanesOutputTests {
    static let mode = DisplayMode(width: 96, height: 54, refresh: RefreshRate(numerator: 60))
    static let background = RGBColor(red: 255, green: 128, blue: 0)

    /// Four flat quadrants, red and green over blue and white (BT.709, limited range).
    static func quadrants(width: Int = 64, height: Int = 48) throws -> VideoFrame {
        let colours: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]
        func ycbcr(_ c: [Double]) -> [Int] {
            let y = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
            return [Int((16 + 219 * y).rounded()), Int((128 + 224 * (c[2] - y) / 1.8556).rounded()),
                    Int((128 + 224 * (c[0] - y) / 1.5748).rounded())]
        }
        return try VideoFrame(format: .yuv420p, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            let (fx, fy) = c == 0 ? (x, y) : (x * 2, y * 2)
            return ycbcr(colours[(fy < height / 2 ? 0 : 2) + (fx < width / 2 ? 0 : 1)])[c]
        }
    }

    static func rgb(_ image: RGBAImage, _ x: Int, _ y: Int) -> [Int] {
        let p = image.pixel(x: x, y: y)
        return [Int(p.r), Int(p.g), Int(p.b)]
    }

    /// Pixels where the GL picture is flat around them (2 pixels each way): the two outputs'
    /// scalers filter edges differently, so only flat areas must agree. Returns the worst difference.
    static func worstFlatDifference(_ gl: RGBAImage, _ planes: RGBAImage) -> (worst: Int, compared: Int) {
        var worst = 0, compared = 0
        for y in 2..<(gl.height - 2) {
            for x in 2..<(gl.width - 2) {
                let centre = rgb(gl, x, y)
                let flat = [(-2, 0), (2, 0), (0, -2), (0, 2), (-2, -2), (2, 2)].allSatisfy { dx, dy in
                    zip(rgb(gl, x + dx, y + dy), centre).allSatisfy { abs($0 - $1) <= 2 }
                }
                guard flat else { continue }
                compared += 1
                worst = max(worst, zip(rgb(planes, x, y), centre).map { abs($0 - $1) }.max() ?? 0)
            }
        }
        return (worst, compared)
    }

    @Test("the picture, its place and the background match the GL output's for each gravity and display rotation, and on a wall's window, within 6/255")
    func drawsWhatTheGLOutputDraws() throws {
        let gl = try HeadlessOutput(mode: Self.mode, clock: .virtual, background: Self.background)
        let planes = try HeadlessPlanesOutput(mode: Self.mode, clock: .virtual, background: Self.background)
        let frame = try Self.quadrants()
        let canvas = PixelRect(x: 0, y: 0, width: 192, height: 54)
        let walls: [WallPlacement?] = [nil, WallPlacement(window: PixelRect(x: 96, y: 0, width: 96, height: 54), region: canvas)]
        for wall in walls {
            for gravity in VideoGravity.allCases {
                for rotation in Rotation.allCases where wall == nil || rotation == .none {
                    for layer in [gl.layer as any PictureLayer, planes.layer] {
                        (layer.gravity, layer.rotation, layer.wallPlacement) = (gravity, rotation, wall)
                    }
                    try gl.draw([frame])
                    try planes.draw([frame])
                    let what = "\(gravity) \(rotation) \(wall == nil ? "single" : "wall")"
                    #expect(planes.layer.videoRect == gl.layer.videoRect, "\(what)")
                    let (worst, compared) = Self.worstFlatDifference(try gl.screenshot(), planes.screenshot())
                    #expect(compared > 96 * 54 / 2, "\(what): only \(compared) flat pixels")
                    #expect(worst <= 6, "\(what): worst \(worst)/255")
                }
            }
        }
        #expect(planes.layer.picturesDrawn > 0 && planes.layer.framesNotDrawn == 0)
    }

    @Test("an overlay is blended over the picture, and gone from the next picture once removed")
    func overlaysComeAndGo() throws {
        let output = try HeadlessPlanesOutput(mode: Self.mode, clock: .virtual, background: Self.background)
        output.layer.gravity = .resize
        let frame = try Self.quadrants()
        let white = try #require(OverlayImage(width: 8, height: 6, straightPixels: [UInt8](repeating: 255, count: 8 * 6 * 4)))
        output.layer.overlays = [OverlayPicture(image: white, x: 4, y: 4, opacity: 1)]
        try output.draw([frame])
        #expect(Self.rgb(output.screenshot(), 6, 6) == [255, 255, 255])
        #expect(Self.rgb(output.screenshot(), 20, 20).first ?? 0 > 240)  // the red quadrant beside it
        output.layer.overlays = []
        try output.draw([frame])
        let red = Self.rgb(output.screenshot(), 6, 6)
        #expect(red[0] > 240 && red[1] < 16 && red[2] < 16, "the overlay's place shows the picture again: \(red)")
    }

    @Test("a thumbnail is scaled as it is read: the aspect kept, each part the colour of the same part of the whole, never wider than the picture")
    func thumbnails() throws {
        let output = try HeadlessPlanesOutput(mode: Self.mode, clock: .virtual, background: Self.background)
        output.layer.gravity = .resize
        try output.draw([try Self.quadrants()])
        let whole = output.screenshot(), small = output.screenshot(maxWidth: 32)
        #expect(small.width == 32 && small.height == 18)
        let boxed = whole.scaledDown(toWidth: 32)
        for (x, y) in [(8, 4), (24, 4), (8, 13), (24, 13)] {
            let (got, want) = (Self.rgb(small, x, y), Self.rgb(boxed, x, y))
            #expect(zip(got, want).allSatisfy { abs($0 - $1) <= 4 }, "(\(x), \(y)): \(got) against \(want)")
        }
        #expect(output.screenshot(maxWidth: 500).width == 96 && Self.rgb(output.screenshot(maxWidth: 500), 20, 20) == Self.rgb(whole, 20, 20))
    }

    @Test("standby paints black and, on a real clock, presents nothing until woken; the virtual clock shows each queued picture at once")
    func standbyAndTheClock() throws {
        let frame = try Self.quadrants()
        let virtual = try HeadlessPlanesOutput(mode: Self.mode, clock: .virtual, background: Self.background)
        try virtual.draw([frame])
        try virtual.queue(forVsync: 5)
        #expect(try virtual.waitForEvent(timeout: 1) == .flipped(vsync: 5))
        #expect(try virtual.waitForEvent(timeout: 0) == .timedOut)
        try virtual.setDisplayPower(false)
        #expect(virtual.isReady && !virtual.isDisplayOn)
        try virtual.draw([frame])
        let dark = virtual.screenshot()
        #expect([(0, 0), (48, 27), (95, 53)].allSatisfy { Self.rgb(dark, $0.0, $0.1) == [0, 0, 0] })
        try virtual.setDisplayPower(true)
        try virtual.draw([frame])
        #expect(Self.rgb(virtual.screenshot(), 0, 0) == [255, 128, 0], "awake: the background again")

        let real = try HeadlessPlanesOutput(mode: Self.mode, clock: .real)
        try real.setDisplayPower(false)
        #expect(!real.isReady)
        try real.setDisplayPower(true)
        #expect(real.isReady)
    }

    @Test("a mode no picture can have is refused with its size")
    func impossibleModeIsRefused() {
        #expect {
            try HeadlessPlanesOutput(mode: DisplayMode(width: 20000, height: 10, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        } throws: { "\($0)".contains("20000x10") }
    }

    @Test("auto draws without GL only where there is no GPU render node; gl and planes are kept as asked")
    func theHeadlessScanoutChoice() throws {
        #expect(chooseHeadlessScanout(.auto, renderNodes: []).kind == .planes)
        let gpu = chooseHeadlessScanout(.auto, renderNodes: ["renderD128"])
        #expect(gpu.kind == .gl && gpu.reason.contains("renderD128"))
        #expect(chooseHeadlessScanout(.gl, renderNodes: []).kind == .gl)
        #expect(chooseHeadlessScanout(.planes, renderNodes: ["renderD128"]).kind == .planes)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dri-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["card0", "renderD129", "renderD128", "by-path"] {
            FileManager.default.createFile(atPath: folder + "/" + name, contents: nil)
        }
        #expect(renderNodes(in: folder) == ["renderD128", "renderD129"])
        #expect(renderNodes(in: folder + "/missing").isEmpty)
    }
}
