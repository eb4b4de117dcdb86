import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport
@testable import RenderTests

@Suite(.serialized) struct PlayerLayerGeometryDrawingTests {
    typealias Unit = RenderTests.PlayerLayerGeometryDrawingTests

    /// A phone's portrait clip: stored landscape (the upright picture turned counter-clockwise) with
    /// a display matrix saying "turn 90° clockwise" (ffprobe: rotation of -90.00 degrees, the
    /// legacy tag rotate=90). It must show upright: red top-left, green top-right, blue bottom-left,
    /// white bottom-right.
    @Test func containerRotationShowsAPhoneClipUpright() throws {
        let stored = try TestMedia.make("portrait-stored.mp4", [
            "-f", "lavfi", "-i", "color=c=red:size=90x160:rate=10", "-f", "lavfi", "-i", "color=c=0x00ff00:size=90x160:rate=10",
            "-f", "lavfi", "-i", "color=c=blue:size=90x160:rate=10", "-f", "lavfi", "-i", "color=c=white:size=90x160:rate=10",
            "-filter_complex", "[0][1][2][3]xstack=inputs=4:layout=0_0|w0_0|0_h0|w0_h0,transpose=cclock,format=yuv420p",
            "-t", "0.5", "-c:v", "libx264", "-qp", "0", "-f", "mp4",
        ])
        // ffmpeg 5.1 writes `rotate` metadata as a counter-clockwise angle: 270 gives the phone's -90.
        let phone = try TestMedia.make("portrait-phone.mp4", ["-i", stored, "-c", "copy", "-metadata:s:v:0", "rotate=270", "-f", "mp4"])
        let decoder = try VideoDecoder(path: phone)
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.width == 320 && frame.height == 180)
        #expect(frame.rotation == .clockwise90)

        let output = try HeadlessOutput(mode: DisplayMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        try output.draw([frame])
        let rect = try #require(output.layer.videoRect)
        #expect(rect == PixelRect(x: 656, y: 0, width: 608, height: 1080))
        let image = try output.screenshot()
        func at(_ fx: Double, _ fy: Double) -> [UInt8] {
            let p = image.pixel(x: rect.x + Int(Double(rect.width) * fx), y: rect.y + Int(Double(rect.height) * fy))
            return [p.r, p.g, p.b]
        }
        func near(_ got: [UInt8], _ want: [UInt8]) -> Bool { zip(got, want).allSatisfy { abs(Int($0) - Int($1)) <= 6 } }
        #expect(near(at(0.25, 0.25), [255, 0, 0]), "top-left \(at(0.25, 0.25))")
        #expect(near(at(0.75, 0.25), [0, 255, 0]), "top-right \(at(0.75, 0.25))")
        #expect(near(at(0.25, 0.75), [0, 0, 255]), "bottom-left \(at(0.25, 0.75))")
        #expect(near(at(0.75, 0.75), [255, 255, 255]), "bottom-right \(at(0.75, 0.75))")
        // The display's own rotation goes on top: a portrait screen turned back shows it sideways.
        output.layer.rotation = .clockwise270
        try output.draw([frame])
        #expect(output.layer.videoRect == fullHD)
    }

}

@Suite(.serialized) struct ScreenshotAndImportTests {
    @Test func screenshotPNGDecodesToTheSamePixels() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 96, height: 54, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual, background: RGBColor(hex: "#204060")!)
        let frame = try VideoFrame(format: .yuv444p, width: 32, height: 32, colorMatrix: .bt709, colorRange: .limited) { c, x, y in
            c == 0 ? 16 + (x * 7 + y * 3) % 220 : c == 1 ? 60 + x * 4 : 200 - y * 4
        }
        try output.draw([frame])
        let image = try output.screenshot()
        let png = try output.screenshotPNG()
        #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        let path = TestMedia.folder + "/screenshot-\(UUID().uuidString).png"
        try png.write(to: URL(fileURLWithPath: path))
        // Decoded by the ffmpeg command, independently of our encoder's caller.
        let decoded = try Command.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgba", "-"])
        #expect(decoded.status == 0, "\(decoded.errorText)")
        #expect([UInt8](decoded.output) == image.pixels)
    }

}
