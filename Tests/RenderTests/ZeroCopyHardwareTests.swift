import Display
import Foundation
@testable import Media
import Playback
import Render
import Testing
import TestSupport

/// Zero-copy end to end: a clip decoded by VAAPI or a DRM decoder, its frames kept in DMA-BUFs,
/// imported as EGL images and drawn, must look like the same frames decoded in software (within
/// 4/255). Needs a DRM render node with a working decoder and an EGL display with
/// EGL_EXT_image_dma_buf_import; where any is missing it is skipped (cancelled), naming exactly what.
/// Run on hardware: `make hw-test` (or `swift test --filter ZeroCopyHardwareTests`).
@Suite(.serialized) struct ZeroCopyHardwareTests {

    /// Here (llvmpipe) the display's own support says copy, naming the extension.
    @Test func thisDisplaysChoiceNamesWhatItLacks() throws {
        let context = try GLContext.surfaceless()
        let support = DMABufDisplaySupport(context: context)
        let choice = DMABufInterop(support: support).chooseInterop(
            hardware: .vaapi, firstFrame: .success(DRMPrimeDescriptor(width: 2, height: 2, objects: [.init(fd: 0, size: 8, modifier: 0)],
                                                                      layers: [.init(fourcc: DRMPrimeDescriptor.fourcc("NV12"), planes: [.init(object: 0, offset: 0, pitch: 2), .init(object: 0, offset: 4, pitch: 2)])])))
        if support.importsDMABufs && support.samplesExternalImages {
            #expect(choice.interop == .dmabuf, "\(choice.reason)")
        } else {
            #expect(choice.interop == .copy)
            #expect(choice.reason.contains(support.importsDMABufs ? "GL_OES_EGL_image_external_essl3" : "EGL_EXT_image_dma_buf_import"), "\(choice.reason)")
        }
    }

    /// A DMA-BUF frame the layer can neither import (here: no importer) nor copy (no frames
    /// context, as some v4l2m2m builds give) is drawn as the background and told to its decoder;
    /// the draw does not throw, which would end the presentation loop.
    @Test func aFrameNeitherImportedNorCopiedShowsTheBackgroundAndTellsItsDecoder() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 48, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        output.layer.background = RGBColor(red: 0, green: 0, blue: 255)
        let nv12 = DRMPrimeDescriptor.fourcc("NV12")
        let prime = try DRMPrimeFrame(external: DRMPrimeDescriptor(
            width: 64, height: 48, objects: [.init(fd: -1, size: 4608, modifier: 0)],
            layers: [.init(fourcc: nv12, planes: [.init(object: 0, offset: 0, pitch: 64), .init(object: 0, offset: 3072, pitch: 64)])]))
        let frame = VideoFrame(drmPrime: prime, format: .nv12, pts: .zero, duration: MediaTime(value: 1, timescale: 25),
                               colorMatrix: .bt709, colorRange: .limited, chromaLocation: .left, rotation: .none)
        try output.draw([frame])
        #expect(output.layer.framesNotDrawn == 1)
        #expect(output.layer.videoRect == nil)
        #expect(prime.importFailure?.contains("no DMABufImporter") == true, "\(prime.importFailure ?? "nothing reported")")
        let pixel = try output.screenshot().pixel(x: 32, y: 24)
        #expect(pixel.r == 0 && pixel.g == 0 && pixel.b == 255)
    }
}
