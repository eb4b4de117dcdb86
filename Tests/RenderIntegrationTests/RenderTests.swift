import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport
@testable import RenderTests

/// Reads pixels back from the headless output. Each test makes its own GL context on its own
/// thread (the test's), so the suite runs serialized to keep llvmpipe's threads to itself.
@Suite(.serialized) struct HeadlessDrawingTests {
    typealias Unit = RenderTests.HeadlessDrawingTests

    @Test(arguments: ColorConversion.allCases)
    func knownColoursAreDrawnInTheRightPlaces(conversion: ColorConversion) throws {
        let decoder = try VideoDecoder(path: try TestMedia.quadrants())
        let decoded = try #require(try decoder.nextFrame())
        let frame = conversion == .cpu ? try RGBAConverter().convert(decoded) : decoded
        #expect(frame.pixelFormat == (conversion == .cpu ? .rgba : .yuv420p))
        let output = try HeadlessOutput(mode: DisplayMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual, background: RGBColor(hex: "#204060")!)
        try output.draw([frame])
        try output.queue(forVsync: 0)
        #expect(try output.waitForEvent(timeout: 1) == .flipped(vsync: 0))
        let image = try output.screenshot()
        // A 4:3 picture fits as 1440x1080 in the middle; the sides show the background.
        #expect(output.layer.videoRect == PixelRect(x: 240, y: 0, width: 1440, height: 1080))
        for (x, y) in [(10, 540), (1910, 20), (239, 1000), (1680, 540)] {
            let p = image.pixel(x: x, y: y)
            #expect([p.r, p.g, p.b] == [0x20, 0x40, 0x60], "background at \(x),\(y)")
        }
        // The middle of each quadrant: (source sample) -> (screen pixel).
        let quadrants = [("red", 80, 60, 600, 270), ("green", 240, 60, 1320, 270),
                         ("blue", 80, 180, 600, 810), ("white", 240, 180, 1320, 810)]
        for (name, sx, sy, x, y) in quadrants {
            let expected = Unit.reference(decoded.sample(x: sx, y: sy))
            let p = image.pixel(x: x, y: y)
            let got = [p.r, p.g, p.b].map(Double.init)
            let error = zip(got, expected).map { abs($0 - $1) }.max()!
            #expect(error <= 2, "\(conversion): \(name): drew \(got), expected \(expected)")
        }
        // And they are the colours asked for, within what 8-bit limited-range coding keeps.
        let red = image.pixel(x: 600, y: 270), white = image.pixel(x: 1320, y: 810)
        #expect(red.r > 250 && red.g < 5 && red.b < 5)
        #expect(white.r > 250 && white.g > 250 && white.b > 250)
    }

}
