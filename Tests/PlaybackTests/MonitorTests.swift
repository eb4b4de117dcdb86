import Foundation
import Testing
import Synchronization
import Playback
import PlaybackTestSupport

/// Seconds on the monotonic clock since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// Runs `body` on a thread of its own after `delay` seconds.
func onThread(after delay: Double = 0, _ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        body()
    }
}

@Suite("Monitor and Latch")
struct MonitorTests {

    @Test func aWaitWhosePredicateHoldsReturnsAtOnceWithoutTimingOut() {
        let monitor = Monitor(1)
        let start = ContinuousClock.now
        let timedOut = monitor.wait(until: { $0 == 1 }, timeout: 10) { _, timedOut in timedOut }
        #expect(!timedOut)
        #expect(seconds(since: start) < 1)
    }

    @Test func zeroNegativeNaNAndInfiniteTimeoutsNeitherTrapNorHang() {
        let monitor = Monitor(0)
        #expect(!monitor.wait(until: { $0 == 1 }, timeout: 0))
        #expect(!monitor.wait(until: { $0 == 1 }, timeout: -5))
        #expect(!monitor.wait(until: { $0 == 1 }, timeout: .nan))
        // An infinite timeout is cut to a year; the value is already there, so no wait at all.
        #expect(Monitor(1).wait(until: { $0 == 1 }, timeout: .infinity))
    }

    @Test func updatesFromManyThreadsAreNeverLostAndTheWaiterSeesTheirSum() {
        let monitor = Monitor(0)
        let threads = 8, each = 5_000
        for _ in 0..<threads {
            onThread {
                for _ in 0..<each { monitor.update { $0 += 1 } }
            }
        }
        #expect(monitor.wait(until: { $0 == threads * each }, timeout: 60))
        #expect(monitor.withLock { $0 } == threads * each)
    }

    @Test func aLatchIsSetOnceTheFirstValueWins() {
        let latch = Latch<String>()
        #expect(!latch.isSet)
        #expect(latch.value == nil)
        #expect(latch.set("first"))
        #expect(!latch.set("second"))
        #expect(latch.value == "first")
        #expect(latch.wait(timeout: 0) == "first")
    }

    @Test func aLatchRacedBySeveralThreadsTakesExactlyOneValue() {
        let latch = Latch<Int>()
        let winners = Atomic(0)
        let finished = Atomic(0)
        let all = Latch<Void>()
        for n in 0..<16 {
            onThread {
                if latch.set(n) { winners.add(1, ordering: .relaxed) }
                if finished.add(1, ordering: .relaxed).newValue == 16 { all.set(()) }
            }
        }
        #expect(all.wait(timeout: 30) != nil)
        #expect(winners.load(ordering: .relaxed) == 1)
        #expect(latch.value != nil)
    }

}
