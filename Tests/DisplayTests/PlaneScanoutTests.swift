@testable import Display
import Media
import Playback
import Render
import Testing

/// The pure parts of the KMS planes path (display.scanout planes): the scan-out choice, the dumb
/// buffer's layout, where a picture goes, and swscale's conversion into a mapped XRGB8888 buffer,
/// checked by pixel values (the KMS calls themselves are exercised in the VM: KMSVMTests).
@Suite("KMS planes scan-out")
struct PlaneScanoutTests {
    struct NoRenderer: Error, CustomStringConvertible { var description: String { "no EGL" } }

    @Test("gl and planes are taken as set, without asking the renderer; auto asks it")
    func scanoutChoice() {
        var asked = 0
        func renderer(_ name: String) -> () -> Result<String, any Error> { { asked += 1; return .success(name) } }
        #expect(chooseScanout(.gl, renderer: renderer("llvmpipe")).kind == .gl)
        #expect(chooseScanout(.planes, renderer: renderer("AMD Radeon RX 6600")).kind == .planes)
        #expect(asked == 0)
        let soft = chooseScanout(.auto, renderer: renderer("llvmpipe (LLVM 15.0.6, 128 bits)"))
        #expect(soft.kind == .planes)
        #expect(soft.reason.contains("llvmpipe"))
        #expect(chooseScanout(.auto, renderer: renderer("softpipe")).kind == .planes)
        let gpu = chooseScanout(.auto, renderer: renderer("Mesa Intel(R) UHD Graphics 620 (KBL GT2)"))
        #expect(gpu.kind == .gl)
        #expect(gpu.reason.contains("GPU"))
        #expect(asked == 3)
        let none = chooseScanout(.auto) { .failure(NoRenderer()) }
        #expect(none.kind == .planes)
        #expect(none.reason.contains("no EGL"))
    }

    @Test("the KMS output tries its presentations in order: auto is GL, then planes; gl and planes only themselves")
    func presentationTable() {
        #expect(KMSOutput.presentationTable(.auto) == [.gl, .planes])
        #expect(KMSOutput.presentationTable(.gl) == [.gl])
        #expect(KMSOutput.presentationTable(.planes) == [.planes])
        let noGPU = CardGPU.none("the card's driver (simpledrm) only scans out")
        #expect(KMSOutput.presentationTable(.auto, card: noGPU) == [.planes])
        #expect(KMSOutput.presentationTable(.gl, card: noGPU) == [.gl])
    }

    @Test("a card whose driver only scans out, or virtio-gpu without 3D, has no GPU; any other card may have one")
    func cardWithoutGPU() {
        for driver in ["simpledrm", "bochs-drm", "cirrus", "qxl", "ast", "mgag200"] {
            guard case .none(let why) = cardGPU(driver: driver, virtio3D: nil) else {
                Issue.record("\(driver) should have no GPU")
                continue
            }
            #expect(why.contains(driver))
        }
        guard case .none(let why) = cardGPU(driver: "virtio_gpu", virtio3D: false) else {
            Issue.record("virtio-gpu without 3D should have no GPU")
            return
        }
        #expect(why.contains("virgl"))
        #expect(cardGPU(driver: "virtio_gpu", virtio3D: true) == .unknown)
        #expect(cardGPU(driver: "virtio_gpu", virtio3D: nil) == .unknown)
        // vc4 on a Raspberry Pi 4, rockchip and udl only scan out, but Mesa pairs them with a GPU.
        for driver in ["i915", "amdgpu", "vc4", "v3d", "msm", "panfrost", "nouveau", "rockchip", "udl", "vkms", ""] {
            #expect(cardGPU(driver: driver, virtio3D: nil) == .unknown, "\(driver)")
        }
    }

    @Test("auto on a card without a GPU takes the planes without asking the renderer; gl stays gl")
    func autoWithoutGPU() {
        var asked = 0
        let renderer: () -> Result<String, any Error> = { asked += 1; return .success("Mesa Intel(R) UHD Graphics 620") }
        let card = cardGPU(driver: "virtio_gpu", virtio3D: false)
        let choice = chooseScanout(.auto, card: card, renderer: renderer)
        #expect(choice.kind == .planes)
        #expect(choice.reason.contains("virtio_gpu") && choice.reason.contains("no GL is loaded"), "\(choice.reason)")
        #expect(chooseScanout(.gl, card: card, renderer: renderer).kind == .gl)
        #expect(asked == 0)
        #expect(chooseScanout(.auto, card: .unknown, renderer: renderer).kind == .gl)
        #expect(asked == 1)
    }

    @Test("a dumb buffer's pitch and size from the driver are checked before use")
    func dumbBufferLayout() throws {
        let padded = try #require(DumbBufferLayout(width: 1280, height: 800, pitch: 5120 + 256, size: UInt64((5120 + 256) * 800)))
        #expect(padded.pitch == 5376)
        #expect(DumbBufferLayout(width: 1280, height: 800, pitch: 5116, size: 10_000_000) == nil)   // row does not fit
        #expect(DumbBufferLayout(width: 1280, height: 800, pitch: 5120, size: 5120 * 799) == nil)   // too small
        #expect(DumbBufferLayout(width: 0, height: 800, pitch: 5120, size: 5120 * 800) == nil)
        #expect(DumbBufferLayout(width: 1280, height: 800, pitch: 5120, size: .max) == nil)
        #expect(padded.placement(of: PixelRect(x: 0, y: 40, width: 1280, height: 720))
                == ScanoutPlacement(x: 0, y: 40, width: 1280, height: 720, pitch: 5376))
        #expect(padded.placement(of: PixelRect(x: 1, y: 40, width: 1280, height: 720)) == nil)
        #expect(padded.placement(of: PixelRect(x: 0, y: -1, width: 10, height: 10)) == nil)
        // What a placement needs of a buffer: the last row ends at its right edge, not the pitch.
        #expect(ScanoutPlacement(x: 2, y: 3, width: 4, height: 5, pitch: 64).bytesNeeded == 7 * 64 + 6 * 4)
        #expect(ScanoutPlacement(x: 15, y: 0, width: 2, height: 1, pitch: 64).bytesNeeded == nil)  // past the pitch
        #expect(ScanoutPlacement(x: 0, y: .max / 2, width: 1, height: 3, pitch: 64).bytesNeeded == nil)  // overflows
    }

    @Test("pictures are placed as the player layer places them: gravity, crop, rotation, a wall's window")
    func placement() throws {
        let screen = PixelRect(x: 0, y: 0, width: 1280, height: 800)
        func piece(_ w: Int, _ h: Int, gravity: VideoGravity = .resizeAspect, frame: Rotation = .none, display: Rotation = .none,
                   bounds: PixelRect = screen, wall: WallPlacement? = nil) throws -> ScanoutPiece {
            try #require(scanoutPiece(frameWidth: w, frameHeight: h, displayWidth: w, frameRotation: frame, displayRotation: display,
                                      gravity: gravity, bounds: bounds, wall: wall))
        }
        // 720p on 1280x800: letterboxed, the whole frame, 1:1.
        let fit = try piece(1280, 720)
        #expect(fit.destination == PixelRect(x: 0, y: 40, width: 1280, height: 720))
        #expect(fit.crop == FrameCrop(x: 0, y: 0, width: 1280, height: 720))
        #expect(fit.turn == .none)
        // Fill: the sides of the frame are cropped, the screen covered.
        let fill = try piece(1280, 720, gravity: .resizeAspectFill)
        #expect(fill.destination == screen)
        #expect(fill.crop == FrameCrop(x: 64, y: 0, width: 1152, height: 720))
        #expect(try piece(640, 480, gravity: .resize).destination == screen)
        // A portrait screen (turned 90 degrees): the 16:9 picture spans its 800 pixels across.
        let portrait = PixelRect(x: 0, y: 0, width: 800, height: 1280)
        let turned = try piece(1280, 720, display: .clockwise90, bounds: portrait)
        #expect(turned.turn == .clockwise90)
        #expect(turned.destination == PixelRect(x: 40, y: 0, width: 720, height: 1280))
        #expect(turned.crop == FrameCrop(x: 0, y: 0, width: 1280, height: 720))
        // A frame tagged with its own rotation (a phone video) on a landscape screen.
        let phone = try piece(1280, 720, frame: .clockwise90)
        #expect(phone.turn == .clockwise90)
        #expect(phone.destination == PixelRect(x: 415, y: 0, width: 450, height: 800))
        // A wall of two screens side by side: the right one shows the right half of the picture.
        let canvas = PixelRect(x: 0, y: 0, width: 2560, height: 800)
        let right = try piece(1280, 400, wall: WallPlacement(window: PixelRect(x: 1280, y: 0, width: 1280, height: 800), region: canvas))
        #expect(right.destination == screen)
        #expect(right.crop == FrameCrop(x: 640, y: 0, width: 640, height: 400))
        // Nothing of the picture in the window: no piece.
        #expect(scanoutPiece(frameWidth: 100, frameHeight: 100, displayWidth: 100, frameRotation: .none, displayRotation: .none,
                             gravity: .resizeAspect, bounds: screen,
                             wall: WallPlacement(window: PixelRect(x: 5000, y: 0, width: 100, height: 100), region: canvas)) == nil)
    }

    /// A frame of four coloured quadrants (red, green / blue, white) in `format`, BT.709 limited range.
    static func quadrants(_ format: PixelFormat, width: Int, height: Int) throws -> VideoFrame {
        let colours: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]
        func ycbcr(_ c: [Double]) -> [Int] {
            let y = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
            return [Int((16 + 219 * y).rounded()), Int((128 + 224 * (c[2] - y) / 1.8556).rounded()),
                    Int((128 + 224 * (c[0] - y) / 1.5748).rounded())]
        }
        let (sx, sy) = format.chromaShift
        return try VideoFrame(format: format, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            let (fx, fy) = c == 0 ? (x, y) : (x << sx, y << sy)
            return ycbcr(colours[(fy < height / 2 ? 0 : 2) + (fx < width / 2 ? 0 : 1)])[c] << (format.bitsPerSample - 8)
        }
    }

    /// Converts `frame` into a 100x80 XRGB buffer (pitch 448: padded) at `placement`, the rest
    /// marked; returns the buffer's pixels as (r, g, b, x) and checks the mark is untouched outside.
    static func convert(_ frame: VideoFrame, crop: FrameCrop? = nil, turn: Rotation = .none,
                        placement: ScanoutPlacement) throws -> (Int, Int) -> [Int] {
        let pitch = 448
        var buffer = [UInt8](repeating: 0x5A, count: pitch * 80)
        let converter = ScanoutConverter()
        try buffer.withUnsafeMutableBytes { bytes in
            try converter.convert(frame, crop: crop ?? FrameCrop(x: 0, y: 0, width: frame.width, height: frame.height),
                                  turn: turn, into: bytes, placement: placement)
        }
        for y in 0..<80 {
            for x in 0..<(pitch / 4) {
                let inside = x >= placement.x && x < placement.x + placement.width && y >= placement.y && y < placement.y + placement.height
                if !inside {
                    #expect(buffer[y * pitch + x * 4 ..< y * pitch + x * 4 + 4].allSatisfy { $0 == 0x5A }, "pixel \(x),\(y) outside was written")
                }
            }
        }
        return { x, y in
            let o = y * pitch + x * 4
            return [Int(buffer[o + 2]), Int(buffer[o + 1]), Int(buffer[o]), Int(buffer[o + 3])]
        }
    }

    static func expectColour(_ got: [Int], _ want: [Int], _ what: String) {
        let worst = zip(got.prefix(3), want).map { abs($0 - $1) }.max() ?? 0
        #expect(worst <= 4, "\(what): \(got.prefix(3)) against \(want) (worst \(worst)/255)")
    }

    @Test("swscale writes the picture into the buffer at its place, 1:1 and scaled, within 4/255", arguments: [PixelFormat.yuv420p, .nv12, .yuv444p, .yuv420p10le])
    func conversionIntoBuffer(format: PixelFormat) throws {
        let frame = try Self.quadrants(format, width: 64, height: 48)
        let red = [255, 0, 0], green = [0, 255, 0], blue = [0, 0, 255], white = [255, 255, 255]
        // 1:1 at (10, 8).
        let same = try Self.convert(frame, placement: ScanoutPlacement(x: 10, y: 8, width: 64, height: 48, pitch: 448))
        Self.expectColour(same(10 + 16, 8 + 12), red, "\(format) top left")
        Self.expectColour(same(10 + 48, 8 + 12), green, "\(format) top right")
        Self.expectColour(same(10 + 16, 8 + 36), blue, "\(format) bottom left")
        Self.expectColour(same(10 + 48, 8 + 36), white, "\(format) bottom right")
        // Scaled up to 96x72 at (2, 4).
        let scaled = try Self.convert(frame, placement: ScanoutPlacement(x: 2, y: 4, width: 96, height: 72, pitch: 448))
        Self.expectColour(scaled(2 + 20, 4 + 15), red, "\(format) scaled top left")
        Self.expectColour(scaled(2 + 76, 4 + 57), white, "\(format) scaled bottom right")
    }

    /// swscale's SIMD converters write whole groups of pixels (x86's yuv2rgb: 8), so a row of a
    /// width outside that group ran on into the pixels beside the placement (found comparing the
    /// headless planes output with the GL one: a 36-pixel wall piece wrote 40).
    @Test("a placement of any width is written exactly, 1:1, scaled and turned: nothing beside it changes", arguments: [33, 36, 37, 44, 48, 64, 80])
    func oddWidthsAreWrittenExactly(width: Int) throws {
        let frame = try Self.quadrants(.yuv420p, width: 64, height: 48)
        for (crop, turn) in [(FrameCrop(x: 0, y: 0, width: 64, height: 48), Rotation.none), (FrameCrop(x: 32, y: 0, width: 32, height: 48), .none),
                             (FrameCrop(x: 0, y: 0, width: 64, height: 48), .clockwise90), (FrameCrop(x: 0, y: 0, width: width, height: 48), .none)] {
            // `convert` fails the test where a pixel outside the placement was written.
            _ = try Self.convert(frame, crop: crop, turn: turn, placement: ScanoutPlacement(x: 100 - width - 12, y: 8, width: width, height: 48, pitch: 448))
        }
    }

    @Test("a transition's mix on the planes path: a red frame and a blue one blended into the buffer at weight one half are half of each within 4/255; outside the placement nothing changes")
    func crossfadeBlend() throws {
        func flat(_ rgb: [Double]) throws -> VideoFrame {
            // BT.709, limited range.
            let y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
            let yuv = [Int((16 + 219 * y).rounded()), Int((128 + 224 * (rgb[2] - y) / 1.8556).rounded()),
                       Int((128 + 224 * (rgb[0] - y) / 1.5748).rounded())]
            return try VideoFrame(format: .yuv420p, width: 32, height: 24, colorMatrix: .bt709, colorRange: .limited) { c, _, _ in yuv[c] }
        }
        let placement = ScanoutPlacement(x: 4, y: 2, width: 64, height: 48, pitch: 448)
        let converter = ScanoutConverter()
        var buffer = [UInt8](repeating: 0x5A, count: 448 * 80)
        var scratch = [UInt8](repeating: 0, count: 448 * 80)
        let crop = FrameCrop(x: 0, y: 0, width: 32, height: 24)
        // As ScanoutLayer draws a crossfade at its middle: the outgoing picture at alpha 1, the
        // incoming one converted into the scratch and blended over it at FrameMix's alpha.
        let alphas = FrameMix<VideoFrame>(other: nil, otherWeight: 0.5, frameWeight: 0.5).blendAlphas
        #expect(alphas.other == 1 && alphas.frame == 0.5)
        try buffer.withUnsafeMutableBytes { try converter.convert(try flat([1, 0, 0]), crop: crop, turn: .none, into: $0, placement: placement) }
        try scratch.withUnsafeMutableBytes { s in
            try converter.convert(try flat([0, 0, 1]), crop: crop, turn: .none, into: s, placement: placement)
            buffer.withUnsafeMutableBytes { ScanoutConverter.blend(UnsafeRawBufferPointer(s), into: $0, placement: placement, alpha: alphas.frame) }
        }
        func pixel(_ x: Int, _ y: Int) -> [Int] {
            let o = y * 448 + x * 4
            return [Int(buffer[o + 2]), Int(buffer[o + 1]), Int(buffer[o])]
        }
        Self.expectColour(pixel(36, 26), [128, 0, 128], "the middle of a red-to-blue crossfade")
        Self.expectColour(pixel(4, 2), [128, 0, 128], "its top left corner")
        #expect(buffer[0..<4].allSatisfy { $0 == 0x5A } && buffer[(60 * 448)..<(60 * 448 + 4)].allSatisfy { $0 == 0x5A })
        // A fade's background weight: blending black in at one quarter keeps three quarters.
        var black = [UInt8](repeating: 0, count: 448 * 80)
        black.withUnsafeMutableBytes { b in
            buffer.withUnsafeMutableBytes { ScanoutConverter.blend(UnsafeRawBufferPointer(b), into: $0, placement: placement, alpha: 0.25) }
        }
        Self.expectColour(pixel(36, 26), [96, 0, 96], "three quarters of the mix")
    }

    @Test("a crop takes only that part of the frame; a turn moves the quadrants clockwise")
    func cropAndTurn() throws {
        let frame = try Self.quadrants(.yuv420p, width: 64, height: 48)
        // The right half (green over white) into a 32x48 place.
        let half = try Self.convert(frame, crop: FrameCrop(x: 32, y: 0, width: 32, height: 48),
                                    placement: ScanoutPlacement(x: 0, y: 0, width: 32, height: 48, pitch: 448))
        Self.expectColour(half(4, 4), [0, 255, 0], "cropped top")
        Self.expectColour(half(28, 44), [255, 255, 255], "cropped bottom")
        // Turned 90 degrees clockwise: 48 wide, 64 high; red goes to the top right, blue to the top left.
        let turned = try Self.convert(frame, turn: .clockwise90, placement: ScanoutPlacement(x: 5, y: 6, width: 48, height: 64, pitch: 448))
        Self.expectColour(turned(5 + 36, 6 + 16), [255, 0, 0], "turned top right")
        Self.expectColour(turned(5 + 12, 6 + 16), [0, 0, 255], "turned top left")
        Self.expectColour(turned(5 + 36, 6 + 48), [0, 255, 0], "turned bottom right")
        Self.expectColour(turned(5 + 12, 6 + 48), [255, 255, 255], "turned bottom left")
        let upside = try Self.convert(frame, turn: .upsideDown, placement: ScanoutPlacement(x: 0, y: 0, width: 64, height: 48, pitch: 448))
        Self.expectColour(upside(48, 36), [255, 0, 0], "upside down bottom right")
        let back = try Self.convert(frame, turn: .clockwise270, placement: ScanoutPlacement(x: 0, y: 0, width: 48, height: 64, pitch: 448))
        Self.expectColour(back(12, 48), [255, 0, 0], "turned 270 bottom left")
    }

    @Test("a placement outside the buffer is refused with the sizes, nothing written")
    func outsideRefused() throws {
        let frame = try Self.quadrants(.yuv420p, width: 64, height: 48)
        var buffer = [UInt8](repeating: 0, count: 448 * 40)
        let converter = ScanoutConverter()
        #expect(throws: MediaError.self) {
            try buffer.withUnsafeMutableBytes { bytes in
                try converter.convert(frame, crop: FrameCrop(x: 0, y: 0, width: 64, height: 48), turn: .none, into: bytes,
                                      placement: ScanoutPlacement(x: 0, y: 0, width: 64, height: 48, pitch: 448))
            }
        }
        #expect(buffer.allSatisfy { $0 == 0 })
    }

    @Test("a crop is widened to whole chroma samples and kept inside the frame")
    func cropAlignment() {
        #expect(ScanoutConverter.aligned(FrameCrop(x: 33, y: 1, width: 10, height: 10), format: .yuv420p, width: 64, height: 48)
                == FrameCrop(x: 32, y: 0, width: 11, height: 11))
        #expect(ScanoutConverter.aligned(FrameCrop(x: 33, y: 1, width: 10, height: 10), format: .yuv444p, width: 64, height: 48)
                == FrameCrop(x: 33, y: 1, width: 10, height: 10))
        #expect(ScanoutConverter.aligned(FrameCrop(x: 60, y: 40, width: 100, height: 100), format: .yuv420p, width: 64, height: 48)
                == FrameCrop(x: 60, y: 40, width: 4, height: 8))
    }
}
