import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Transitions on a wall: two headless outputs of one node, each with its own trace lines, draw
/// the same mix on each vsync of the transition (the mix comes from the shared timeline).
@Suite struct TransitionWallTests {
    static func flat(_ color: String) throws -> String {
        try TestMedia.make("wall-xfade-\(color).mp4", ["-f", "lavfi", "-i", "color=c=\(color):size=160x90:rate=30", "-t", "1",
                                                        "-pix_fmt", "yuv420p", "-c:v", "libx264", "-qp", "0", "-f", "mp4"])
    }

    @Test func bothOutputsOfAWallDrawTheSameMixOnEachVsyncOfATransition() throws {
        let red = try Self.flat("red"), blue = try Self.flat("blue")
        let config = TestMedia.folder + "/wall-xfade-\(UUID().uuidString).json"
        try TestConfig.write(#"""
            {"playlist": [{"uri": "\#(red)"}, {"uri": "\#(blue)", "transition": {"type": "crossfade", "duration": 0.5}}],
             "transition": {"type": "fade", "duration": 0.4},
             "wall": {"canvas": {"width": 680, "height": 180},
                      "outputs": [{"name": "left", "x": 0, "y": 0, "width": 320, "height": 180},
                                  {"name": "right", "x": 360, "y": 0, "width": 320, "height": 180}]}}
            """#, to: config)
        let running = try MarqueeProcessTests.Running(config: config, clock: "virtual", exitAfter: 8)
        #expect(running.wait() == 0)
        let lines = try running.traceLines()
        // Per output: the frame lines of the transitions, as (vsync, item, pts, mix).
        func mixes(_ output: String) -> [(vsync: Int, item: Int, pts: Double, mix: NSDictionary)] {
            lines.compactMap { line in
                guard line["type"] as? String == "frame", line["output"] as? String == output,
                      let mix = line["mix"] as? NSDictionary else { return nil }
                return (line["vsync"] as! Int, line["item"] as! Int, line["pts"] as! Double, mix)
            }
        }
        let left = mixes("headless-left"), right = mixes("headless-right")
        // Each pass: a crossfade of 30 vsyncs (29 mixed) into blue, a fade of 12 + 12 (the loop point back
        // to red: blue's last 12 vsyncs and red's first 11 mixed).
        // (Each output runs its own virtual clock, as fast as it can: the process ends when the
        // first reaches the end, so the other may have shown fewer; their common part is compared.)
        #expect(left.count >= 29 + 12 + 11 && right.count >= 29 + 12 + 11, "\(left.count) and \(right.count) mixed vsyncs")
        // The same mix, frame and item on the k-th vsync of each transition on both outputs; the
        // transitions' vsyncs follow each other without a gap.
        let start = (left.first?.vsync ?? 0, right.first?.vsync ?? 0)
        for (l, r) in zip(left, right) {
            #expect(l.item == r.item && l.pts == r.pts && l.mix == r.mix, "left \(l), right \(r)")
            #expect(l.vsync - start.0 == r.vsync - start.1, "left vsync \(l.vsync), right \(r.vsync)")
        }
        let weights = left.prefix(29).map { ($0.mix["weight"] as? Double) ?? -1 }
        #expect(zip(weights, 1...29).allSatisfy { abs($0 - Double($1) / 30) < 1e-6 }, "\(weights)")
        #expect(zip(left.prefix(29), left.dropFirst().prefix(28)).allSatisfy { $1.vsync == $0.vsync + 1 })
    }
}
