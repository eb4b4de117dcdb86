import Foundation
import Testing
import Synchronization
@testable import Playback
import PlaybackTestSupport
@testable import PlaybackTests

@Suite("Broadcast: no event lost silently")
struct BroadcastTests {

    /// Before: a subscriber that fell 256 behind silently lost the oldest values and went on.
    @Test func aSubscriberThatFallsBehindIsEndedWithNoGapAndTheLossIsReported() async {
        let broadcast = Broadcast<Int>(name: "test events", limit: 100)
        let reports = Mutex<[String]>([])
        broadcast.reportLosses { overflow in reports.withLock { $0.append(overflow.description) } }
        let slow = broadcast.stream()
        let reader = broadcast.stream()
        let readerGot = Task {
            var values: [Int] = []
            for await value in reader { values.append(value) }
            return values
        }
        // The reader keeps up (it is read as values come); `slow` is never read while they come.
        for n in 0..<300 {
            broadcast.send(n)
            if n % 50 == 49 { try? await Task.sleep(for: .milliseconds(20)) }
        }
        // `slow` got the first 100 values, in order, then its stream ended: no gap, and not silent.
        #expect(await drain(slow) == Array(0..<100))
        #expect(broadcast.overflowedSubscribers == 1)
        #expect(reports.withLock { $0 } == ["a subscriber of test events fell 100 values behind and was ended"])
        broadcast.finish()
        let got = await readerGot.value
        // The reader may have been slower than 100 values too on a loaded machine: then it ended
        // the same way (a prefix, counted), never with a hole in the middle.
        #expect(got == Array(0..<got.count))
        #expect(got.count == 300 || broadcast.overflowedSubscribers == 2)
    }

}

@Suite("Broadcast: read by a thread")
struct BroadcastThreadTests {
    @Test func aThreadGetsEveryValueInOrderAndEndsWithTheBroadcast() {
        let broadcast = Broadcast<Int>(limit: 64)
        let got = Monitor<[Int]>([])
        let readers = Mutex<Set<UInt>>([])
        broadcast.consume(threadName: "test-reader") { value in
            readers.withLock { _ = $0.insert(UInt(pthread_self())) }
            got.update { $0.append(value) }
        }
        // Sent in bursts of half the limit, each once the thread has read the one before.
        for burst in 0..<100 {
            for n in 0..<32 { broadcast.send(burst * 32 + n) }
            let target = (burst + 1) * 32
            // Minutes, not seconds: the whole suite runs in parallel on a shared machine.
            #expect(got.wait(until: { $0.count >= target }, timeout: 240), "burst \(burst) not read within 240 s")
        }
        broadcast.finish()
        broadcast.send(-1)  // after the end: reaches nobody
        #expect(got.wait(until: { $0.count > 3200 }, timeout: 0.2) == false)
        #expect(got.withLock { $0 } == Array(0..<3200))
        // One thread read them all, not the sending one.
        #expect(readers.withLock { $0.count } == 1)
        #expect(readers.withLock { !$0.contains(UInt(pthread_self())) })
        #expect(broadcast.overflowedSubscribers == 0)
        #expect(broadcast.subscriberCount == 0)
    }

    @Test func aThreadThatFallsBehindGetsThePrefixWithNoGapAndTheLossIsReported() {
        let broadcast = Broadcast<Int>(name: "test events", limit: 10)
        let reports = Mutex<[String]>([])
        broadcast.reportLosses { overflow in reports.withLock { $0.append(overflow.description) } }
        let release = Latch<Bool>()
        let got = Monitor<[Int]>([])
        broadcast.consume(threadName: "test-slow") { value in
            _ = release.wait(timeout: 600)  // stuck on its first value until released
            got.update { $0.append(value) }
        }
        for n in 0..<50 { broadcast.send(n) }
        release.set(true)
        // 10 values waited unread when the next did not fit (11 when the thread had taken the
        // first before): those come, in order, and nothing after them.
        // A starved reader thread may take minutes on a loaded machine (a 30 s limit expired in CI).
        #expect(got.wait(until: { $0.count >= 10 }, timeout: 240), "\(got.withLock { $0 })")
        _ = got.wait(until: { $0.count > 11 }, timeout: 0.3)
        #expect(broadcast.overflowedSubscribers == 1)
        #expect(reports.withLock { $0 } == ["a subscriber of test events fell 10 values behind and was ended"])
        #expect(broadcast.subscriberCount == 0)
        let values = got.withLock { $0 }
        #expect(values == Array(0..<values.count) && (10...11).contains(values.count), "\(values)")
    }

}
