import Display
import Testing

/// The choice of scan-out format from what a (fake) device reports for its plane, GBM and EGL.
@Suite("KMS scan-out format choice")
struct KMSFormatTests {
    static let all = ScanoutFormatReport(plane: ["XR24", "AR24", "XR30"], gbm: [.xrgb8888, .xrgb2101010],
                                         egl: [.xrgb8888, .xrgb2101010])

    @Test("10-bit is used where the plane, GBM and EGL all have it")
    func tenBitWhenSupported() {
        let choice = chooseScanoutFormat(.xrgb2101010, report: Self.all)
        #expect(choice.format == .xrgb2101010)
        #expect(choice.missing.isEmpty)
    }

    @Test("XRGB8888 is asked for: used without probing the 10-bit support")
    func eightBitAsked() {
        let none = ScanoutFormatReport(plane: [], gbm: [], egl: [])
        let eight = chooseScanoutFormat(.xrgb8888, report: none)
        #expect(eight.format == .xrgb8888 && eight.missing.isEmpty)
        #expect(chooseScanoutFormat(.xrgb8888, report: Self.all).format == .xrgb8888)
    }

    @Test("each missing piece alone makes it fall back to XRGB8888, naming that piece only")
    func fallbackNamesWhatIsMissing() {
        var plane = Self.all
        plane.plane = ["XR24", "AR24", "XB24"]   // virtio-gpu's primary plane, say
        var gbm = Self.all
        gbm.gbm = [.xrgb8888]
        var egl = Self.all
        egl.egl = [.xrgb8888]
        for (report, word) in [(plane, "primary plane"), (gbm, "GBM"), (egl, "EGL")] {
            let choice = chooseScanoutFormat(.xrgb2101010, report: report)
            #expect(choice.format == .xrgb8888)
            #expect(choice.missing.count == 1, "\(choice.missing)")
            #expect(choice.missing.first?.contains(word) == true, "\(choice.missing)")
            #expect(choice.missing.first?.contains("XR30") == true, "\(choice.missing)")
        }
        let planeChoice = chooseScanoutFormat(.xrgb2101010, report: plane)
        #expect(planeChoice.missing.first?.contains("AR24, XB24, XR24") == true, "the plane's list, sorted: \(planeChoice.missing)")
    }

    @Test("nothing reported: every piece is named")
    func nothingReported() {
        let choice = chooseScanoutFormat(.xrgb2101010, report: ScanoutFormatReport(plane: [], gbm: [], egl: []))
        #expect(choice.format == .xrgb8888)
        #expect(choice.missing.count == 3)
    }

    @Test("the config names map to the DRM fourccs")
    func fourccs() {
        #expect(KMSPixelFormat(rawValue: "xrgb2101010")?.fourcc == "XR30")
        #expect(KMSPixelFormat(rawValue: "xrgb8888")?.fourcc == "XR24")
        #expect(KMSPixelFormat.xrgb2101010.bitsPerChannel == 10)
        #expect(KMSPixelFormat(rawValue: "rgb565") == nil)
    }
}
