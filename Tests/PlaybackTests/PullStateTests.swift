@testable import Playback
import Testing

/// The vsync pull's state machine alone: held starts, starving, stalls, and what ends them.
/// Virtual values only: vsync numbers, seconds waited, positions in 60ths of a second.
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
}
