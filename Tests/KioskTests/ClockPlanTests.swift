import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
import TestSupport

@Suite struct ClockPlanTests {
    let backend = FakeBackend()
    let epoch = WallTime(iso8601: "2026-01-01T00:00:00Z")!

    /// Each item is on the timeline for the part of its file that plays; an item that cannot be
    /// probed is left out, as every node leaves it out.
    @Test func theTimelineHasThePlayablePartOfEachItem() throws {
        _ = backend.add("a.mp4", .init(frames: 60, fps: 30))
        _ = backend.add("c.mp4", .init(frames: 90, fps: 30))
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4", "start": 0.5}, {"uri": "missing.mp4"}, {"uri": "c.mp4", "end": 2}], "loop": true}
            """, baseDirectory: "/fake")
        let beats = Mutex(0)
        let plan = try #require(try ClockPlan.make(config, epoch: epoch, backend: backend, logger: quiet,
                                                   beat: { beats.withLock { $0 += 1 } }))
        #expect(plan.playable.playlist.map(\.path) == ["/fake/a.mp4", "/fake/c.mp4"])
        #expect(plan.sync.playlistIndices == [0, 2])
        #expect(plan.starts.map(\.seconds) == [0.5, 0])
        #expect(plan.sync.timeline.durations.map(\.seconds) == [1.5, 2])
        #expect(beats.withLock { $0 } == 2)  // between the probes
    }

    @Test func nothingPlayableIsNoPlanAndSaysSo() throws {
        let lines = LogLines()
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "missing.mp4"}]}"#, baseDirectory: "/fake")
        #expect(try ClockPlan.make(config, epoch: epoch, backend: backend, logger: Logger(level: .info, sink: lines.append)) == nil)
        #expect(lines.all.contains { $0.contains("wall sync: no item of the playlist can be played") })
    }
}

@Suite struct ClockQualityWatchTests {
    /// Each answer of the clock service is in the status; a change of it is logged, the same
    /// answer again is not; the watch ends when told to.
    @Test func eachAnswerIsReportedAndAChangeLogged() throws {
        let status = KioskStatus()
        let stop = Latch<Bool>()
        let logged = Latch<Bool>()
        let lines = LogLines { line in if line.contains("not synchronised") { _ = logged.set(true) } }
        let answers = Mutex([ClockQuality.none("no chronyc"), ClockQuality.none("no chronyc"),
                             ClockQuality(source: "chrony", synchronized: false, detail: "no reference")])
        watchClockQuality(into: status, logger: Logger(level: .info, sink: lines.append), until: stop, every: 0) {
            answers.withLock { answers in
                if answers.count == 1 { _ = stop.set(true) }
                return answers.removeFirst()
            }
        }
        #expect(status.snapshot.wallSync == "clock")
        #expect(logged.wait(timeout: 60) == true)
        #expect(status.snapshot.clockQuality?.source == "chrony")
        #expect(lines.all.filter { $0.contains("wall sync:") }.count == 2)
    }
}
