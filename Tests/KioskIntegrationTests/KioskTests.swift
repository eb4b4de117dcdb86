import Display
import Foundation
import Kiosk
import Media
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// Whole runs on the headless output with the virtual clock, through the same entry point as
/// `marquee` itself.
@Suite(.serialized) struct KioskRunTests {
    func play(_ items: [String], seconds: Double, lines: LogLines = LogLines()) throws -> [[String: Any]] {
        var config = KioskConfig()
        config.playlist = items.map { .init(uri: $0, path: $0) }
        return try HeadlessRun(config, width: 640, height: 360, seconds: seconds, lines: lines).trace
    }

    @Test func tenSecondsOf30FPSGive300FramesTwoVsyncsApart() throws {
        let clip = try TestMedia.clip(seconds: 4, fps: 30)
        let trace = try play([clip], seconds: 10)
        let frames = trace.filter { $0["type"] as? String == "frame" }
        #expect(frames.count == 300)
        let vsyncs = frames.map { $0["vsync"] as! Int }
        #expect(vsyncs == (0..<300).map { $0 * 2 })
        // pts rise by one frame each time, and start again at 0 on each loop (every 120 frames).
        for (i, frame) in frames.enumerated() {
            let pts = frame["pts"] as! Double
            #expect(abs(pts - Double(i % 120) / 30) < 1e-5, "frame \(i)")
            #expect(frame["output"] as? String == "headless-0")
            #expect(abs((frame["t"] as! Double) - Double(vsyncs[i]) / 60) < 1e-5)
        }
    }

    @Test func badFilesAreSkippedWithTheirReasonAndTheRestPlays() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let missing = TestMedia.folder + "/missing.mp4"
        let garbage = try TestMedia.garbage()
        let lines = LogLines()
        let trace = try play([missing, clip, garbage], seconds: 3, lines: lines)
        let frames = trace.filter { $0["type"] as? String == "frame" }
        #expect(frames.count == 90)
        #expect(Set(frames.map { $0["item"] as! Int }) == [1])
        // Gapless across the skipped items: every frame two vsyncs after the last.
        #expect(frames.map { $0["vsync"] as! Int } == (0..<90).map { $0 * 2 })
        let errors = lines.all.filter { $0.hasPrefix("level=error") }
        #expect(errors.count == 2, "each bad item is reported once, not on every loop: \(errors)")
        #expect(errors.contains { $0.contains("missing.mp4") && $0.contains("No such file or directory") })
        #expect(errors.contains { $0.contains("garbage.mp4") && $0.contains("Invalid data found when processing input") })
    }

    @Test func nothingPlayableShowsTheBackgroundAndKeepsRunning() throws {
        let trace = try play([TestMedia.folder + "/nothing-here.mp4"], seconds: 0.5)
        let pictures = trace.filter { ["frame", "blank"].contains($0["type"] as? String) }
        #expect(pictures.first?["type"] as? String == "blank")
        #expect(pictures.allSatisfy { $0["type"] as? String == "blank" })
        // The item's failure is in the trace with FFmpeg's reason.
        let ends = trace.filter { $0["event"] as? String == "end-file" }
        #expect(ends.first?["reason"] as? String == "error")
        #expect((ends.first?["error"] as? String)?.contains("No such file or directory") == true)
    }
}
