import Display
import Foundation
@testable import Media
import Playback
import Render
import Testing
import TestSupport
@testable import RenderTests

/// Zero-copy end to end: a clip decoded by VAAPI or a DRM decoder, its frames kept in DMA-BUFs,
/// imported as EGL images and drawn, must look like the same frames decoded in software (within
/// 4/255). Needs a DRM render node with a working decoder and an EGL display with
/// EGL_EXT_image_dma_buf_import; where any is missing it is skipped (cancelled), naming exactly what.
/// Run on hardware: `make hw-test` (or `swift test --filter ZeroCopyHardwareTests`).
@Suite(.serialized) struct ZeroCopyHardwareTests {
    @Test func hardwareFramesDrawnThroughDMABufMatchSoftware() throws {
        var missing: [String] = []
        let nodes = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []).filter { $0.hasPrefix("renderD") }
        if nodes.isEmpty { missing.append("no DRM render node (/dev/dri/renderD*)") }
        let output = try HeadlessOutput(mode: DisplayMode(width: 320, height: 240, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.gravity = .resize
        let support = DMABufDisplaySupport(context: output.context)
        if !support.importsDMABufs { missing.append("EGL_EXT_image_dma_buf_import on \(support.renderer)") }
        if !support.samplesExternalImages { missing.append("GL_OES_EGL_image_external_essl3 on \(support.renderer)") }
        let clip = try TestMedia.quadrants()
        var decoder: VideoDecoder?
        if missing.isEmpty {
            let capabilities = output.openCapabilities(conversion: .shader)  // makes the layer's importer
            if let failure = capabilities.dmabuf.importerFailure { missing.append("a DMA-BUF importer (\(failure))") }
            let target = DMABufInterop(support: capabilities.dmabuf)
            var why: [String] = []
            for kind in [HardwareDecoding.vaapi, .drm] where missing.isEmpty {
                let candidate = try VideoDecoder(path: clip, hardware: kind, interop: target)
                let path = candidate.decodingPath
                if path.hwdecCurrent == kind.rawValue && path.interop == "dmabuf" {
                    decoder = candidate
                    break
                }
                why.append("\(kind.rawValue): \(path.hwdecCurrent == "no" ? path.fallbackReason ?? "not in use" : "interop \(path.interop): \(path.interopReason ?? "?")")")
            }
            if decoder == nil { missing.append("a hardware decoder giving importable DRM PRIME frames (\(why.joined(separator: "; ")))") }
        }
        guard let decoder, missing.isEmpty else {
            try Test.cancel("needs hardware this machine lacks: \(missing.joined(separator: "; "))")
        }
        let software = try VideoDecoder(path: clip)
        var compared = 0
        while compared < 5, let hw = try decoder.nextFrame(), let sw = try software.nextFrame() {
            #expect(hw.drmPrime != nil, "frame \(compared) was copied, not kept in DMA-BUFs")
            #expect(hw.pts == sw.pts)
            try output.draw([hw])
            let viaDMABuf = try output.screenshot()
            try output.draw([sw])
            let viaUpload = try output.screenshot()
            // Inside the quadrants, away from the edges where chroma filtering may differ.
            var worst = 0
            for y in stride(from: 8, to: 240, by: 4) where abs(y - 120) > 6 && y < 232 {
                for x in stride(from: 8, to: 320, by: 4) where abs(x - 160) > 6 && x < 312 {
                    let a = viaDMABuf.pixel(x: x, y: y), b = viaUpload.pixel(x: x, y: y)
                    worst = max(worst, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
                }
            }
            #expect(worst <= 4, "frame \(compared): DMA-BUF path differs from software by \(worst)/255")
            compared += 1
        }
        #expect(compared == 5)
        #expect(!decoder.decodingPath.interopFellBack, "\(decoder.decodingPath.interopReason ?? "")")
        print("ZeroCopyHardwareTests: \(compared) frames via \(decoder.decodingPath.hwdecCurrent) dmabuf on \(support.renderer)")
    }

    /// Here (llvmpipe) the display's own support says copy, naming the extension.

}
