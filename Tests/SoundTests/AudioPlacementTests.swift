@testable import Sound
import Testing

/// The audio writer's state machine: placement, the settle checks after it, and what loses it.
@Suite struct AudioPlacementTests {
    func fresh(tries: Int = 3) -> AudioPlacement { AudioPlacement(tolerance: 0.005, settleTime: 0.5, tries: tries) }

    @Test func aPlacementIsCheckedForItsSettleTimeThenLeftToTheClockSync() {
        var p = fresh()
        #expect(!p.isPlaced)
        p.didPlace()
        #expect(p.phase == .settling(until: nil, triesLeft: 3))
        // The device has not started (delay 0): nothing to judge, and the settle time has not begun.
        do { let c = p.check(now: 10, error: 0.02, delay: 0); #expect(c == .keep) }
        #expect(p.phase == .settling(until: nil, triesLeft: 3))
        // The first measure it plays for starts the settle time.
        do { let c = p.check(now: 10, error: 0.001, delay: 0.03); #expect(c == .keep) }
        #expect(p.phase == .settling(until: 10.5, triesLeft: 3))
        do { let c = p.check(now: 10.5, error: 0.004, delay: 0.03); #expect(c == .keep) }
        // Past it, even a large error is the clock sync's to follow.
        do { let c = p.check(now: 10.51, error: 0.2, delay: 0.03); #expect(c == .keep) }
        #expect(p.phase == .placed)
        do { let c = p.check(now: 11, error: 0.2, delay: 0.03); #expect(c == .keep) }
    }

    @Test func aMeasureOffInTheSettleTimePlacesAgainWithOneTryFewer() {
        var p = fresh()
        p.didPlace()
        do { let c = p.check(now: 1, error: 0.006, delay: 0.03); #expect(c == .placeAgain) }
        #expect(p.phase == .unplaced(triesLeft: 2))
        p.didPlace()
        #expect(p.phase == .settling(until: nil, triesLeft: 2))
        do { let c = p.check(now: 2, error: -0.01, delay: 0.03); #expect(c == .placeAgain) }
        p.didPlace()
        do { let c = p.check(now: 3, error: 0.01, delay: 0.03); #expect(c == .placeAgain) }
        // No try left: the next placement is final.
        #expect(p.phase == .unplaced(triesLeft: 0))
        p.didPlace()
        #expect(p.phase == .placed)
        do { let c = p.check(now: 3.1, error: 0.05, delay: 0.03); #expect(c == .keep) }
    }

    @Test func losingThePlacementCountsOnceAndStartsAFreshOne() {
        var p = fresh()
        do { let lost = p.lose(); #expect(!lost, "nothing in place: nothing to count") }
        p.didPlace()
        do { let lost = p.lose(); #expect(lost) }
        #expect(p.phase == .unplaced(triesLeft: nil))
        do { let lost = p.lose(); #expect(!lost) }
        p.didPlace()
        #expect(p.phase == .settling(until: nil, triesLeft: 3))
        _ = p.check(now: 0, error: 0, delay: 0.02)
        _ = p.check(now: 1, error: 0, delay: 0.02)
        #expect(p.phase == .placed)
        do { let lost = p.lose(); #expect(lost) }
        p.didPlace()
        #expect(p.phase == .settling(until: nil, triesLeft: 3), "a loss gives every try back")
    }

    @Test func aLossWhileUnplacedByACheckKeepsItsTriesAndAResetDoesNot() {
        var p = fresh()
        p.didPlace()
        _ = p.check(now: 0, error: 0.05, delay: 0.02)
        do { let lost = p.lose(); #expect(!lost) }
        #expect(p.phase == .unplaced(triesLeft: 2))
        p.reset()
        #expect(p.phase == .unplaced(triesLeft: nil))
    }

    @Test func noTriesAtAllSkipsTheSettleChecks() {
        var p = fresh(tries: 0)
        p.didPlace()
        #expect(p.phase == .placed)
        p.didPlace()
        #expect(p.phase == .placed, "placing what is in place changes nothing")
    }
}
