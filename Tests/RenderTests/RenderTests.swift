import Display
import Foundation
import Media
import Playback
@testable import Render
import Testing
import TestSupport

@Suite struct VideoRectTests {
    let screen = PixelRect(x: 0, y: 0, width: 1920, height: 1080)

    @Test func aspectFitPillarboxesFourByThree() {
        #expect(videoRect(contentWidth: 320, contentHeight: 240, bounds: screen, gravity: .resizeAspect)
            == PixelRect(x: 240, y: 0, width: 1440, height: 1080))
    }

    @Test func aspectFitLetterboxesWideContent() {
        #expect(videoRect(contentWidth: 2400, contentHeight: 1000, bounds: screen, gravity: .resizeAspect)
            == PixelRect(x: 0, y: 140, width: 1920, height: 800))
    }

    @Test func aspectFillCropsAndResizeStretches() {
        #expect(videoRect(contentWidth: 320, contentHeight: 240, bounds: screen, gravity: .resizeAspectFill)
            == PixelRect(x: 0, y: -180, width: 1920, height: 1440))
        #expect(videoRect(contentWidth: 320, contentHeight: 240, bounds: screen, gravity: .resize) == screen)
    }
}

/// Reads pixels back from the headless output. Each test makes its own GL context on its own
/// thread (the test's), so the suite runs serialized to keep llvmpipe's threads to itself.
@Suite(.serialized) struct HeadlessDrawingTests {
    /// The float reference: BT.601 limited range, straight from the definition (Kr = 0.299, Kb = 0.114).
    static func reference(_ s: (y: Int, cb: Int, cr: Int)) -> [Double] {
        let y = (Double(s.y) - 16) / 219, cb = (Double(s.cb) - 128) / 224, cr = (Double(s.cr) - 128) / 224
        let kr = 0.299, kb = 0.114, kg = 1 - kr - kb
        let r = y + 2 * (1 - kr) * cr
        let b = y + 2 * (1 - kb) * cb
        let g = (y - kr * r - kb * b) / kg
        return [r, g, b].map { min(max($0, 0), 1) * 255 }
    }

    @Test func noFrameShowsOnlyTheBackground() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 36, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual, background: RGBColor(hex: "#ff8000")!)
        try output.draw([nil])
        let image = try output.screenshot()
        #expect(output.layer.videoRect == nil)
        for (x, y) in [(0, 0), (32, 18), (63, 35)] {
            let p = image.pixel(x: x, y: y)
            #expect([p.r, p.g, p.b, p.a] == [255, 128, 0, 255])
        }
    }
}

/// Where the GL driver is loaded from before EGL loads it (`DriverPreload`).
@Suite struct DriverPreloadTests {
    /// `LIBGL_DRIVERS_PATH`'s folders first, in order, then `dri` beside the EGL library; the
    /// first that holds the driver's file; none: nil.
    @Test func theDriverIsLookedForWhereMesaLooks() {
        let egl = "/usr/lib/x86_64-linux-gnu/libEGL.so.1.1.0"
        let mesa = "/usr/lib/x86_64-linux-gnu/dri/swrast_dri.so"
        #expect(DriverPreload.driverPath(driversPath: nil, eglLibrary: egl, exists: { $0 == mesa }) == mesa)
        #expect(DriverPreload.driverPath(driversPath: "/a:/b", eglLibrary: egl, exists: { $0 == mesa || $0 == "/b/swrast_dri.so" })
                == "/b/swrast_dri.so")
        #expect(DriverPreload.driverPath(driversPath: "/a", eglLibrary: egl, exists: { _ in true }) == "/a/swrast_dri.so")
        #expect(DriverPreload.driverPath(driversPath: "/a", eglLibrary: nil, exists: { $0 == mesa }) == nil)
        #expect(DriverPreload.driverPath(driversPath: nil, eglLibrary: egl, exists: { _ in false }) == nil)
    }
}
