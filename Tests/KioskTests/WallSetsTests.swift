import Foundation
@testable import Kiosk
import Playback
import Testing

/// A wall set's switch on the presentation thread (`WallSets.switchStep`), on virtual wall times:
/// vsyncs every 1/60 s from `w0`; the switch on the first vsync at or after its time, queued no
/// more than `WallSets.lead` ahead, at once when its time has passed.
@Suite struct WallSetsTests {
    let refresh = 1.0 / 60
    let w0 = WallTime(nanoseconds: 1_780_000_000_000_000_000)
    func wall(_ n: Int64) -> WallTime { w0 + Int64((Double(n) * refresh * 1e9).rounded()) }

    func step(on n: Int64, at: WallTime, playing: Bool = true, end: Player.ItemEnd = .unknown) -> WallSets.SwitchStep {
        WallSets.switchStep(on: n, wall: wall(n), at: at, refresh: refresh, wallTime: { wall($0) }, playing: playing, itemEnd: { end })
    }

    @Test func theCutIsTheFirstVsyncAtOrAfterTheSwitchTimeAndNoMoreThanTheLeadAhead() {
        // 10.005 s: between vsync 600 (10 s) and 601 (10.0167 s).
        let at = w0 + 10_005_000_000
        #expect(step(on: 400, at: at) == .wait, "3.3 s ahead: further than the lead")
        #expect(step(on: 470, at: at) == .wait, "131 vsyncs ahead: further than the lead")
        #expect(step(on: 482, at: at) == .cut(601, cutAt: 601), "under two seconds ahead: queued, the item playing cut there")
        // Exactly on a vsync: that one.
        #expect(step(on: 500, at: wall(600)) == .cut(600, cutAt: 600))
        #expect(step(on: 599, at: wall(600)) == .cut(600, cutAt: 600))
    }

    @Test func anItemEndingOnTheCutIsNotCutAndOneEndingBeforeItIsWaitedFor() {
        let at = wall(600)
        #expect(step(on: 500, at: at, end: .atVsync(600)) == .cut(600, cutAt: nil), "it ends there itself")
        #expect(step(on: 500, at: at, end: .atVsync(550)) == .wait, "the item after it is the one cut")
        #expect(step(on: 500, at: at, end: .atVsync(700)) == .cut(600, cutAt: 600))
        #expect(step(on: 500, at: at, end: .notStarted) == .wait)
    }

    @Test func nothingPlayingStartsOnTheClockAndAPastTimeIsTakenAtOnce() {
        #expect(step(on: 500, at: wall(600), playing: false) == .start(600))
        #expect(step(on: 600, at: wall(600)) == .late, "its vsync itself: its time has come")
        #expect(step(on: 700, at: wall(600), end: .notStarted) == .late)
    }
}
