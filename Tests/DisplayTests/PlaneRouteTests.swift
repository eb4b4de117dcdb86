@testable import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport

/// The Y'CbCr plane routes of the planes output (DMA-BUF frames attached to a plane, software
/// frames copied into Y'CbCr dumb buffers) in the parts that need no plane: reading a plane's
/// IN_FORMATS, the route's choice and its reason, the plane's rectangles and colour properties,
/// and the copy into a buffer layout, checked byte for byte against FFmpeg. No plane here shows a
/// Y'CbCr picture (virtio-gpu lists XRGB formats only; the VM's kernel has no vkms): what the
/// kernel would do with these values is not exercised.
@Suite("Y'CbCr plane routes")
struct PlaneRouteTests {
    static let nv12 = DRMPrimeDescriptor.fourcc("NV12"), yu12 = DRMPrimeDescriptor.fourcc("YU12")
    static let p010 = DRMPrimeDescriptor.fourcc("P010"), xr24 = DRMPrimeDescriptor.fourcc("XR24")
    static let ar24 = DRMPrimeDescriptor.fourcc("AR24")
    static let tiled: UInt64 = 0x0100_0000_0000_0001  // I915_FORMAT_MOD_X_TILED

    /// A `drm_format_modifier_blob` as the kernel lays it out: header, formats, then 24-byte
    /// modifier entries (mask, offset, pad, modifier), native byte order.
    static func blob(formats: [UInt32], entries: [(mask: UInt64, offset: UInt32, modifier: UInt64)], version: UInt32 = 1,
                     formatOffset: UInt32? = nil, modifierCount: UInt32? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v) { bytes += $0 } }
        let fOffset = formatOffset ?? 24
        let mOffset = UInt32(24 + formats.count * 4 + 7) & ~7
        let header: [UInt32] = [version, 0, UInt32(formats.count), fOffset, modifierCount ?? UInt32(entries.count), mOffset]
        for v in header { put(v) }
        for f in formats { put(f) }
        while bytes.count < Int(mOffset) { bytes.append(0) }
        for e in entries {
            put(e.mask)
            put(e.offset)
            put(UInt32(0))
            put(e.modifier)
        }
        return bytes
    }

    @Test("IN_FORMATS: formats and the modifiers each takes, offsets past 64 formats, bad blobs named")
    func inFormatsBlob() throws {
        let formats = [Self.xr24, Self.nv12, Self.p010, Self.yu12]
        let parsed = try PlaneFormatModifiers(blob: Self.blob(formats: formats, entries: [(0b1111, 0, DRMModifier.linear), (0b0011, 0, Self.tiled)]))
        #expect(parsed.formats == formats)
        #expect(parsed.modifiers[Self.xr24] == [DRMModifier.linear, Self.tiled])
        #expect(parsed.modifiers[Self.nv12] == [DRMModifier.linear, Self.tiled])
        #expect(parsed.modifiers[Self.p010] == [DRMModifier.linear])
        // A mask that starts at format 64: bit 2 is format 66.
        let many = (0..<70).map { UInt32(0x3030_3030 + $0) }
        let far = try PlaneFormatModifiers(blob: Self.blob(formats: many, entries: [(0b100, 64, Self.tiled), (1 << 63, 0, DRMModifier.linear)]))
        #expect(far.modifiers[many[66]] == [Self.tiled])
        #expect(far.modifiers[many[63]] == [DRMModifier.linear])
        #expect(far.modifiers.count == 2)
        // Bad blobs: each says what is wrong, none traps.
        #expect(throws: PlaneBlobError.self) { try PlaneFormatModifiers(blob: [1, 0, 0, 0]) }
        #expect(throws: PlaneBlobError.self) { try PlaneFormatModifiers(blob: Self.blob(formats: formats, entries: [], version: 0)) }
        #expect(throws: PlaneBlobError.self) { try PlaneFormatModifiers(blob: Self.blob(formats: formats, entries: [], formatOffset: 4000)) }
        #expect(throws: PlaneBlobError.self) { try PlaneFormatModifiers(blob: Self.blob(formats: formats, entries: [], modifierCount: 0xFFFF_FFFF)) }
        do {
            _ = try PlaneFormatModifiers(blob: Self.blob(formats: formats, entries: [(0b10000, 0, DRMModifier.linear)]))
            Issue.record("a mask naming format 4 of 4 was accepted")
        } catch {
            #expect(error.description.contains("format 4 of 4"), "\(error)")
        }
        // A plane without IN_FORMATS takes linear (and implicit) buffers of its formats only.
        let plain = PlaneDescription(id: 40, kind: .overlay, formats: [Self.nv12])
        #expect(plain.lists(Self.nv12, modifier: DRMModifier.linear) && plain.lists(Self.nv12, modifier: DRMModifier.invalid))
        #expect(!plain.lists(Self.nv12, modifier: Self.tiled) && !plain.lists(Self.p010, modifier: DRMModifier.linear))
        let modern = PlaneDescription(id: 41, kind: .overlay, formats: formats, modifiers: parsed.modifiers)
        #expect(modern.lists(Self.nv12, modifier: Self.tiled) && !modern.lists(Self.p010, modifier: Self.tiled))
    }

    static let virtioPrimary = PlaneDescription(id: 31, kind: .primary, formats: [xr24, ar24],
                                                properties: ["type", "FB_ID", "CRTC_ID", "SRC_X", "IN_FORMATS"])
    static let cursor = PlaneDescription(id: 34, kind: .cursor, formats: [ar24])
    static func overlay(_ id: UInt32 = 45, formats: [UInt32] = [xr24, nv12, p010], modifiers: [UInt32: Set<UInt64>]? = nil,
                        rotations: [String: UInt64] = ["rotate-0": 1, "rotate-180": 4]) -> PlaneDescription {
        PlaneDescription(id: id, kind: .overlay, formats: formats, modifiers: modifiers,
                         properties: ["type", "FB_ID", "CRTC_ID", "rotation", "COLOR_ENCODING", "COLOR_RANGE"], rotations: rotations,
                         colorEncodings: ["ITU-R BT.601 YCbCr": 0, "ITU-R BT.709 YCbCr": 1], colorRanges: ["YCbCr limited range": 0, "YCbCr full range": 1])
    }

    @Test("the route: a Y'CbCr overlay where one qualifies, else XRGB with the reason naming what is missing")
    func routeChoice() throws {
        // virtio-gpu: a primary plane with XRGB formats and a cursor.
        let virtio = choosePlaneRoute(planes: [Self.virtioPrimary, Self.cursor], conditions: PlaneRouteConditions(atomic: true))
        #expect(virtio.route == .xrgb)
        #expect(virtio.reason.contains("the CRTC has no overlay plane"), "\(virtio.reason)")
        #expect(virtio.reason.contains("plane 31 (primary) lists XR24, AR24"), "\(virtio.reason)")
        #expect(virtio.reason.contains("1 cursor plane not used"), "\(virtio.reason)")
        // An overlay with NV12 and P010 linear.
        let good = choosePlaneRoute(planes: [Self.virtioPrimary, Self.overlay()], conditions: PlaneRouteConditions(atomic: true))
        guard case .yuvPlane(let setup) = good.route else { Issue.record("no Y'CbCr route: \(good.reason)"); return }
        #expect(setup.plane.id == 45 && setup.formats == [.nv12, .p010] && setup.rotation == 1)
        #expect(good.reason.contains("plane 45 (overlay) lists NV12, P010") && good.reason.contains("COLOR_ENCODING, COLOR_RANGE"), "\(good.reason)")
        // The same planes on a legacy driver, with overlays drawn, with a mosaic: XRGB, saying why.
        let legacy = choosePlaneRoute(planes: [Self.overlay()], conditions: PlaneRouteConditions(atomic: false))
        #expect(legacy.route == .xrgb && legacy.reason.contains("legacy"), "\(legacy.reason)")
        let blended = choosePlaneRoute(planes: [Self.overlay()], conditions: PlaneRouteConditions(atomic: true, blending: "overlays"))
        #expect(blended.route == .xrgb && blended.reason.hasPrefix("overlays are drawn into the picture"), "\(blended.reason)")
        let mosaic = choosePlaneRoute(planes: [Self.overlay()], conditions: PlaneRouteConditions(atomic: true, pictures: 4))
        #expect(mosaic.route == .xrgb && mosaic.reason.contains("mosaic of 4"), "\(mosaic.reason)")
        // An overlay that lists NV12 only tiled, one with XRGB only: named, the next one taken.
        let tiledOnly = Self.overlay(46, formats: [Self.nv12], modifiers: [Self.nv12: [Self.tiled]])
        let rgbOnly = Self.overlay(47, formats: [Self.xr24])
        let second = choosePlaneRoute(planes: [tiledOnly, rgbOnly, Self.overlay(48, formats: [Self.yu12])], conditions: PlaneRouteConditions(atomic: true))
        guard case .yuvPlane(let s2) = second.route else { Issue.record("no Y'CbCr route: \(second.reason)"); return }
        #expect(s2.plane.id == 48 && s2.formats == [.yuv420])
        let none = choosePlaneRoute(planes: [tiledOnly, rgbOnly], conditions: PlaneRouteConditions(atomic: true))
        #expect(none.route == .xrgb)
        #expect(none.reason.contains("plane 46 (overlay) lists NV12: none of NV12, YU12, P010 with the linear modifier"), "\(none.reason)")
        #expect(none.reason.contains("plane 47 (overlay) lists XR24"), "\(none.reason)")
        // A turned display: the plane must have the counter-clockwise KMS rotation for it.
        let turned = choosePlaneRoute(planes: [Self.overlay()], conditions: PlaneRouteConditions(atomic: true, displayRotation: .clockwise90))
        #expect(turned.route == .xrgb && turned.reason.contains("no rotate-270 rotation for the display's 90° turn"), "\(turned.reason)")
        let canTurn = Self.overlay(rotations: ["rotate-0": 1, "rotate-270": 8])
        let turnedOK = choosePlaneRoute(planes: [canTurn], conditions: PlaneRouteConditions(atomic: true, displayRotation: .clockwise90))
        #expect(turnedOK.route == .yuvPlane(YUVPlaneSetup(plane: canTurn, formats: [.nv12, .p010], rotation: 8)))
        #expect(kmsRotationName(.clockwise270) == "rotate-90" && kmsRotationName(.upsideDown) == "rotate-180")
    }

    @Test("each frame's way on a Y'CbCr plane: attached, copied, converted, or XRGB")
    func frameRoutes() {
        let setup = YUVPlaneSetup(plane: Self.overlay(modifiers: [Self.nv12: [DRMModifier.linear, Self.tiled], Self.p010: [DRMModifier.linear],
                                                                 Self.xr24: [DRMModifier.linear]]),
                                  formats: [.nv12, .p010], rotation: 1)
        #expect(routeFrame(format: .nv12, prime: (Self.nv12, Self.tiled, 1), turn: .none, setup: setup) == .attach(fourcc: Self.nv12, modifier: Self.tiled))
        // P010 tiled is not listed, nor are two-layer descriptors: the frame is copied.
        #expect(routeFrame(format: .p010le, prime: (Self.p010, Self.tiled, 1), turn: .none, setup: setup) == .copy(.p010))
        #expect(routeFrame(format: .nv12, prime: (DRMPrimeDescriptor.fourcc("R8  "), DRMModifier.linear, 2), turn: .none, setup: setup) == .copy(.nv12))
        #expect(routeFrame(format: .yuv420p, prime: nil, turn: .none, setup: setup) == .convert(.nv12))
        #expect(routeFrame(format: .yuv444p, prime: nil, turn: .none, setup: setup) == .convert(.nv12))
        #expect(routeFrame(format: .yuv420p10le, prime: nil, turn: .none, setup: setup) == .convert(.p010))
        #expect(routeFrame(format: .yuv420p10le, prime: nil, turn: .none, setup: YUVPlaneSetup(plane: Self.overlay(), formats: [.nv12], rotation: nil)) == .convert(.nv12))
        #expect(routeFrame(format: .rgba, prime: nil, turn: .none, setup: setup) == .xrgb("rgba frames are not Y'CbCr"))
        #expect(routeFrame(format: .nv12, prime: nil, turn: .upsideDown, setup: setup) == .copy(.nv12))
        #expect(routeFrame(format: .nv12, prime: nil, turn: .clockwise90, setup: setup)
                == .xrgb("plane 45 (overlay) has no rotate-270 rotation for the picture's 90° turn"))
    }

    @Test("SRC_* (16.16) and CRTC_* for fit, fill and stretch, a wall's crop, chroma-aligned crops")
    func rectangles() throws {
        let screen = PixelRect(x: 0, y: 0, width: 1280, height: 800)
        func rects(_ gravity: VideoGravity, wall: WallPlacement? = nil, inBuffer: Bool = false, format: PixelFormat = .nv12) throws -> PlaneRectangles {
            let piece = try #require(scanoutPiece(frameWidth: 1920, frameHeight: 1080, displayWidth: 1920, frameRotation: .none, displayRotation: .none,
                                                  gravity: gravity, bounds: screen, wall: wall))
            return try #require(planeRectangles(piece, format: format, frameWidth: 1920, frameHeight: 1080, inBuffer: inBuffer))
        }
        let full = (UInt64(1920) << 16, UInt64(1080) << 16)
        let fit = try rects(.resizeAspect)   // letterboxed: 1280x720 at y 40, the whole frame
        #expect(fit == PlaneRectangles(srcX: 0, srcY: 0, srcW: full.0, srcH: full.1, crtcX: 0, crtcY: 40, crtcW: 1280, crtcH: 720))
        let fill = try rects(.resizeAspectFill)   // 1080 * 1.6 = 1728 of the 1920 columns, centred
        #expect(fill == PlaneRectangles(srcX: 96 << 16, srcY: 0, srcW: 1728 << 16, srcH: full.1, crtcX: 0, crtcY: 0, crtcW: 1280, crtcH: 800))
        let stretch = try rects(.resize)
        #expect(stretch == PlaneRectangles(srcX: 0, srcY: 0, srcW: full.0, srcH: full.1, crtcX: 0, crtcY: 0, crtcW: 1280, crtcH: 800))
        // Copied into its own buffer (path 2): the source starts at the buffer's corner.
        #expect(try rects(.resizeAspectFill, inBuffer: true).srcX == 0)
        #expect(try rects(.resizeAspectFill, inBuffer: true).srcW == 1728 << 16)
        // The right screen of a two-screen wall: the right half of the frame, the whole screen.
        let wall = WallPlacement(window: PixelRect(x: 1280, y: 0, width: 1280, height: 800), region: PixelRect(x: 0, y: 0, width: 2560, height: 800))
        let right = try rects(.resize, wall: wall)
        #expect(right == PlaneRectangles(srcX: 960 << 16, srcY: 0, srcW: 960 << 16, srcH: full.1, crtcX: 0, crtcY: 0, crtcW: 1280, crtcH: 800))
        // An odd crop widens to whole chroma samples for 4:2:0, not for 4:4:4.
        let odd = ScanoutPiece(crop: FrameCrop(x: 97, y: 3, width: 101, height: 51), destination: PixelRect(x: 5, y: 6, width: 300, height: 200), turn: .none)
        let aligned = try #require(planeRectangles(odd, format: .nv12, frameWidth: 1920, frameHeight: 1080, inBuffer: false))
        #expect(aligned == PlaneRectangles(srcX: 96 << 16, srcY: 2 << 16, srcW: 102 << 16, srcH: 52 << 16, crtcX: 5, crtcY: 6, crtcW: 300, crtcH: 200))
        let exact = try #require(planeRectangles(odd, format: .yuv444p, frameWidth: 1920, frameHeight: 1080, inBuffer: false))
        #expect(exact.srcX == 97 << 16 && exact.srcW == 101 << 16)
        #expect(exact.properties.map(\.name) == ["SRC_X", "SRC_Y", "SRC_W", "SRC_H", "CRTC_X", "CRTC_Y", "CRTC_W", "CRTC_H"])
        #expect(planeRectangles(ScanoutPiece(crop: odd.crop, destination: PixelRect(x: 0, y: 0, width: 0, height: 10), turn: .none),
                                format: .nv12, frameWidth: 1920, frameHeight: 1080, inBuffer: false) == nil)
    }

    @Test("COLOR_ENCODING and COLOR_RANGE from the frame's matrix and range; what the plane lacks is named")
    func colourProperties() {
        let plane = Self.overlay()
        let hd = planeColorProperties(matrix: .bt709, range: .limited, plane: plane)
        #expect(hd.encoding == 1 && hd.range == 0 && hd.missing.isEmpty)
        let sd = planeColorProperties(matrix: .bt601, range: .full, plane: plane)
        #expect(sd.encoding == 0 && sd.range == 1 && sd.missing.isEmpty)
        let uhd = planeColorProperties(matrix: .bt2020, range: .limited, plane: plane)
        #expect(uhd.encoding == nil && uhd.range == 0 && uhd.missing == ["COLOR_ENCODING has no ITU-R BT.2020 YCbCr"])
        let bare = planeColorProperties(matrix: .bt709, range: .full, plane: PlaneDescription(id: 50, kind: .overlay, formats: [Self.nv12]))
        #expect(bare.encoding == nil && bare.range == nil && bare.missing == ["no COLOR_ENCODING", "no COLOR_RANGE"])
    }

    @Test("a Y'CbCr dumb buffer's plane layout from the driver's pitch and size, checked")
    func bufferLayout() throws {
        #expect(YUVBufferLayout.dumbRequest(.nv12, width: 67, height: 37)! == (68, 56, 8))
        #expect(YUVBufferLayout.dumbRequest(.p010, width: 67, height: 37)! == (68, 56, 16))
        #expect(YUVBufferLayout.dumbRequest(.nv12, width: 0, height: 37) == nil)
        let nv12 = try #require(YUVBufferLayout(.nv12, width: 67, height: 37, pitch: 128, size: 128 * 56))
        #expect(nv12.planes == [.init(offset: 0, pitch: 128, rowBytes: 67, rows: 37), .init(offset: 128 * 37, pitch: 128, rowBytes: 68, rows: 19)])
        let yu12 = try #require(YUVBufferLayout(.yuv420, width: 67, height: 37, pitch: 128, size: 128 * 56))
        let cb = YUVBufferLayout.Span(offset: 128 * 37, pitch: 64, rowBytes: 34, rows: 19)
        let cr = YUVBufferLayout.Span(offset: 128 * 37 + 64 * 19, pitch: 64, rowBytes: 34, rows: 19)
        #expect(yu12.planes == [YUVBufferLayout.Span(offset: 0, pitch: 128, rowBytes: 67, rows: 37), cb, cr])
        let p010 = try #require(YUVBufferLayout(.p010, width: 67, height: 37, pitch: 192, size: 192 * 56))
        #expect(p010.planes == [.init(offset: 0, pitch: 192, rowBytes: 134, rows: 37), .init(offset: 192 * 37, pitch: 192, rowBytes: 136, rows: 19)])
        #expect(YUVBufferLayout(.p010, width: 67, height: 37, pitch: 128, size: 1 << 20) == nil)   // a row does not fit
        #expect(YUVBufferLayout(.nv12, width: 67, height: 37, pitch: 128, size: 128 * 55) == nil)  // chroma does not fit
        #expect(YUVBufferLayout(.yuv420, width: 67, height: 37, pitch: 129, size: 1 << 20) == nil) // no half pitch
    }
}

/// Software frames into Y'CbCr buffers, byte for byte against FFmpeg: the source frame is made
/// by ffmpeg (raw video, decoded here), the expected bytes by ffmpeg's crop and format filters.
extension PlaneRouteTests {
    /// FFmpeg's test pattern at `width` x `height` (odd sizes: cropped from the next even one) as
    /// packed raw planes in `format`.
    static func raw(_ format: String, width: Int, height: Int) throws -> String {
        try TestMedia.make("planes-src-\(format)-\(width)x\(height).raw", [
            "-f", "lavfi", "-i", "testsrc2=size=\(width + 1)x\(height + 1):rate=1", "-vf", "crop=\(width):\(height):1:1:exact=1,format=\(format)",
            "-frames:v", "1", "-f", "rawvideo",
        ])
    }

    /// A frame (FFmpeg's padded rows) holding the samples of a raw `format` picture FFmpeg made.
    static func frame(_ format: PixelFormat, raw path: String, width: Int, height: Int) throws -> VideoFrame {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let bps = format.bytesPerSample
        let (cw, ch) = ((width + 1) / 2, (height + 1) / 2)
        func sample(_ at: Int) -> Int {
            bps == 1 ? Int(bytes[at]) : (Int(bytes[at]) | Int(bytes[at + 1]) << 8) >> format.sampleShift
        }
        let lumaBytes = width * height * bps
        struct ShortFile: Error, CustomStringConvertible { var description: String }
        let needed = lumaBytes + (format.interleavedChroma ? 1 : 2) * (format.interleavedChroma ? 2 : 1) * cw * ch * bps
        guard bytes.count == needed else { throw ShortFile(description: "\(path): \(bytes.count) bytes, \(needed) expected for \(format) \(width)x\(height)") }
        return try VideoFrame(format: format, width: width, height: height, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            if c == 0 { return sample((y * width + x) * bps) }
            if format.interleavedChroma { return sample(lumaBytes + ((y * cw + x) * 2 + (c - 1)) * bps) }
            return sample(lumaBytes + (c - 1) * cw * ch * bps + (y * cw + x) * bps)
        }
    }

    static func expected(_ source: String, format sourceFormat: PixelFormat, width: Int, height: Int, crop: FrameCrop, to format: String) throws -> [UInt8] {
        let name = "planes-want-\(URL(fileURLWithPath: source).lastPathComponent)-\(crop.description)-\(format).raw"
        let path = try TestMedia.make(name, ["-f", "rawvideo", "-pixel_format", sourceFormat.rawValue, "-video_size", "\(width)x\(height)",
                                             "-i", source, "-vf", "crop=\(crop.width):\(crop.height):\(crop.x):\(crop.y):exact=1,format=\(format)",
                                             "-frames:v", "1", "-f", "rawvideo"])
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test("frames copied or converted into a Y'CbCr buffer match FFmpeg's crop byte for byte, odd sizes included",
          arguments: [(PixelFormat.nv12, YUVScanoutFormat.nv12, "nv12"), (.yuv420p, .yuv420, "yuv420p"), (.p010le, .p010, "p010le"),
                      (.yuv420p, .nv12, "nv12"), (.yuv420p10le, .p010, "p010le"), (.nv12, .yuv420, "yuv420p")])
    func copyIntoBuffer(source: PixelFormat, target: YUVScanoutFormat, ffmpegTarget: String) throws {
        let (width, height) = (67, 37)
        let file = try Self.raw(source.rawValue, width: width, height: height)
        let frame = try Self.frame(source, raw: file, width: width, height: height)
        let writer = YUVPlaneWriter()
        // Whole, an inner crop of odd size, one at an odd position (widened to whole chroma samples).
        for asked in [FrameCrop(x: 0, y: 0, width: width, height: height), FrameCrop(x: 10, y: 4, width: 33, height: 21),
                      FrameCrop(x: 11, y: 5, width: 40, height: 30)] {
            let crop = ScanoutConverter.aligned(asked, format: frame.pixelFormat, width: width, height: height)
            let request = try #require(YUVBufferLayout.dumbRequest(target, width: crop.width, height: crop.height))
            // A padded pitch, as drivers give, and a buffer marked so that stray writes show.
            let pitch = (request.width * request.bitsPerPixel / 8 + 63) / 64 * 64 + 64
            let layout = try #require(YUVBufferLayout(target, width: crop.width, height: crop.height, pitch: pitch, size: pitch * request.height))
            var buffer = [UInt8](repeating: 0xA5, count: layout.size)
            try buffer.withUnsafeMutableBytes { try writer.write(frame, crop: asked, into: $0, layout: layout) }
            let want = try Self.expected(file, format: source, width: width, height: height, crop: crop, to: ffmpegTarget)
            var at = 0
            for (index, span) in layout.planes.enumerated() {
                var mismatches = 0
                for row in 0..<span.rows {
                    let got = buffer[span.offset + row * span.pitch ..< span.offset + row * span.pitch + span.rowBytes]
                    guard at + span.rowBytes <= want.count else { Issue.record("FFmpeg's \(want.count) bytes end early"); return }
                    // P010's value is a word's high 10 bits (FFmpeg repeats them in the low 6, the test frame leaves 0 there).
                    var expected = Array(want[at ..< at + span.rowBytes])
                    if target == .p010 && source != .p010le && index == 1 && crop.width % 2 == 1 {
                        // FFmpeg's conversion leaves the last Cb Cr pair of an odd row 0; the writer repeats its neighbour.
                        #expect(expected.suffix(4).allSatisfy { $0 == 0 }, "FFmpeg wrote the odd row's last chroma pair: drop the writer's edge fill")
                        expected.replaceSubrange(expected.count - 4 ..< expected.count, with: expected[expected.count - 8 ..< expected.count - 4])
                    }
                    let same = target == .p010 ? zip(got, expected).enumerated().allSatisfy { i, p in i % 2 == 1 ? p.0 == p.1 : p.0 & 0xC0 == p.1 & 0xC0 }
                                               : got.elementsEqual(expected)
                    if !same { mismatches += 1 }
                    at += span.rowBytes
                    // A copy leaves the row's padding up to the pitch alone (swscale may write into it).
                    let pad = span.offset + row * span.pitch + span.rowBytes
                    if source == target.pixelFormat && span.pitch > span.rowBytes && pad < buffer.count {
                        #expect(buffer[pad] == 0xA5, "plane \(index) row \(row) padding written")
                    }
                }
                #expect(mismatches == 0, "\(source) -> \(target), crop \(crop): plane \(index): \(mismatches) of \(span.rows) rows differ from FFmpeg's")
            }
            #expect(at == want.count, "\(source) -> \(target), crop \(crop): \(at) bytes compared, FFmpeg wrote \(want.count)")
        }
        // A crop that does not match the layout is refused, naming the frame.
        let layout = try #require(YUVBufferLayout(target, width: 10, height: 10, pitch: 64, size: 64 * 15))
        var small = [UInt8](repeating: 0, count: layout.size)
        #expect(throws: MediaError.self) {
            try small.withUnsafeMutableBytes { try writer.write(frame, crop: FrameCrop(x: 0, y: 0, width: 12, height: 10), into: $0, layout: layout) }
        }
    }
}
