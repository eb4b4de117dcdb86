import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// A picture wider than the GPU's largest texture (16384 on llvmpipe) between two clips, through
/// the real `marquee` process: it is scaled down to fit on its decode thread and shown, the clips
/// around it play, and the process never ends over it (before: exit 1, a crash loop under
/// `Restart=always`).
/// On the planes output (swscale, no texture) it is shown as it is.
@Suite(.serialized) struct OversizedPictureProcessTests {
    @Test(arguments: ["gl", "planes"])
    func aPictureWiderThanTheLargestTextureIsScaledDownAndTheRestPlays(scanout: String) throws {
        let wide = try TestMedia.make("wide-16400x16.png", [
            "-f", "lavfi", "-i", "color=c=blue:size=16400x16", "-frames:v", "1", "-c:v", "png", "-f", "image2pipe",
        ])
        let first = try TestMedia.clip(seconds: 1, fps: 30)
        let last = try TestMedia.clip(seconds: 1, fps: 25, width: 160, height: 120)
        let config = TestMedia.folder + "/oversized-\(UUID().uuidString).json"
        try TestConfig.write(#"{"playlist": [{"uri": "\#(first)"}, {"uri": "\#(wide)", "duration": 1}, {"uri": "\#(last)"}], "loop": true, "display": {"scanout": "\#(scanout)"}}"#, to: config)
        let running = try MarqueeProcessTests.Running(config: config, clock: "virtual", exitAfter: 6)
        #expect(running.wait(timeout: 60) == 0, "\(running.log)")
        let frames = try running.traceLines().filter { $0["type"] as? String == "frame" }
        let items = frames.compactMap { $0["item"] as? Int }
        // Two passes of 1 s + 1 s + 1 s: every clip frame, and the picture's one frame each pass.
        #expect(items.filter { $0 == 0 }.count == 60)
        #expect(items.filter { $0 == 2 }.count == 50)
        #expect(items.filter { $0 == 1 }.count == 2)
        if scanout == "gl" {
            #expect(running.log.contains("scaled down"), "\(running.log)")
            #expect(running.log.contains("16400x16") && running.log.contains("16384x16"), "\(running.log)")
        } else {
            #expect(!running.log.contains("scaled down") && running.log.contains("scanout=\"planes"), "\(running.log)")
        }
    }
}
