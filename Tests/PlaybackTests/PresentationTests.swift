import Foundation
import Playback
import PlaybackTestSupport
import Testing

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

@Suite struct SupportTests {

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
        #expect(lines.count == 3)
        let frame = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as! [String: Any]
        #expect(frame["type"] as? String == "frame")
        #expect(frame["vsync"] as? Int == 120)
        #expect(frame["t"] as? Double == 2.0)
        #expect(frame["uri"] as? String == "a \"b\".mp4")
        #expect(abs((frame["pts"] as! Double) - 59.0 / 30) < 1e-6)
        // After the first frame, the start's marks: the first picture's among them, on the monotonic clock.
        let startup = try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as! [String: Any]
        #expect(startup["type"] as? String == "startup" && startup["clock"] as? String == "monotonic")
        let shown = try #require((startup["marks"] as? [String: Any])?["first-present"] as? Double)
        // The process's first picture: this one, or an earlier test's in the same process.
        #expect(shown > 0 && shown <= StartupMarks.monotonicSeconds())
        let blank = try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as! [String: Any]
        #expect(blank["type"] as? String == "blank" && blank["vsync"] as? Int == 121)
    }
}
