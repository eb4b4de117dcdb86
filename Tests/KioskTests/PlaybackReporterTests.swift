import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
import TestSupport

@Suite struct PlaybackReporterTests {
    let lines = LogLines()
    var logger: Logger { Logger(level: .debug, sink: lines.append) }
    let backend = FakeBackend()

    func reporter(_ role: WallRole = .leader, status: KioskStatus = KioskStatus(), playlist: [String] = []) -> PlaybackReporter {
        let reporter = PlaybackReporter(status: status, role: role, logger: logger)
        let items = playlist.map { KioskConfig.Item(uri: $0, path: $0) }
        reporter.playlist = { items }
        return reporter
    }

    func item(_ path: String, index: Int) -> PlayerItem {
        let item = PlayerItem(url: URL(fileURLWithPath: path), backend: backend)
        item.playlistIndex = index
        return item
    }

    @Test func aFailureIsLoggedOncePerReasonWithItsItemNumbers() {
        let reporter = reporter(playlist: ["/m/a.mp4", "/m/b.mp4", "/m/a.mp4"])
        reporter.logFailure(uri: "/m/a.mp4", reason: "gone")
        reporter.logFailure(uri: "/m/a.mp4", reason: "gone")
        #expect(lines.all.filter { $0.contains("cannot play item") }.count == 1)
        #expect(lines.all.first { $0.contains("cannot play item") }?.contains("item=1,3") == true)
        reporter.logFailure(uri: "/m/a.mp4", reason: "corrupt")  // a new reason
        reporter.forgetFailures()
        reporter.logFailure(uri: "/m/a.mp4", reason: "corrupt")  // a new playlist: logged again
        #expect(lines.all.filter { $0.contains("cannot play item") }.count == 3)
    }

    /// A live source down then back: one outage, one reconnect, its seconds added; a second
    /// report while down is the same outage.
    @Test func liveSourceOutagesAndReconnectsAreCounted() {
        let status = KioskStatus()
        let reporter = reporter(status: status)
        reporter.liveSourceChanged(uri: "rtsp://127.0.0.1/cam", reason: "connection refused")
        reporter.liveSourceChanged(uri: "rtsp://127.0.0.1/cam", reason: "no picture for 2.0 s")
        var s = status.snapshot
        #expect(s.liveSourceOutages == 1 && s.liveSourceReconnects == 0 && s.liveSourcesDown.count == 1)
        reporter.liveSourceChanged(uri: "rtsp://127.0.0.1/cam", reason: nil)
        reporter.liveSourceChanged(uri: "rtsp://127.0.0.1/cam", reason: nil)
        s = status.snapshot
        #expect(s.liveSourceOutages == 1 && s.liveSourceReconnects == 1 && s.liveSourcesDown.isEmpty)
        #expect(s.liveSourceOutageSeconds >= 0 && s.liveSourceOutageSeconds < 5)
    }

    /// A live item that ends while its source is down (a playlist moving on): health no longer
    /// names the source, and it is not counted as a reconnect.
    @Test func aLiveSourceWhoseReaderGoesWhileDownLeavesHealth() {
        let status = KioskStatus()
        let reporter = reporter(status: status)
        reporter.liveSourceChanged(uri: "http://127.0.0.1/live.m3u8", reason: "connection refused")
        #expect(status.snapshot.liveSourcesDown.count == 1)
        reporter.liveSourceClosed(uri: "http://127.0.0.1/live.m3u8")
        let s = status.snapshot
        #expect(s.liveSourcesDown.isEmpty && s.liveSourceOutages == 1 && s.liveSourceReconnects == 0)
    }

    /// Slow reads count in the output's status (a follower's in its leader's) within the window;
    /// only the first of a window is logged.
    @Test func slowStorageCountsInTheOutputsStatusAndLogsOncePerWindow() throws {
        let (own, leader) = (KioskStatus(), KioskStatus())
        let reporter = reporter(.follower(slot: 1, reportsTo: leader), status: own)
        let start = ContinuousClock.now
        reporter.slowStorage(uri: "/m/a.mp4", operation: "open", seconds: 2.5, limit: 2, now: start)
        reporter.slowStorage(uri: "/m/a.mp4", operation: "read", seconds: 3.5, limit: 2, now: start + .seconds(10))
        let slow = try #require(leader.snapshot.slowStorage["/m/a.mp4"])
        #expect(slow.count == 2 && slow.seconds == 3.5 && slow.operation == "read")
        #expect(own.snapshot.slowStorage.isEmpty)
        #expect(lines.all.filter { $0.contains("slow storage") }.count == 1)
        reporter.slowStorage(uri: "/m/a.mp4", operation: "probe", seconds: 2.1, limit: 2,
                             now: start + .seconds(Int(KioskStatus.slowStorageWindow) + 11))
        #expect(leader.snapshot.slowStorage["/m/a.mp4"]?.count == 1)
        #expect(lines.all.filter { $0.contains("slow storage") }.count == 2)
    }

    @Test func eachRoleReportsItsOutputWhereItShould() {
        let (own, leader) = (KioskStatus(), KioskStatus())
        reporter(.follower(slot: 2, reportsTo: leader), status: own).updateOutput { $0.name = "right" }
        #expect(leader.snapshot.outputs.map(\.name) == ["-", "-", "right"])
        #expect(own.snapshot.outputs.isEmpty)
        reporter(.region(slot: 2, rank: 1, reportsTo: leader)).updateOutput { $0.name = "region" }
        #expect(leader.snapshot.outputs.map(\.name) == ["-", "-", "right"])
        let mine = KioskStatus()
        reporter(status: mine).updateOutput { $0.name = "left" }
        #expect(mine.snapshot.outputs.map(\.name) == ["left"])
    }

    /// New pictures are due from the end of an idle time on, not from its start.
    @Test func aBeatAfterAnIdleTimeMakesPicturesDueFromThen() {
        let status = KioskStatus()
        let reporter = reporter(status: status)
        reporter.updateOutput { $0.connected = true }
        let start = ContinuousClock.now
        reporter.beat(idle: nil, now: start)
        reporter.beat(idle: nil, now: start + .seconds(1))
        #expect(status.snapshot.outputs[0].dueSince == nil && status.snapshot.outputs[0].lastBeat == start + .seconds(1))
        reporter.beat(idle: "paused", now: start + .seconds(2))
        reporter.beat(idle: nil, now: start + .seconds(5))  // playing again
        reporter.beat(idle: nil, now: start + .seconds(6))
        #expect(status.snapshot.outputs[0].dueSince == start + .seconds(5))
        #expect(status.snapshot.outputs[0].idle == nil)
    }

    @Test func aLoopPassBeginsOnce() {
        let reporter = reporter()
        #expect(!reporter.beginsLoopPass(0))
        #expect(reporter.beginsLoopPass(1))
        #expect(!reporter.beginsLoopPass(1))
        #expect(reporter.beginsLoopPass(2))
    }

    @Test func anItemChangeIsTheStatusTheEventsAndOneLogLine() {
        let status = KioskStatus()
        status.update { $0.replaceItems([.init(uri: "a.mp4", path: "/m/a.mp4"), .init(uri: "b.mp4", path: "/m/b.mp4")]) }
        let reporter = reporter(status: status)
        let sent = EventOrderTests.Sent()
        reporter.onEvent = sent.send
        reporter.itemChanged(to: item("/m/b.mp4", index: 1), loop: 3)
        let s = status.snapshot
        #expect(s.position == 1 && s.currentPath == "/m/b.mp4" && s.loopPass == 3)
        #expect(s.items.map(\.state) == [.pending, .playing])
        #expect(sent.names.first == "start-file" && sent.ids == [2])
        #expect(lines.all.filter { $0.contains("playing") && $0.contains("item=2") && $0.contains("of=2") }.count == 1)
    }

    @Test func timeObservationsCountDropsOfTheLastMinute() {
        let status = KioskStatus()
        let reporter = reporter(status: status)
        var stats = PresentationStats()
        stats.dropped = 5
        let start = ContinuousClock.now
        reporter.timeObserved(.zero, item: nil, paused: true, stats: stats, now: start)
        stats.dropped = 7
        reporter.timeObserved(.zero, item: nil, paused: false, stats: stats, now: start + .seconds(30))
        #expect(status.snapshot.recentDrops.count == 7 && status.snapshot.dropped == 7 && !status.snapshot.paused)
        #expect(status.snapshot.timePos == nil)  // no item loaded: no time-pos, as mpv
        reporter.timeObserved(.zero, item: nil, paused: false, stats: stats, now: start + .seconds(61))
        #expect(status.snapshot.recentDrops.count == 2)
    }

    @Test func skippedFolderEntriesAreLoggedWhenTheyChange() {
        let reporter = reporter()
        let fifo = SkippedEntry(name: "pipe", kind: "fifo")
        reporter.reportSkipped([fifo], origin: .directory("/m"))
        reporter.reportSkipped([fifo], origin: .directory("/m"))
        reporter.reportSkipped([fifo], origin: .m3u("/m/list.m3u"))  // only a folder's are
        #expect(lines.all.filter { $0.contains("not a regular file") }.count == 1)
        reporter.reportSkipped([], origin: .directory("/m"))
        reporter.reportSkipped([fifo], origin: .directory("/m"))
        #expect(lines.all.filter { $0.contains("not a regular file") }.count == 2)
    }

    @Test func anEmptyFolderOrListSaysWhyNothingPlays() throws {
        var config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/m")
        #expect(PlaybackReporter.emptyPlaylistProblem(config) == nil)
        config.playlist = []
        config.playlistOrigin = .directory("/m/in")
        #expect(PlaybackReporter.emptyPlaylistProblem(config) == "the folder /m/in has no media files yet")
        config.playlistOrigin = .m3u("/m/l.m3u")
        #expect(PlaybackReporter.emptyPlaylistProblem(config) == "the M3U file /m/l.m3u lists nothing yet")
        config.playlistUnread = true
        #expect(PlaybackReporter.emptyPlaylistProblem(config) == nil)
    }
}
