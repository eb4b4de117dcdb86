import Display
import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Render
import Testing
import TestSupport

@Suite struct OutputReportTests {
    let lines = LogLines()
    let status = KioskStatus()
    let refresh = RefreshRate(numerator: 60)

    func report(_ role: WallRole = .leader) -> OutputReport {
        let logger = Logger(level: .info, sink: lines.append)
        return OutputReport(reporter: PlaybackReporter(status: status, role: role, logger: logger), logger: logger)
    }

    @Test func anOpenedOutputIsDueFromThen() throws {
        let now = ContinuousClock.now
        report().opened(name: "kms-HDMI-A-1", width: 1920, height: 1080, refresh: refresh,
                        scanout: ScanoutChoice(kind: .planes, reason: "a test"), now: now)
        let output = try #require(status.snapshot.outputs.first)
        #expect(output.name == "kms-HDMI-A-1" && output.mode == "1920x1080@\(refresh)")
        #expect(output.scanout == ScanoutKind.planes.rawValue && output.scanoutReason == "a test")
        #expect(output.lastBeat == now && output.dueSince == now)
    }

    /// Every picture tells supervision that presentation progresses; only a new one of the
    /// session's own player moves time-pos.
    @Test func aNewPictureOfTheOwnPlayerMovesTimePos() {
        let report = report()
        let now = ContinuousClock.now
        let second = MediaTime(seconds: 1, preferredTimescale: 1000)
        #expect(!report.shown(frameDuration: second, main: false, isNew: true, itemTime: second, itemDuration: nil, now: now))
        #expect(status.snapshot.outputs.first?.lastPicture == now && status.snapshot.timePos == nil)
        #expect(!report.shown(frameDuration: nil, main: true, isNew: false, itemTime: second, itemDuration: nil))
        #expect(report.shown(frameDuration: .indefinite, main: true, isNew: true, itemTime: second,
                             itemDuration: MediaTime(seconds: 8, preferredTimescale: 1000)))
        #expect(status.snapshot.timePos == 1 && status.snapshot.duration == 8)
        #expect(status.snapshot.outputs.first?.pictureDuration == 0)  // an endless frame counts as none
    }

    @Test func everyThirtiethVsyncReportsTheRateOnTheLeadersStatusOnly() {
        let report = report()
        report.vsync(29, idle: nil, refresh: refresh, videoRect: PixelRect(x: 0, y: 0, width: 4, height: 2), notDrawn: 0, audio: SessionAudio())
        #expect(status.snapshot.displayFPS == 0 && status.snapshot.outputs.first?.videoRect == nil)
        report.vsync(30, idle: nil, refresh: refresh, videoRect: PixelRect(x: 0, y: 0, width: 4, height: 2), notDrawn: 0, audio: SessionAudio())
        #expect(status.snapshot.displayFPS == 60 && status.snapshot.outputs.first?.videoRect == [0, 0, 4, 2])
        let leader = KioskStatus()
        let follower = OutputReport(reporter: PlaybackReporter(status: KioskStatus(), role: .follower(slot: 1, reportsTo: leader),
                                                               logger: quiet), logger: quiet)
        follower.vsync(30, idle: "paused", refresh: refresh, videoRect: nil, notDrawn: 0, audio: SessionAudio())
        #expect(leader.snapshot.displayFPS == 0 && leader.snapshot.outputs[1].idle == "paused")
    }

    @Test func framesThatCannotBeDrawnAreLoggedWhenTheyGrow() {
        let report = report()
        for (n, notDrawn) in [(30, 2), (60, 2), (90, 5)] {
            report.vsync(Int64(n), idle: nil, refresh: refresh, videoRect: nil, notDrawn: notDrawn, audio: SessionAudio())
        }
        #expect(lines.all.filter { $0.contains("could be neither imported nor copied") }.count == 2)
        #expect(status.snapshot.outputs.first?.framesNotDrawn == 5)
    }
}
