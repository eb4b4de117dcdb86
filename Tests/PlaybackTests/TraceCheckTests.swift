import Foundation
import Playback
import PlaybackTestSupport
import Testing
import TestSupport

/// An output that only records (virtual clock).
final class TraceTestOutput: OutputDriver {
    typealias Frame = ScriptFrame
    let name = "test-0"
    let clock: any VsyncClock
    private var queued: Int64?
    /// The flips queued for these vsyncs land on the next one (a picture drawn too late).
    private let lateFlips: Set<Int64>
    init(refresh: RefreshRate, lateFlips: Set<Int64> = []) {
        clock = VirtualVsyncClock(refresh: refresh)
        self.lateFlips = lateFlips
    }
    func draw(_ frames: [ScriptFrame?]) throws {}
    func queue(forVsync vsync: Int64) throws { queued = lateFlips.contains(vsync) ? vsync + 1 : vsync }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        defer { queued = nil }
        return queued.map { .flipped(vsync: $0) } ?? .timedOut
    }
}

/// tools/check-trace.py's report on the trace at `path`, of its one output `test-0`.
func checkTrace(_ path: String) throws -> (status: Int32, report: [String: Any]) {
    let (status, report) = try Command.checkTrace(path)
    return (status, report["test-0"] ?? [:])
}

@Suite struct TraceCheckTests {

    /// A frame shown a vsync after its own says so (`late`); the frames after it keep their vsyncs.
    @Test func aFrameShownAfterItsVsyncIsMarkedLate() throws {
        let backend = FakeBackend()
        let player = QueuePlayer(items: [PlayerItem(url: backend.add("clip.mp4", .init(frames: 30, fps: 30, size: VideoSize(width: 160, height: 90))),
                                                    backend: backend)], logger: quiet)
        let path = NSTemporaryDirectory() + "late-trace-\(getpid()).jsonl"
        let trace = try TraceWriter(path: path)
        let presenter = try PlayerPresenter(player: player, output: TraceTestOutput(refresh: RefreshRate(numerator: 60), lateFlips: [20]),
                                            trace: trace, logger: quiet, exitAfter: MediaTime(value: 1, timescale: 2))
        player.play()
        _ = try presenter.run { true }
        trace.flush()
        let frames = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["type"] as? String == "frame" }
        let late = frames.filter { $0["late"] != nil }
        try #require(late.count == 1, "\(late)")
        #expect(late[0]["vsync"] as? Int == 21 && late[0]["late"] as? Int == 1, "\(late[0])")
        #expect(frames.map { $0["vsync"] as? Int ?? -1 } == Array(stride(from: 0, to: 20, by: 2)) + [21] + Array(stride(from: 22, to: 30, by: 2)),
                "\(frames.map { $0["vsync"] ?? "" })")
    }

}
