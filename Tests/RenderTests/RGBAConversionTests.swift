import Display
import Foundation
import Media
import Playback
import Render
import Testing

/// The choice of where frames become RGB, from the renderer's name.
@Suite struct ColorConversionChoiceTests {
    @Test func softwareRasterizersConvertOnTheCPU() {
        for renderer in ["llvmpipe (LLVM 15.0.6, 256 bits)", "softpipe", "Mesa X11 swrast"] {
            let choice = chooseColorConversion(.auto, renderer: renderer)
            #expect(choice.conversion == .cpu, "\(renderer)")
            #expect(choice.reason.contains("software rasterizer"), "\(choice.reason)")
        }
    }

    @Test func gpusConvertInTheShader() {
        for renderer in ["Mesa Intel(R) UHD Graphics 620 (KBL GT2)", "V3D 4.2", "virgl (Intel)", "AMD Radeon RX 6600 (navi23)"] {
            #expect(chooseColorConversion(.auto, renderer: renderer).conversion == .shader, "\(renderer)")
        }
    }

    @Test func theSettingOverridesTheRenderer() {
        #expect(chooseColorConversion(.shader, renderer: "llvmpipe (LLVM 15.0.6, 256 bits)").conversion == .shader)
        #expect(chooseColorConversion(.cpu, renderer: "V3D 4.2").conversion == .cpu)
        #expect(chooseColorConversion(.cpu, renderer: "V3D 4.2").reason.contains("display.conversion"))
    }

    /// An output says what it can do as it opens, before any player is made for it: here
    /// (llvmpipe) the CPU conversion, its texture limit, and no DMA-BUF import, naming why.
    @Test func anOutputSaysWhatItCanDoWhenItOpens() throws {
        let output = try HeadlessOutput(name: "headless-7", mode: DisplayMode(width: 64, height: 48, refresh: RefreshRate(numerator: 50)),
                                        clock: .virtual)
        let capabilities = output.openCapabilities(conversion: .auto)
        #expect(capabilities.name == "headless-7")
        #expect(capabilities.refresh == RefreshRate(numerator: 50))
        #expect(capabilities.renderer == output.context.renderer)
        #expect(capabilities.maxTextureSize == output.context.maxTextureSize)
        #expect((capabilities.maxTextureSize ?? 0) >= 2048)
        #expect(capabilities == output.openCapabilities(conversion: .auto), "read again, the same")
        let expected = chooseColorConversion(.auto, renderer: output.context.renderer)
        #expect(capabilities.colorConversion == expected.conversion && capabilities.colorConversionReason == expected.reason)
        #expect(output.openCapabilities(conversion: .shader).colorConversion == .shader)
        var extensions = capabilities.dmabuf
        extensions.importerFailure = nil
        extensions.formats = nil
        #expect(extensions == DMABufDisplaySupport(context: output.context))
        #expect(capabilities.dmabuf.canImport == (output.layer.dmabufImporter != nil))
        #expect(capabilities.scanoutFormat == nil)
    }
}

/// Frames converted to RGBA on the CPU: buffers reused, and drawn like Y'CbCr frames (the colour
/// itself is checked against the float reference in ColourConversionTests).
@Suite(.serialized) struct RGBADrawingTests {
    static func image(_ frame: VideoFrame) -> [UInt8] {
        frame.withPlanes { planes in
            let p = planes[0]
            var bytes: [UInt8] = []
            for y in 0..<p.height {
                bytes += UnsafeRawBufferPointer(start: p.bytes + y * p.bytesPerRow, count: p.width * 4)
            }
            return bytes
        }
    }

    static func address(_ frame: VideoFrame) -> UnsafeRawPointer { frame.withPlanes { $0[0].bytes } }

    @Test func buffersComeBackToThePool() throws {
        let source = try VideoFrame(format: .yuv420p, width: 64, height: 36, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            c == 0 ? 16 + (x * 7 + y * 3) % 219 : 128
        }
        let converter = RGBAConverter()
        var first: VideoFrame? = try converter.convert(source)
        let held = try converter.convert(source)
        let firstAddress = Self.address(first!)
        #expect(firstAddress != Self.address(held), "two frames alive at once have their own buffers")
        #expect(first!.pixelFormat == .rgba && first!.width == 64 && first!.height == 36)
        first = nil  // its buffer goes back to the pool
        let again = try converter.convert(source)
        #expect(Self.address(again) == firstAddress, "a freed frame's buffer is reused")
        #expect(Self.image(again) == Self.image(held))
    }

    /// The bands hold exactly the whole conversion's pixels, in order: yuv420p and yuv422p of an
    /// even height in bands of the rows asked for (the last one shorter), anything else whole.
    @Test(arguments: [(Media.PixelFormat.yuv420p, 70, 38, 8), (.yuv422p, 70, 38, 8), (.yuv420p, 64, 36, 64),
                      (.yuv420p, 65, 37, 8), (.nv12, 70, 38, 8), (.yuv444p10le, 40, 20, 8)])
    func bandsHoldTheWholeConversionsPixels(format: Media.PixelFormat, width: Int, height: Int, rows: Int) throws {
        let source = try VideoFrame(format: format, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            let top = format.bitsPerSample > 8 ? 1023 : 255
            return c == 0 ? (x * 7 + y * 13) % (top + 1) : (x * 29 + y * 3 + c * 50) % (top + 1)
        }
        let whole = Self.image(try RGBAConverter().convert(source))
        var firstRows: [Int] = []
        var banded: [UInt8] = []
        try RGBAConverter().convertInBands(source, rows: rows) { firstRow, band in
            #expect(band.width == width && band.components == 4 && band.bytesPerSample == 1)
            #expect(firstRow == banded.count / (width * 4), "bands come in order, without gaps")
            firstRows.append(firstRow)
            for y in 0..<band.height {
                banded += UnsafeRawBufferPointer(start: band.bytes + y * band.bytesPerRow, count: width * 4)
            }
        }
        let inBands = (format == .yuv420p || format == .yuv422p) && height % 2 == 0 && height > rows
        #expect(firstRows == (inBands ? Array(stride(from: 0, to: height, by: rows)) : [0]), "\(firstRows)")
        #expect(banded == whole, "\(format) \(width)x\(height): the bands differ from the whole conversion")
    }

    /// With the cpu conversion the layer converts Y'CbCr frames as it uploads them: drawn 1:1, the
    /// picture is exactly the RGBA frame the decode thread used to make (`RGBAConverter.convert`),
    /// in bands (yuv420p, 150 rows: 64 + 64 + 22) or whole (nv12). Bands go straight into the
    /// headless output's target (no texture of the layer's), or, with no such target (a display's
    /// framebuffer), into the layer's texture and are copied from it; a whole frame is drawn from
    /// the texture. A texture is made once at most.
    @Test(arguments: [(Media.PixelFormat.yuv420p, true), (.yuv420p, false), (.nv12, true)])
    func theLayerConvertsAsItUploads(format: Media.PixelFormat, direct: Bool) throws {
        let (w, h) = (96, 150)
        let output = try HeadlessOutput(mode: DisplayMode(width: w, height: h, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.colorConversion = .cpu
        if !direct { output.layer.directTarget = nil }
        for shift in 0..<3 {
            let frame = try VideoFrame(format: format, width: w, height: h, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
                c == 0 ? 16 + (x * 5 + y * 3 + shift * 40) % 220 : 16 + (x * 11 + y * 7 + c * 60) % 225
            }
            try output.draw([frame])
            let expected = Self.image(try RGBAConverter().convert(frame))
            #expect(try output.screenshot().pixels == expected, "\(format) frame \(shift)")
        }
        let bands = format == .yuv420p
        #expect(output.layer.textureAllocations == (bands && direct ? 0 : 1) && output.layer.conversionFailures == 0)
        // Shown 1:1, a picture that comes in bands is copied, a whole one drawn.
        #expect(output.layer.copiedDraws == (bands ? 3 : 0))
        #expect(output.layer.directUploads == (bands && direct ? 3 : 0))
        // The shader path still draws the same frames when asked (the layer's default).
        output.layer.colorConversion = .shader
        let frame = try VideoFrame(format: format, width: w, height: h, colorMatrix: .bt709, colorRange: .limited) { c, _, _ in c == 0 ? 120 : 128 }
        try output.draw([frame])
        #expect(output.layer.textureAllocations > 1, "the planes' textures are made for the shader")
    }

    /// A picture shown 1:1 is copied into place (converted straight into the target, or stored
    /// bottom-up in the layer's texture and copied from it) wherever the bounds put it, with
    /// exactly the converted pixels and the background around it; turned, blended or scaled it is
    /// drawn from the layer's texture stored top-down; one after the other, each right.
    @Test(arguments: [true, false])
    func aOneToOnePictureIsCopiedIntoPlace(direct: Bool) throws {
        let (w, h, W, H) = (70, 150, 100, 170)
        let output = try HeadlessOutput(mode: DisplayMode(width: W, height: H, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.colorConversion = .cpu
        if !direct { output.layer.directTarget = nil }
        output.layer.background = RGBColor(red: 20, green: 40, blue: 60)
        let bounds = PixelRect(x: 13, y: 9, width: w, height: h)
        for shift in 0..<2 {
            let frame = try VideoFrame(format: .yuv420p, width: w, height: h, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
                c == 0 ? 16 + (x * 5 + y * 3 + shift * 40) % 220 : 16 + (x * 11 + y * 7 + c * 60) % 225
            }
            let picture = Self.image(try RGBAConverter().convert(frame))
            for (rotation, copied) in [(Rotation.none, true), (.upsideDown, false), (.none, true)] {
                output.layer.rotation = rotation
                let (copies, directs) = (output.layer.copiedDraws, output.layer.directUploads)
                try output.draw([nil])  // binds the target, clears it to the background
                try output.layer.draw(frame, bounds: bounds, targetHeight: H)
                #expect(output.layer.copiedDraws == copies + (copied ? 1 : 0), "\(rotation)")
                #expect(output.layer.directUploads == directs + (copied && direct ? 1 : 0), "\(rotation)")
                #expect(output.layer.videoRect == bounds)
                let shot = try output.screenshot()
                var inside: [UInt8] = [], outside = 0
                for y in 0..<H {
                    for x in 0..<W {
                        let p = shot.pixel(x: x, y: y)
                        if x >= bounds.x && x < bounds.x + w && y >= bounds.y && y < bounds.y + h {
                            inside += [p.r, p.g, p.b, p.a]
                        } else if !(p.r == 20 && p.g == 40 && p.b == 60) {
                            outside += 1
                        }
                    }
                }
                // Turned upside down, the picture's pixel (w-1-x, h-1-y) shows at (x, y).
                var expected: [UInt8] = []
                for y in 0..<h {
                    for x in 0..<w {
                        let (px, py) = rotation == .none ? (x, y) : (w - 1 - x, h - 1 - y)
                        let i = (py * w + px) * 4
                        expected += picture[i..<i + 4]
                    }
                }
                #expect(inside == expected, "frame \(shift) \(rotation): the picture differs from the conversion")
                #expect(outside == 0, "frame \(shift) \(rotation): \(outside) pixels around the picture are not the background")
            }
        }
        output.layer.rotation = .none
        // Scaled (bounds twice the picture): drawn, not copied.
        let frame = try VideoFrame(format: .yuv420p, width: 40, height: 30, colorMatrix: .bt709, colorRange: .limited) { c, _, _ in c == 0 ? 100 : 128 }
        let copies = output.layer.copiedDraws
        try output.draw([nil])
        try output.layer.draw(frame, bounds: PixelRect(x: 0, y: 0, width: 80, height: 60), targetHeight: H)
        #expect(output.layer.copiedDraws == copies && output.layer.videoRect == PixelRect(x: 0, y: 0, width: 80, height: 60))
    }

    /// An output that chooses the cpu conversion tells its layer so as it opens.
    @Test func anOutputChoosingTheCPUConversionTellsItsLayer() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 48, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        #expect(output.layer.colorConversion == .shader)
        #expect(output.openCapabilities(conversion: .cpu).colorConversion == .cpu && output.layer.colorConversion == .cpu)
        #expect(output.openCapabilities(conversion: .shader).colorConversion == .shader && output.layer.colorConversion == .shader)
    }

    /// Drawn 1:1, an RGBA frame reaches the screen unchanged: nearest sampling, no half-pixel shift.
    @Test func oneToOneDrawIsAnExactCopy() throws {
        let (w, h) = (61, 35)
        let frame = try VideoFrame(format: .rgba, width: w, height: h, colorMatrix: .bt709, colorRange: .full) { c, x, y in
            (x * 37 + y * 101 + c * 59) % 256
        }
        let output = try HeadlessOutput(mode: DisplayMode(width: w, height: h, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        try output.draw([frame])
        #expect(try output.screenshot().pixels == Self.image(frame))
    }

    /// Rotation, gravity and a wall window place the RGBA picture exactly where they place the
    /// Y'CbCr one, in the same colours.
    @Test func geometryMatchesTheShaderPath() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        let yuv = try PlayerLayerGeometryDrawingTests.quadrants(64, rotation: .clockwise90)
        let rgba = try RGBAConverter().convert(yuv)
        #expect(rgba.rotation == .clockwise90)
        let cases: [(VideoGravity, Rotation, WallPlacement?)] = [
            (.resizeAspect, .none, nil), (.resizeAspectFill, .clockwise90, nil), (.resize, .upsideDown, nil),
            (.resizeAspect, .clockwise270, WallPlacement(window: PixelRect(x: 160, y: 0, width: 320, height: 180),
                                                         region: PixelRect(x: 0, y: 0, width: 640, height: 180))),
        ]
        for (gravity, rotation, wall) in cases {
            output.layer.gravity = gravity
            output.layer.rotation = rotation
            output.layer.wallPlacement = wall
            try output.draw([yuv])
            let expected = try output.screenshot(), expectedRect = output.layer.videoRect
            try output.draw([rgba])
            let got = try output.screenshot()
            #expect(output.layer.videoRect == expectedRect)
            // Flat quadrants: only the pixels along their edges may differ (filtering).
            let differing = stride(from: 0, to: got.pixels.count, by: 4).filter { i in
                (0..<3).contains { abs(Int(got.pixels[i + $0]) - Int(expected.pixels[i + $0])) > 2 }
            }.count
            #expect(differing <= got.width * got.height / 50, "\(gravity) \(rotation) wall \(wall != nil): \(differing) pixels differ")
        }
    }
}

/// Bands converted bottom-up (for the layer's 1:1 copy, which needs the picture stored in GL's
/// row order): the same rows as the whole conversion, each band's last row first, at odd sizes and
/// band heights; frames that come whole are never flipped.
@Suite struct BottomUpBandTests {
    static func frame(_ format: Media.PixelFormat, _ width: Int, _ height: Int, shift: Int) throws -> VideoFrame {
        try VideoFrame(format: format, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            let top = format.bitsPerSample > 8 ? 1023 : 255
            return c == 0 ? (x * 7 + y * 13 + shift * 41) % (top + 1) : (x * 29 + y * 3 + c * 50 + shift * 17) % (top + 1)
        }
    }

    @Test(arguments: [(Media.PixelFormat.yuv420p, 71, 38, 8), (.yuv422p, 97, 150, 64), (.yuv420p, 33, 90, 2),
                      (.yuv420p, 64, 36, 64), (.yuv420p, 65, 37, 8), (.nv12, 70, 38, 8)])
    func flippedBandsHoldTheRowsBottomUp(format: Media.PixelFormat, width: Int, height: Int, rows: Int) throws {
        let converter = RGBAConverter()
        for shift in 0..<3 {
            let frame = try Self.frame(format, width, height, shift: shift)
            let whole = RGBADrawingTests.image(try RGBAConverter().convert(frame))
            let inBands = RGBAConverter.convertsInBands(frame, rows: rows)
            #expect(inBands == ((format == .yuv420p || format == .yuv422p) && height % 2 == 0 && height > rows))
            let rowBytes = width * 4
            var rebuilt = [UInt8](repeating: 0, count: whole.count)
            var firstRows: [Int] = []
            try converter.convertInBands(frame, rows: rows, flipped: true) { firstRow, band in
                firstRows.append(firstRow)
                for r in 0..<band.height {
                    // Row r of a flipped band is the band's row (height - 1 - r).
                    let pictureRow = firstRow + (inBands ? band.height - 1 - r : r)
                    rebuilt.replaceSubrange(pictureRow * rowBytes..<(pictureRow + 1) * rowBytes,
                                            with: UnsafeRawBufferPointer(start: band.bytes + r * band.bytesPerRow, count: rowBytes))
                }
            }
            #expect(firstRows == (inBands ? Array(stride(from: 0, to: height, by: rows)) : [0]), "\(firstRows)")
            #expect(rebuilt == whole, "\(format) \(width)x\(height) rows \(rows) frame \(shift): flipped bands differ")
        }
    }
}
