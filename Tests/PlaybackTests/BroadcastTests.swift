import Foundation
import Testing
import Synchronization
@testable import Playback
import PlaybackTestSupport

/// Every value a stream gives until it ends, or nil when it has not ended within `timeout` seconds.
func drain<Value: Sendable>(_ stream: AsyncStream<Value>, timeout: Double = 30) async -> [Value]? {
    let result = Latch<[Value]>()
    let reader = Task {
        var values: [Value] = []
        for await value in stream { values.append(value) }
        result.set(values)
    }
    let deadline = ContinuousClock.now + .seconds(timeout)
    while !result.isSet && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    reader.cancel()
    return result.value
}

@Suite("Broadcast: no event lost silently")
struct BroadcastTests {
    @Test func everySubscriberGetsEveryValueInOrderUpToTheLimit() async {
        let broadcast = Broadcast<Int>(limit: 1000)
        let a = broadcast.stream(), b = broadcast.stream(initial: -1)
        for n in 0..<999 { broadcast.send(n) }
        broadcast.finish()
        #expect(await drain(a) == Array(0..<999))
        #expect(await drain(b) == [-1] + Array(0..<999))  // the initial value takes a place too
        #expect(broadcast.overflowedSubscribers == 0)
    }

    @Test func aSubscriberThatKeepsReadingGetsFarMoreValuesThanTheLimit() async {
        let broadcast = Broadcast<Int>(limit: 64)
        let stream = broadcast.stream()
        let count = 20_000
        let read = Monitor(0)
        let got = Task {
            var values: [Int] = []
            for await value in stream {
                values.append(value)
                read.update { $0 += 1 }
            }
            return values
        }
        // Sent from a thread of its own (it waits; the reader runs on the task pool), in bursts of
        // half the limit, each once the reader has taken all but a few. The pool is shared with
        // every test running at the same time (two threads on a two-core machine, and synchronous
        // tests hold them), so the reader may not run for a long while: the waits allow minutes.
        let sender = Latch<Bool>()
        Thread.detachNewThread {
            var sent = 0
            while sent < count {
                for _ in 0..<32 { broadcast.send(sent); sent += 1 }
                let target = sent - 16
                guard read.wait(until: { $0 >= target }, timeout: 900) else { break }
            }
            broadcast.finish()
            sender.set(sent == count)
        }
        let values = await got.value
        #expect(sender.wait(timeout: 900) == true)
        #expect(values == Array(0..<count))
        #expect(broadcast.overflowedSubscribers == 0)
    }

    @Test func aSubscriberThatGoesAwayIsRemoved() async {
        let broadcast = Broadcast<Int>()
        do {
            let stream = broadcast.stream()
            _ = stream
            #expect(broadcast.subscriberCount == 1)
        }
        // The stream is gone: its termination removes it (at the latest at the next send).
        broadcast.send(1)
        #expect(broadcast.subscriberCount == 0)
    }

    @Test func aStreamAskedForAfterFinishEndsAtOnce() async {
        let broadcast = Broadcast<Int>()
        broadcast.finish()
        #expect(await drain(broadcast.stream(initial: 5)) == [5])
    }

    @Test func aSubscriberThatStopsReadingCostsAtMostTheLimit() {
        // The bound the documentation gives: 4096 values; a player event is this big.
        #expect(Broadcast<Player.Event>.defaultLimit == 4096)
        #expect(MemoryLayout<Player.Event>.stride * Broadcast<Player.Event>.defaultLimit <= 128 * 1024)
    }
}

@Suite("Broadcast: read by a thread")
struct BroadcastThreadTests {

    @Test func aThreadSubscribedAfterFinishEndsAtOnce() {
        let broadcast = Broadcast<Int>()
        broadcast.finish()
        let calls = Atomic(0)
        broadcast.consume(threadName: "test-late") { _ in calls.add(1, ordering: .relaxed) }
        broadcast.send(1)
        #expect(calls.load(ordering: .relaxed) == 0)
        #expect(broadcast.subscriberCount == 0)
    }
}
