import Foundation
import Testing
import Synchronization
import Playback
import PlaybackTestSupport
@testable import PlaybackTests

@Suite("Monitor and Latch")
struct MonitorTests {
    @Test func aWaitWhosePredicateNeverHoldsSaysItTimedOutAfterItsTimeout() {
        let monitor = Monitor(0)
        let start = ContinuousClock.now
        let met = monitor.wait(until: { $0 == 1 }, timeout: 0.2)
        let waited = seconds(since: start)
        #expect(!met)
        #expect(waited >= 0.2)
        #expect(waited < 5)  // a loaded machine may be late, never by seconds
    }

    @Test func anUpdateFromAnotherThreadWakesEveryWaiterLongBeforeItsTimeout() {
        let monitor = Monitor(0)
        let woken = Atomic(0)
        let done = Latch<Void>()
        let waiters = 4
        let start = ContinuousClock.now
        for _ in 0..<waiters {
            onThread {
                if monitor.wait(until: { $0 == 1 }, timeout: 30) {
                    if woken.add(1, ordering: .relaxed).newValue == waiters { done.set(()) }
                }
            }
        }
        onThread(after: 0.1) { monitor.update { $0 = 1 } }
        #expect(done.wait(timeout: 30) != nil)
        #expect(woken.load(ordering: .relaxed) == waiters)
        #expect(seconds(since: start) < 10)  // woken by the update, not by the 30 s timeout
    }

    @Test func aWaiterSeesTheValueThatSatisfiedItsPredicateUnderTheLock() {
        let monitor = Monitor([Int]())
        onThread(after: 0.05) {
            for n in 1...100 { monitor.update { $0.append(n) } }
        }
        let seen = monitor.wait(until: { $0.count >= 50 }, timeout: 30) { list, timedOut -> [Int]? in
            guard !timedOut else { return nil }
            defer { list.removeAll() }  // the body may change the value; no one else runs meanwhile
            return list
        }
        #expect(seen.map { $0 == Array(1...$0.count) } == true)
        #expect((seen?.count ?? 0) >= 50)
    }

    @Test func withLockAndSignalWakeAWaiterToo() {
        let monitor = Monitor(false)
        onThread(after: 0.05) {
            monitor.withLock { $0 = true }
            monitor.signal()
        }
        #expect(monitor.wait(until: { $0 }, timeout: 30))
    }

    @Test func aLatchWaitReportsItsTimeoutAndWhatItWaitedFor() {
        let latch = Latch<Int>()
        let start = ContinuousClock.now
        #expect(latch.wait(timeout: 0.1) == nil)
        #expect(seconds(since: start) >= 0.1)
        do {
            _ = try latch.wait(timeout: 0.05, waitingFor: "the test's answer")
            Issue.record("the wait did not time out")
        } catch {
            #expect(error.seconds == 0.05)
            #expect(error.description.hasSuffix("waiting for the test's answer"))
        }
    }

    @Test func aLatchSetOnAnotherThreadWakesItsWaiters() {
        let latch = Latch<Int>()
        let start = ContinuousClock.now
        onThread(after: 0.1) { latch.set(42) }
        #expect(latch.wait(timeout: 30) == 42)
        #expect(seconds(since: start) < 10)
    }

    @Test func aSlicedLatchWaitGivesUpWhenAskedAndOtherwiseTimesOut() {
        let latch = Latch<Int>()
        let asked = Atomic(0)
        var start = ContinuousClock.now
        let gaveUp = latch.wait(timeout: 30, slice: 0.02) { asked.add(1, ordering: .relaxed).newValue >= 3 }
        #expect(gaveUp == nil)
        #expect(asked.load(ordering: .relaxed) == 3)
        #expect(seconds(since: start) < 10)

        start = ContinuousClock.now
        #expect(latch.wait(timeout: 0.15, slice: 0.02) { false } == nil)
        #expect(seconds(since: start) >= 0.15)

        onThread(after: 0.05) { latch.set(7) }
        #expect(latch.wait(timeout: 30, slice: 0.02) { false } == 7)
    }
}
