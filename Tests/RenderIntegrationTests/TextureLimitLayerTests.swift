import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport
@testable import RenderTests

/// A frame the GPU cannot hold as one texture reaches the layer (a decoder that did not know the
/// output's limit): the layer draws the background for it and counts it, and the output goes on
/// (before: glTexStorage2D failed and the error ended the presentation loop, exit 1).
@Suite struct TextureLimitLayerTests {
    @Test func aFrameWiderThanTheLargestTextureIsCountedNotFatal() throws {
        let output = try HeadlessOutput(mode: DisplayMode(width: 64, height: 16, refresh: RefreshRate(numerator: 60)), clock: .virtual)
        // llvmpipe's limit is 16384; a GPU whose textures hold 16400 columns has nothing to refuse.
        guard output.context.maxTextureSize < 16400 else { return }
        let png = try TestMedia.make("wide-16400x16.png", [
            "-f", "lavfi", "-i", "color=c=blue:size=16400x16", "-frames:v", "1", "-c:v", "png", "-f", "image2pipe",
        ])
        // Decoded without the output's limit: the frame keeps its 16400 columns.
        let wide = try #require(try VideoDecoder(path: png, threads: 1).nextFrame())
        #expect(wide.width == 16400)
        try output.draw([wide])
        #expect(output.layer.framesTooLarge == 1)
        #expect(output.layer.framesNotDrawn == 1)
        // The next frame that fits is drawn as usual.
        let small = try VideoFrame(format: .yuv420p, width: 64, height: 16, colorMatrix: .bt709, colorRange: .full) { _, _, _ in 128 }
        try output.draw([small])
        #expect(output.layer.framesTooLarge == 1)
        let pixel = try output.screenshot().pixel(x: 32, y: 8)
        #expect(abs(Int(pixel.r) - 128) <= 2 && abs(Int(pixel.g) - 128) <= 2, "\(pixel)")
    }
}
