import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport

/// The definition the layer must match, written out from H.273 and the matrices' Kr/Kb, in
/// doubles: code values -> E'Y, E'Cb, E'Cr -> R'G'B' (clamped, 0-255).
enum FloatReference {
    static func kr(_ matrix: ColorMatrix) -> (Double, Double) {
        switch matrix {
        case .bt601: (0.299, 0.114)
        case .bt709: (0.2126, 0.0722)
        case .bt2020: (0.2627, 0.0593)
        }
    }

    static func rgb(y: Double, cb: Double, cr: Double, bits: Int, matrix: ColorMatrix, range: ColorRange) -> [Double] {
        let n = Double(1 << (bits - 8)), maxCode = Double((1 << bits) - 1), mid = Double(1 << (bits - 1))
        let ey, epb, epr: Double
        if range == .limited {
            ey = (y - 16 * n) / (219 * n)
            epb = (cb - mid) / (224 * n)
            epr = (cr - mid) / (224 * n)
        } else {
            ey = y / maxCode
            epb = (cb - mid) / maxCode
            epr = (cr - mid) / maxCode
        }
        let (kr, kb) = kr(matrix)
        let r = ey + 2 * (1 - kr) * epr
        let b = ey + 2 * (1 - kb) * epb
        let g = (ey - kr * r - kb * b) / (1 - kr - kb)
        return [r, g, b].map { min(max($0, 0), 1) * 255 }
    }
}

/// A test picture: luma differs at every pixel, chroma is flat over 8x8-pixel blocks (each block
/// its own Cb/Cr), so that away from the block edges the expected chroma is known exactly whatever
/// the subsampling and siting. Codes stay inside the nominal range of the frame's range.
struct BlockPattern {
    let format: Media.PixelFormat
    let range: ColorRange
    static let block = 8

    private func hash(_ a: Int, _ b: Int, _ c: Int) -> Int {
        var h = UInt64(truncatingIfNeeded: a &* 73_856_093 ^ b &* 19_349_663 ^ c &* 83_492_791)
        h ^= h >> 13
        h = h &* 0x5bd1_e995
        h ^= h >> 15
        return Int(h % 1_000_003)
    }

    func code(component: Int, blockX: Int, blockY: Int, x: Int, y: Int) -> Int {
        let bits = format.bitsPerSample, n = 1 << (bits - 8)
        let (lo, hi) = range == .full ? (0, (1 << bits) - 1) : component == 0 ? (16 * n, 235 * n) : (16 * n, 240 * n)
        let h = component == 0 ? hash(x, y, 0) : hash(blockX, blockY, component)
        return lo + h % (hi - lo + 1)
    }

    /// The code of `component` at (x, y) of that component's own grid.
    func sample(_ component: Int, _ x: Int, _ y: Int) -> Int {
        if component == 0 { return code(component: 0, blockX: 0, blockY: 0, x: x, y: y) }
        let lx = x << format.chromaShift.x, ly = y << format.chromaShift.y
        return code(component: component, blockX: lx / Self.block, blockY: ly / Self.block, x: 0, y: 0)
    }

    /// (Y', Cb, Cr) codes of luma pixel (x, y).
    func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
        (sample(0, x, y),
         code(component: 1, blockX: x / Self.block, blockY: y / Self.block, x: 0, y: 0),
         code(component: 2, blockX: x / Self.block, blockY: y / Self.block, x: 0, y: 0))
    }

    /// At least 2 pixels from a chroma block's edge.
    static func interior(_ x: Int, _ y: Int) -> Bool {
        (2..<(block - 2)).contains(x % block) && (2..<(block - 2)).contains(y % block)
    }
}

/// Draws frames 1:1 (gravity resize, output the frame's size) and compares every interior pixel
/// with the float reference. 56x48: the 8-bit rows (56, 28 bytes) are padded to 64, so the
/// uploads go through GL_UNPACK_ROW_LENGTH.
@Suite(.serialized) struct ColourConversionTests {
    static let width = 56, height = 48

    /// Largest per-channel difference (0-255) over the interior, with where it happened.
    static func worstError(_ image: RGBAImage, _ pattern: BlockPattern, matrix: ColorMatrix, range: ColorRange)
        -> (error: Double, at: String)
    {
        var worst = 0.0, at = ""
        for y in 0..<height {
            for x in 0..<width where BlockPattern.interior(x, y) {
                let (cy, cb, cr) = pattern.pixel(x, y)
                let expected = FloatReference.rgb(y: Double(cy), cb: Double(cb), cr: Double(cr),
                                                  bits: pattern.format.bitsPerSample, matrix: matrix, range: range)
                let p = image.pixel(x: x, y: y)
                for (got, want) in zip([p.r, p.g, p.b], expected) where abs(Double(got) - want) > worst {
                    worst = abs(Double(got) - want)
                    at = "(\(x),\(y)) codes \(cy),\(cb),\(cr): drew \([p.r, p.g, p.b]), expected \(expected.map { ($0 * 10).rounded() / 10 })"
                }
            }
        }
        return (worst, at)
    }

    static func frame(_ format: Media.PixelFormat, _ matrix: ColorMatrix, _ range: ColorRange) throws -> (VideoFrame, BlockPattern) {
        let pattern = BlockPattern(format: format, range: range)
        let frame = try VideoFrame(format: format, width: width, height: height, colorMatrix: matrix, colorRange: range,
                                   sample: pattern.sample)
        return (frame, pattern)
    }

    /// `frame` as the layer gets it through `conversion`: as decoded, or converted to RGBA first.
    static func through(_ conversion: ColorConversion, _ frame: VideoFrame) throws -> VideoFrame {
        conversion == .cpu ? try RGBAConverter().convert(frame) : frame
    }

    @Test(arguments: Media.PixelFormat.allCases.filter(\.isYCbCr), ColorConversion.allCases)
    func everyMatrixAndRangeMatchesTheFloatReference(format: Media.PixelFormat, conversion: ColorConversion) throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: Self.width, height: Self.height, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual)
        output.layer.gravity = .resize
        for matrix in ColorMatrix.allCases {
            for range in ColorRange.allCases {
                let (frame, pattern) = try Self.frame(format, matrix, range)
                // The frame holds what was written (p010's shift, the plane layout).
                let stored = frame.sample(x: 13, y: 21), written = pattern.pixel(13, 21)
                #expect(stored.y == written.0 && stored.cb == written.1 && stored.cr == written.2)
                try output.draw([try Self.through(conversion, frame)])
                let (error, at) = Self.worstError(try output.screenshot(), pattern, matrix: matrix, range: range)
                #expect(error <= 2, "\(conversion): \(format) \(matrix) \(range): worst \(error) at \(at)")
            }
        }
    }

    /// The integer path (R16UI, filtered in the shader) for GPUs without GL_EXT_texture_norm16.
    @Test func tenBitFormatsThroughIntegerTexturesMatchToo() throws {
        let context = try GLContext.surfaceless()
        let target = try Framebuffer(width: Self.width, height: Self.height)
        let layer = try PlayerLayer(highDepthSampling: .integer)
        layer.gravity = .resize
        let bounds = PixelRect(x: 0, y: 0, width: Self.width, height: Self.height)
        for format in Media.PixelFormat.allCases where format.bitsPerSample > 8 {
            for (matrix, range) in [(ColorMatrix.bt2020, ColorRange.limited), (.bt709, .full), (.bt601, .limited)] {
                let (frame, pattern) = try Self.frame(format, matrix, range)
                target.bind()
                try layer.draw(frame, bounds: bounds)
                let (error, at) = Self.worstError(try target.readPixels(), pattern, matrix: matrix, range: range)
                #expect(error <= 2, "integer \(format) \(matrix) \(range): worst \(error) at \(at)")
            }
        }
        _ = context
    }

    /// Odd sizes: the chroma planes are rounded up, and still line up with the luma.
    @Test(arguments: [Media.PixelFormat.yuv420p, .nv12, .yuv422p10le, .p010le], ColorConversion.allCases)
    func oddSizesLineUp(format: Media.PixelFormat, conversion: ColorConversion) throws {
        let (w, h) = (57, 45)
        let output = try HeadlessOutput(mode: DisplayMode(width: w, height: h, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        let pattern = BlockPattern(format: format, range: .limited)
        let frame = try VideoFrame(format: format, width: w, height: h, colorMatrix: .bt709, colorRange: .limited,
                                   sample: pattern.sample)
        try output.draw([try ColourConversionTests.through(conversion, frame)])
        let image = try output.screenshot()
        var worst = 0.0
        for y in 0..<h {
            for x in 0..<w where BlockPattern.interior(x, y) {
                let (cy, cb, cr) = pattern.pixel(x, y)
                let expected = FloatReference.rgb(y: Double(cy), cb: Double(cb), cr: Double(cr), bits: format.bitsPerSample,
                                                  matrix: .bt709, range: .limited)
                let p = image.pixel(x: x, y: y)
                worst = max(worst, zip([p.r, p.g, p.b].map(Double.init), expected).map { abs($0 - $1) }.max()!)
            }
        }
        #expect(worst <= 2, "\(conversion): \(format) \(w)x\(h): worst \(worst)")
    }

    /// Left-sited chroma (video) is read where the left luma sample is; centred (JPEG) between.
    /// An odd width (31: 16 chroma columns) checks that the chroma grid is not stretched.
    @Test(arguments: [32, 31])
    func chromaSitingLeftAndCentre(width: Int) throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: width, height: 16, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        // Cb alternates 64, 192 from one chroma column to the next; Y and Cr are flat.
        let cb = { (x: Int) in x % 2 == 0 ? 64 : 192 }
        for siting in [ChromaLocation.left, .center] {
            let frame = try VideoFrame(format: .yuv420p, width: width, height: 16, colorMatrix: .bt709, colorRange: .full,
                                       chromaLocation: siting) { component, x, _ in component == 0 ? 128 : component == 1 ? cb(x) : 128 }
            try output.draw([frame])
            let image = try output.screenshot()
            for x in stride(from: 4, to: 28, by: 2) {  // even luma columns, away from the edges
                let j = x / 2
                let expectedCb = siting == .left ? Double(cb(j)) : 0.75 * Double(cb(j)) + 0.25 * Double(cb(j - 1))
                let expected = FloatReference.rgb(y: 128, cb: expectedCb, cr: 128, bits: 8, matrix: .bt709, range: .full)
                let p = image.pixel(x: x, y: 8)
                let error = zip([p.r, p.g, p.b].map(Double.init), expected).map { abs($0 - $1) }.max()!
                #expect(error <= 2, "\(siting) width \(width) x=\(x): drew \([p.r, p.g, p.b]), expected \(expected)")
            }
        }
    }
}
