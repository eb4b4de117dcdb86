@testable import Playback
import Testing

/// The vsync pull's state machine alone: held starts, starving, stalls, and what ends them; which
/// vsyncs are asked again (waits for decoding, seams, retries). Virtual values only: vsync
/// numbers, seconds waited, positions in 60ths of a second, instants set apart by hand.
@Suite struct PullStateTests {
    func at(_ sixtieths: Int64) -> MediaTime { MediaTime(value: sixtieths, timescale: 60) }
    /// Where a stall that began on vsync `since` holds, when no picture of the run is on screen.
    func stallPosition(_ since: Int64) -> MediaTime { at(1000 + since) }

    // MARK: Held start

    @Test func aStartWithoutAHostTimeHoldsUntilAFrameIsDecoded() {
        var s = PullState()
        #expect(s.phase == .playing && !s.isHoldingStart && !s.isStalled)
        s.start(holds: true)
        #expect(s.phase == .holdingStart(over: .playing))
        // Nothing decoded: the anchor moves to each vsync asked, and the hold stays.
        var looked = 0
        #expect(s.anchoring(frameReady: { looked += 1; return false }) == .startsHere)
        #expect(s.anchoring(frameReady: { looked += 1; return false }) == .startsHere)
        #expect(looked == 2 && s.isHoldingStart)
        // Decoded: this vsync still starts the timeline, and the hold is over.
        #expect(s.anchoring(frameReady: { true }) == .startsHere)
        #expect(s.phase == .playing)
        #expect(s.anchoring(frameReady: { Issue.record("looked while playing"); return true }) == .runs)
    }

    @Test func aStartAtAHostTimeDoesNotHoldAndGivesUpAHold() {
        var s = PullState()
        s.start(holds: false)
        #expect(s.phase == .playing)
        s.start(holds: true)
        s.start(holds: true)
        #expect(s.phase == .holdingStart(over: .playing), "never nested")
        s.start(holds: false)
        #expect(s.phase == .playing)
    }

    @Test func aHoldKeepsWhatItInterrupted() {
        // Starving before a pause: a start at a host time given while held counts on from it.
        var s = PullState(phase: .starving(since: 10, waited: 0.5))
        s.start(holds: true)
        #expect(s.phase == .holdingStart(over: .starving(since: 10, waited: 0.5)))
        #expect(!s.isStalled)
        s.start(holds: false)
        #expect(s.phase == .starving(since: 10, waited: 0.5))

        // A stall stays one while held: still stalled for the API, and the hold anchors.
        s = PullState(phase: .stalled(at: at(7)))
        s.start(holds: true)
        #expect(s.isStalled && s.isHoldingStart)
        #expect(s.anchoring(frameReady: { false }) == .startsHere)
        // A frame decoded ends the hold, not the stall (that takes a frame shown).
        #expect(s.anchoring(frameReady: { true }) == .startsHere)
        #expect(s.phase == .stalled(at: at(7)))
        #expect(s.anchoring(frameReady: { true }) == .holds(at: at(7)))
    }

    @Test func aHoldIsNotAStarvingOrAStall() {
        var s = PullState(phase: .holdingStart(over: .playing))
        #expect(s.starve(vsync: 5, waited: 100, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .holdingStart(over: .playing))
    }

    // MARK: Starving and stalls

    @Test func starvingCountsVsyncsFromTheFirstOneMissedAndStallsAtTheTimeout() {
        var s = PullState()
        // 2 s at 60 Hz: the 120th vsync without a frame (counting the first) stalls.
        #expect(s.starve(vsync: 100, waited: 0, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .starving(since: 100, waited: 0))
        #expect(s.starve(vsync: 218, waited: 0, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .starving(since: 100, waited: 0))
        let stall = s.starve(vsync: 219, waited: 0, hertz: 60, timeout: 2, stallPosition: stallPosition)
        #expect(stall == PullState.Stall(at: at(1100), seconds: 2))
        #expect(s.phase == .stalled(at: at(1100)) && s.isStalled)
        // Stalled: no second stall, and the timeline holds where it began.
        #expect(s.starve(vsync: 300, waited: 5, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .stalled(at: at(1100)))
        #expect(s.anchoring(frameReady: { Issue.record("looked while stalled"); return true }) == .holds(at: at(1100)))
    }

    @Test func timeWaitedForDecodingCountsTowardsTheTimeoutOnOneVsync() {
        // A clock that waits for decoding asks the same vsync again and again.
        var s = PullState()
        #expect(s.starve(vsync: 7, waited: 0.75, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.starve(vsync: 7, waited: 1.0, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .starving(since: 7, waited: 1.75))
        let stall = s.starve(vsync: 7, waited: 0.25, hertz: 60, timeout: 2, stallPosition: { _ in self.at(3) })
        #expect(stall == PullState.Stall(at: at(3), seconds: 2))
    }

    @Test func withoutARefreshRateStarvingIsCountedButNeverStalls() {
        var s = PullState()
        #expect(s.starve(vsync: 1, waited: 10, hertz: nil, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.starve(vsync: 2, waited: 10, hertz: nil, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .starving(since: 1, waited: 20))
    }

    @Test func aZeroTimeoutStallsOnTheFirstVsyncMissed() {
        var s = PullState()
        var asked: Int64?
        let stall = s.starve(vsync: 42, waited: 0, hertz: 60, timeout: 0, stallPosition: { asked = $0; return self.at(9) })
        #expect(stall == PullState.Stall(at: at(9), seconds: 1.0 / 60) && asked == 42)
    }

    @Test func aStallMovesOnToAFrameDecodedLaterThanWhereItHolds() {
        var s = PullState(phase: .stalled(at: at(100)))
        // Nothing decoded, or the missing frame itself (or an earlier one): the stall holds.
        #expect(s.anchoring(frameReady: { true }, nextFrameAt: { nil }) == .holds(at: at(100)))
        #expect(s.anchoring(frameReady: { true }, nextFrameAt: { self.at(100) }) == .holds(at: at(100)))
        #expect(s.anchoring(frameReady: { true }, nextFrameAt: { self.at(90) }) == .holds(at: at(100)))
        // A frame after a gap: the timeline moves on to it, still stalled until it is shown.
        #expect(s.anchoring(frameReady: { true }, nextFrameAt: { self.at(154) }) == .movesOn(to: at(154)))
        #expect(s.phase == .stalled(at: at(154)) && s.isStalled)
        #expect(s.anchoring(frameReady: { true }, nextFrameAt: { self.at(154) }) == .holds(at: at(154)))
        let ended = s.shown()
        #expect(ended && s.phase == .playing)
    }

    @Test func somethingDecodedEndsStarvingButNotAStall() {
        var s = PullState(phase: .starving(since: 3, waited: 1))
        s.decoded()
        #expect(s.phase == .playing)
        s.decoded()
        #expect(s.phase == .playing)
        s = PullState(phase: .holdingStart(over: .starving(since: 3, waited: 1)))
        s.decoded()
        #expect(s.phase == .holdingStart(over: .playing))
        s = PullState(phase: .stalled(at: at(1)))
        s.decoded()
        #expect(s.phase == .stalled(at: at(1)))
        s = PullState(phase: .holdingStart(over: .stalled(at: at(1))))
        s.decoded()
        #expect(s.phase == .holdingStart(over: .stalled(at: at(1))))
    }

    @Test func afterStarvingEndsItCountsAfresh() {
        var s = PullState()
        _ = s.starve(vsync: 10, waited: 1.5, hertz: 60, timeout: 2, stallPosition: stallPosition)
        s.decoded()
        #expect(s.starve(vsync: 20, waited: 1.5, hertz: 60, timeout: 2, stallPosition: stallPosition) == nil)
        #expect(s.phase == .starving(since: 20, waited: 1.5))
    }

    // MARK: What ends them

    @Test func aFrameShownEndsEverything() {
        let phases: [(PullState.Phase, endsAStall: Bool)] = [
            (.playing, false), (.starving(since: 1, waited: 0), false), (.stalled(at: at(2)), true),
            (.holdingStart(over: .playing), false), (.holdingStart(over: .stalled(at: at(2))), true),
        ]
        for (phase, endsAStall) in phases {
            var s = PullState(phase: phase)
            #expect(s.shown() == endsAStall, "\(phase)")
            #expect(s.phase == .playing)
        }
    }

    @Test func endingAStallKeepsAHold() {
        let phases: [(PullState.Phase, PullState.Phase)] = [
            (.playing, .playing), (.starving(since: 1, waited: 0), .playing), (.stalled(at: at(2)), .playing),
            (.holdingStart(over: .starving(since: 1, waited: 0)), .holdingStart(over: .playing)),
            (.holdingStart(over: .stalled(at: at(2))), .holdingStart(over: .playing)),
        ]
        for (phase, after) in phases {
            var s = PullState(phase: phase)
            s.endStall()
            #expect(s.phase == after, "\(phase)")
        }
    }

    @Test func detachingEndsHoldAndStarvingButKeepsAStall() {
        let phases: [(PullState.Phase, PullState.Phase)] = [
            (.playing, .playing), (.starving(since: 1, waited: 0), .playing), (.stalled(at: at(2)), .stalled(at: at(2))),
            (.holdingStart(over: .playing), .playing),
            (.holdingStart(over: .starving(since: 1, waited: 0)), .playing),
            (.holdingStart(over: .stalled(at: at(2))), .stalled(at: at(2))),
        ]
        for (phase, after) in phases {
            var s = PullState(phase: phase)
            s.detach()
            #expect(s.phase == after, "\(phase)")
        }
    }

    // MARK: The gate

    let t0 = ContinuousClock.now
    func seam(_ vsync: Int64, openedAfter seconds: Double = 0, seen: UInt64 = 0) -> PullState.Seam {
        PullState.Seam(vsync: vsync, opened: t0 + .milliseconds(Int64(seconds * 1000)), seen: seen)
    }
    /// Asks vsync `n` with no seam input that matters.
    func admit(_ s: inout PullState, _ n: Int64, last: Int64?) -> PullState.Admission {
        s.admit(n, last: last, now: t0, limit: 1, plays: false, wake: 0)
    }

    @Test func vsyncsGoForwardAndAreAnsweredOnce() {
        var s = PullState()
        #expect(admit(&s, 5, last: nil) == .pull)
        #expect(admit(&s, 5, last: 5) == .asked)
        #expect(admit(&s, 4, last: 5) == .asked)
        #expect(admit(&s, 6, last: 5) == .pull)
        #expect(s.gate == .answered && s.isSettled && !s.isWaiting(6))
    }

    @Test func aPictureThatWaitsForDecodingMayBeAskedAgain() {
        var s = PullState()
        s.wait(8)
        #expect(s.gate == .waiting(vsync: 8) && s.isWaiting(8) && !s.isWaiting(9))
        #expect(s.isSettled && s.seam == nil && s.waitingSeam == nil)
        #expect(admit(&s, 7, last: 8) == .asked)
        #expect(s.gate == .waiting(vsync: 8), "an earlier vsync changes nothing")
        #expect(admit(&s, 8, last: 8) == .pull)
        #expect(s.gate == .answered)
        #expect(admit(&s, 8, last: 8) == .asked)
        s.wait(8)
        #expect(admit(&s, 9, last: 8) == .pull)
        #expect(s.gate == .answered)
    }

    @Test func aSeamWaitsForTheEndsHandlersOnItsVsync() {
        var s = PullState()
        s.openSeam(20, now: t0, wake: 3)
        #expect(s.gate == .seam(seam(20, seen: 3), waiting: true))
        #expect(s.isWaiting(20) && !s.isSettled && s.waitingSeam == seam(20, seen: 3) && s.seam == seam(20, seen: 3))
        // Asked again within the limit with nothing to play: it waits, noting the wake count.
        let half = s.admit(20, last: 20, now: t0 + .milliseconds(500), limit: 1, plays: false, wake: 4)
        #expect(half == .seamWaits)
        #expect(s.gate == .seam(seam(20, seen: 4), waiting: true))
        // Something plays now (a seek back): the seam closes and the vsync is pulled.
        let sought = s.admit(20, last: 20, now: t0 + .milliseconds(600), limit: 1, plays: true, wake: 5)
        #expect(sought == .pull)
        #expect(s.gate == .answered && s.isSettled)
    }

    @Test func aSeamClosesWhenItsWaitIsOver() {
        var s = PullState()
        s.openSeam(20, now: t0, wake: 0)
        let over = s.admit(20, last: 20, now: t0 + .seconds(1), limit: 1, plays: false, wake: 0)
        #expect(over == .pull)
        #expect(s.gate == .answered)
    }

    @Test func aSeamClosesOnAnotherVsync() {
        var s = PullState()
        s.openSeam(20, now: t0, wake: 0)
        #expect(admit(&s, 21, last: 20) == .pull)
        #expect(s.gate == .answered)
    }

    @Test func aSeamOpenedWithANewPictureDoesNotWait() {
        var s = PullState()
        s.openSeam(20, now: t0, wake: 0)
        s.showsNew(19)
        #expect(s.isWaiting(20), "another vsync's picture changes nothing")
        s.showsNew(20)
        #expect(s.gate == .seam(seam(20), waiting: false))
        #expect(!s.isWaiting(20) && s.waitingSeam == nil && s.seam == seam(20) && !s.isSettled)
        // Not asked again; the next vsync closes it.
        #expect(admit(&s, 20, last: 20) == .asked)
        #expect(s.seam != nil)
        #expect(admit(&s, 21, last: 20) == .pull)
        #expect(s.gate == .answered)
        // A new picture without a seam changes nothing.
        s.wait(30)
        s.showsNew(30)
        #expect(s.gate == .waiting(vsync: 30))
    }

    @Test func waitingAtAnOpenSeamWaitsOnItsVsync() {
        var s = PullState(gate: .seam(seam(20), waiting: false))
        s.wait(20)
        #expect(s.gate == .seam(seam(20), waiting: true))
    }

    @Test func aRetryShowsTheBackgroundUntilItsVsync() {
        var s = PullState()
        s.retry(at: 160)
        #expect(s.gate == .retry(at: 160) && !s.isSettled && !s.isWaiting(100))
        #expect(admit(&s, 101, last: 100) == .pull, "the retry is looked at after the vsync is admitted")
        for n: Int64 in [101, 159] {
            let waits = s.retryWaits(n)
            #expect(waits, "vsync \(n)")
        }
        #expect(s.gate == .retry(at: 160))
        do { let waits = s.retryWaits(160); #expect(!waits) }
        #expect(s.gate == .answered)
        do { let waits = s.retryWaits(161); #expect(!waits) }
    }

    @Test func detachingForgetsWaitsAndRetriesButKeepsASeamOpen() {
        let gates: [(PullState.Gate, PullState.Gate)] = [
            (.answered, .answered), (.waiting(vsync: 4), .answered), (.retry(at: 9), .answered),
            (.seam(seam(4), waiting: true), .seam(seam(4), waiting: false)),
            (.seam(seam(4), waiting: false), .seam(seam(4), waiting: false)),
        ]
        for (gate, after) in gates {
            var s = PullState(gate: gate)
            s.detach()
            #expect(s.gate == after, "\(gate)")
        }
        // The next output's first vsync: not asked before; an open seam on another vsync closes.
        var s = PullState(gate: .seam(seam(4), waiting: false))
        #expect(admit(&s, 0, last: nil) == .pull)
        #expect(s.gate == .answered)
    }
}
