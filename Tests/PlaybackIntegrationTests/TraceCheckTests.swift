import Foundation
import Playback
import PlaybackTestSupport
import Testing
import TestSupport
@testable import PlaybackTests

@Suite struct TraceCheckTests {
    @Test func loopingPlaylistOfFiveRatesHasNoGapDropRepeatOrCadenceErrorPerTheChecker() throws {
        let backend = FakeBackend()
        let rates: [Int32] = [24, 25, 30, 50, 60]
        let templates = rates.enumerated().map { index, fps in
            PlayerItem(url: backend.add("clip\(fps).mp4", .init(frames: Int(fps), fps: fps,
                                                                  size: VideoSize(width: 160 * (index + 1), height: 90 * (index + 1)))),
                       backend: backend)
        }
        let player = QueuePlayer(logger: quiet)
        let looper = PlayerLooper(player: player, templateItems: templates)
        let path = NSTemporaryDirectory() + "check-trace-\(getpid()).jsonl"
        let trace = try TraceWriter(path: path)
        let presenter = try PlayerPresenter(player: player, output: TraceTestOutput(refresh: RefreshRate(numerator: 60)),
                                            trace: trace, logger: quiet, exitAfter: MediaTime(value: 100, timescale: 1))
        player.play()
        let stats = try presenter.run { true }
        trace.flush()
        #expect(looper.loopCount == 19)  // 100 s of 5-second loops: the 20th wrap is at the exit vsync
        #expect(stats.dropped == 0 && stats.delayed == 0)
        let (status, report) = try checkTrace(path)
        #expect(status == 0, "\(report["problems"] ?? "")")
        #expect(report["frames"] as? Int == 20 * rates.reduce(0) { $0 + Int($1) })
        #expect(report["item_changes"] as? Int == 20 * 5 - 1)
        for key in ["gaps", "drops", "repeats", "cadence_errors", "blanks_after_start"] {
            #expect(report[key] as? Int == 0, "\(key)")
        }
        // start-file / end-file events are in the trace.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""event":"start-file","item":0"#) && text.contains(#""reason":"eof""#))
    }

    /// A pause and the play after it are lines of their own, so that a reader can tell the
    /// timeline's wait from a gap: no new frame between them.
    @Test func pauseAndUnpauseAreTraceLines() throws {
        let backend = FakeBackend()
        let player = QueuePlayer(items: [PlayerItem(url: backend.add("clip.mp4", .init(frames: 90, fps: 30, size: VideoSize(width: 160, height: 90))),
                                                    backend: backend)], logger: quiet)
        let path = NSTemporaryDirectory() + "pause-trace-\(getpid()).jsonl"
        let trace = try TraceWriter(path: path)
        let presenter = try PlayerPresenter(player: player, output: TraceTestOutput(refresh: RefreshRate(numerator: 60)),
                                            trace: trace, logger: quiet, exitAfter: MediaTime(value: 2, timescale: 1))
        player.play()
        var asked = 0
        _ = try presenter.run {
            asked += 1
            if asked == 30 {
                player.pause()
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { player.play() }
            }
            return true
        }
        trace.flush()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        // The first play is an unpause on vsync 0, before any frame.
        let pauses = lines.indices.filter { lines[$0]["event"] as? String == "pause" }
        let unpauses = lines.indices.filter { lines[$0]["event"] as? String == "unpause" }
        try #require(pauses.count == 1 && unpauses.count == 2 && unpauses[0] < pauses[0] && pauses[0] < unpauses[1],
                     "\(lines.filter { $0["type"] as? String == "event" })")
        #expect(lines[unpauses[0]]["vsync"] as? Int == 0 && !lines[..<unpauses[0]].contains { $0["type"] as? String == "frame" })
        let between = lines[pauses[0]..<unpauses[1]].filter { $0["type"] as? String == "frame" }
        #expect(between.count <= 1, "only a picture pulled before the pause is drawn after it: \(between)")
        let vsync = try #require(lines[pauses[0]]["vsync"] as? Int)
        #expect((28...31).contains(vsync), "paused on vsync \(vsync)")
        #expect(lines[pauses[0]]["output"] as? String == "test-0")
        #expect(lines[unpauses[1]...].contains { $0["type"] as? String == "frame" }, "frames after the play")
    }

    @Test func theCheckerReportsABlankARepeatAndADrop() throws {
        let path = NSTemporaryDirectory() + "bad-trace-\(getpid()).jsonl"
        var lines: [String] = []
        func frame(_ v: Int, _ item: Int, _ pts: Double) {
            lines.append(#"{"type":"frame","vsync":\#(v),"t":\#(Double(v) / 60),"output":"test-0","item":\#(item),"uri":"a","pts":\#(pts)}"#)
        }
        for i in 0..<10 { frame(i * 2, 0, Double(i) / 30) }
        frame(20, 0, 9.0 / 30)                              // a repeat
        lines.append(#"{"type":"blank","vsync":22,"t":0.366667,"output":"test-0"}"#)  // a gap
        for i in 0..<5 { frame(24 + i * 2, 1, Double(i) / 30) }
        frame(34, 1, 7.0 / 30)                              // two frames dropped
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (status, report) = try checkTrace(path)
        #expect(status == 1)
        #expect(report["repeats"] as? Int == 1)
        #expect(report["blanks_after_start"] as? Int == 1)
        #expect(report["drops"] as? Int == 2)
    }
}
