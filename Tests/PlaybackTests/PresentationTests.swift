import Foundation
import Playback
import Testing

/// A frame of a scripted source.
struct FakeFrame: PresentableFrame {
    let pts: MediaTime
    let duration: MediaTime
}

/// Plays scripted items: each a number of frames at a frame rate; `nil` items fail (nothingPlayable
/// when every item of a pass fails).
final class ScriptedSource: FrameSource {
    var events: [SourceEvent<FakeFrame>] = []

    /// Appends `count` frames of item `item` at `fps` as one run.
    func addRun(item: Int, run: Int, frames count: Int, fps: Int32) {
        for i in 0..<count {
            let frame = FakeFrame(pts: MediaTime(value: Int64(i), timescale: fps), duration: MediaTime(value: 1, timescale: fps))
            events.append(.frame(PlaylistFrame(item: item, uri: "item\(item).mp4", run: run, frame: frame)))
        }
    }

    func next(timeout: Double) -> SourceEvent<FakeFrame>? {
        events.isEmpty ? .ended : events.removeFirst()
    }
}

/// Records what was shown on which vsync, on a virtual clock.
final class RecordingOutput: PresentationOutput {
    typealias Frame = FakeFrame
    let name = "test-0"
    let clock: any VsyncClock
    var shown: [(vsync: Int64, pts: MediaTime?)] = []
    /// Vsyncs on which drawing is late by one (a virtual display that misses a vsync).
    var lateAt: Set<Int64> = []

    init(refresh: RefreshRate) { clock = VirtualVsyncClock(refresh: refresh) }

    func present(_ frame: FakeFrame?, atVsync vsync: Int64) throws -> Int64 {
        let actual = lateAt.contains(vsync) ? vsync + 1 : vsync
        shown.append((actual, frame?.pts))
        return actual
    }

    var intervals: [Int64] { zip(shown, shown.dropFirst()).map { $1.vsync - $0.vsync } }
}

@Suite struct CadenceTests {
    func offsets(fps: Int32, refresh: RefreshRate, frames: Int) -> [Int64] {
        let scheduler = CadenceScheduler(refresh: refresh)
        return (0..<frames).map { scheduler.vsyncOffset(for: MediaTime(value: Int64($0), timescale: fps)) }
    }

    func intervals(_ v: [Int64]) -> [Int64] { zip(v, v.dropFirst()).map { $1 - $0 } }

    @Test func film24At60IsThreeTwo() {
        let v = intervals(offsets(fps: 24, refresh: RefreshRate(numerator: 60), frames: 49))
        #expect(v == Array(repeating: [3, 2], count: 24).flatMap { $0 })
    }

    @Test func pal25At60IsThreeTwoTwoTwoThree() {
        // 60/25 = 2.4 vsyncs a frame: 12 vsyncs every 5 frames, the error carried forward.
        let v = intervals(offsets(fps: 25, refresh: RefreshRate(numerator: 60), frames: 51))
        #expect(v.reduce(0, +) == 120)
        #expect(Set(v).isSubset(of: [2, 3]))
        for start in stride(from: 0, to: 50, by: 5) { #expect(v[start..<start + 5].reduce(0, +) == 12) }
    }

    @Test func whole30And60At60() {
        #expect(intervals(offsets(fps: 30, refresh: RefreshRate(numerator: 60), frames: 30)) == Array(repeating: 2, count: 29))
        #expect(intervals(offsets(fps: 60, refresh: RefreshRate(numerator: 60), frames: 30)) == Array(repeating: 1, count: 29))
    }

    @Test func thirtyAt5994ShortensOneFrameInFiveHundred() {
        // 59.94/30 = 1.998 vsyncs a frame: 1001 frames take exactly 2000 vsyncs, so two of them
        // are shown for one vsync instead of two.
        let refresh = RefreshRate(parsing: "59.94")!
        #expect(refresh == RefreshRate(numerator: 60000, denominator: 1001))
        let v = offsets(fps: 30, refresh: refresh, frames: 1002)
        #expect(v.last! - v.first! == 2000)
        #expect(intervals(v).filter { $0 == 1 }.count == 2)
    }

    @Test func refreshRateParsing() {
        #expect(RefreshRate(parsing: "60") == RefreshRate(numerator: 60))
        #expect(RefreshRate(parsing: "23.976") == RefreshRate(numerator: 24000, denominator: 1001))
        #expect(RefreshRate(parsing: "50.5") == RefreshRate(numerator: 101, denominator: 2))
        #expect(RefreshRate(parsing: "0") == nil)
        #expect(RefreshRate(parsing: "abc") == nil)
        #expect(DisplayMode(parsing: "1280x720@59.94")?.refresh == RefreshRate(numerator: 60000, denominator: 1001))
        #expect(DisplayMode(parsing: "1920x1080") == .fullHD)
        #expect(DisplayMode(parsing: "1920x") == nil)
    }
}

@Suite struct PresentationLoopTests {
    let logger = Logger(level: .error, sink: { _ in })

    func run(_ source: ScriptedSource, _ output: RecordingOutput, exitAfter: MediaTime? = nil) throws -> PresentationStats {
        let loop = PresentationLoop(source: source, output: output, logger: logger, exitAfter: exitAfter)
        try loop.run(while: { true })
        return loop.stats
    }

    @Test func thirtyFPSAt60HzShowsEveryFrameTwoVsyncsApart() throws {
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 90, fps: 30)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 60))
        let stats = try run(source, output)
        #expect(stats.presented == 90 && stats.dropped == 0)
        let frames = output.shown.filter { $0.pts != nil }
        #expect(frames.map(\.vsync) == (0..<90).map { Int64($0 * 2) })
        // After the last frame has had its two vsyncs, the output shows no video.
        #expect(output.shown.last!.pts == nil && output.shown.last!.vsync == 180)
    }

    @Test func itemChangeAndLoopAreGapless() throws {
        // item 0 (24 fps, 10 frames), item 1 (30 fps, 6 frames), then item 0 again (a loop).
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 10, fps: 24)
        source.addRun(item: 1, run: 2, frames: 6, fps: 30)
        source.addRun(item: 0, run: 3, frames: 10, fps: 24)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 60))
        let stats = try run(source, output)
        #expect(stats.presented == 26 && stats.dropped == 0 && stats.delayed == 0)
        let v = output.shown.filter { $0.pts != nil }.map(\.vsync)
        // Item 0 lasts 10/24 s = 25 vsyncs: item 1 starts on vsync 25 exactly, no repeat, no gap.
        #expect(Array(v[0..<10]) == [0, 3, 5, 8, 10, 13, 15, 18, 20, 23])
        #expect(Array(v[10..<16]) == [25, 27, 29, 31, 33, 35])
        // Item 1 lasts 6/30 s = 12 vsyncs: the loop starts on vsync 37 with the same 3:2 cadence.
        #expect(Array(v[16..<19]) == [37, 40, 42])
    }

    @Test func framesFasterThanTheDisplayAreDropped() throws {
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 60, fps: 60)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 30))
        let stats = try run(source, output)
        // Frame k belongs to vsync round(k / 2): the odd frames share a vsync with the next even
        // one and give way to it; the last frame (29.5 -> 30) has a vsync of its own.
        #expect(stats.presented == 31 && stats.dropped == 29)
        #expect(output.intervals.allSatisfy { $0 == 1 })
    }

    @Test func exitAfterStopsBeforeThatTime() throws {
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 600, fps: 30)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 60))
        let stats = try run(source, output, exitAfter: MediaTime(value: 10, timescale: 1))
        #expect(stats.presented == 300)
        #expect(output.shown.last!.vsync == 598)
    }

    @Test func nothingPlayableShowsBlankThenPicksUp() throws {
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 3, fps: 30)
        source.events.append(.nothingPlayable)
        source.addRun(item: 0, run: 2, frames: 3, fps: 30)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 60))
        _ = try run(source, output)
        let seen = output.shown.map { $0.pts == nil ? "blank@\($0.vsync)" : "\($0.vsync)" }
        #expect(Array(seen.prefix(7)) == ["0", "2", "4", "blank@5", "6", "8", "10"])
    }

    @Test func aLateFrameMovesTheTimelineInsteadOfMakingEveryLaterFrameLate() throws {
        let source = ScriptedSource()
        source.addRun(item: 0, run: 1, frames: 10, fps: 30)
        let output = RecordingOutput(refresh: RefreshRate(numerator: 60))
        output.lateAt = [4]
        let stats = try run(source, output)
        #expect(stats.delayed == 1)
        #expect(output.shown.filter { $0.pts != nil }.map(\.vsync) == [0, 2, 5, 7, 9, 11, 13, 15, 17, 19])
    }
}

@Suite struct SupportTests {
    @Test func queueIsBoundedAndTimesOut() {
        let queue = FrameQueue<Int>(capacity: 2)
        #expect(queue.push(1, timeout: 0) == .pushed)
        #expect(queue.push(2, timeout: 0) == .pushed)
        #expect(queue.push(3, timeout: 0.01) == .timedOut)
        guard case .element(1) = queue.pop(timeout: 0) else { Issue.record("expected 1"); return }
        #expect(queue.push(3, timeout: 0) == .pushed)
        queue.close()
        guard case .element(2) = queue.pop(timeout: 0) else { Issue.record("expected 2"); return }
        guard case .element(3) = queue.pop(timeout: 0) else { Issue.record("expected 3"); return }
        guard case .closed = queue.pop(timeout: 0) else { Issue.record("expected closed"); return }
    }

    @Test func loggerWritesLogfmtWithFields() {
        final class Lines: @unchecked Sendable { var all: [String] = [] }
        let lines = Lines()
        let logger = Logger(level: .info, sink: { lines.all.append($0) }).with(["output": "headless-0"])
        logger.debug("hidden")
        logger.error("cannot play item", ["uri": "my clip.mp4"])
        #expect(lines.all == [#"level=error msg="cannot play item" output=headless-0 uri="my clip.mp4""#])
    }

    @Test func traceLinesAreJSON() throws {
        let path = NSTemporaryDirectory() + "trace-\(getpid()).jsonl"
        do {
            let trace = try TraceWriter(path: path)
            trace.frame(vsync: 120, t: MediaTime(value: 2, timescale: 1), output: "headless-0", item: 0,
                        uri: "a \"b\".mp4", pts: MediaTime(value: 59, timescale: 30))
            trace.blank(vsync: 121, t: MediaTime(value: 121, timescale: 60), output: "headless-0")
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let frame = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as! [String: Any]
        #expect(frame["type"] as? String == "frame")
        #expect(frame["vsync"] as? Int == 120)
        #expect(frame["t"] as? Double == 2.0)
        #expect(frame["uri"] as? String == "a \"b\".mp4")
        #expect(abs((frame["pts"] as! Double) - 59.0 / 30) < 1e-6)
        let blank = try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as! [String: Any]
        #expect(blank["type"] as? String == "blank" && blank["vsync"] as? Int == 121)
    }
}
