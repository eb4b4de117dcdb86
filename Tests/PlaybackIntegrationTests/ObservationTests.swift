import Dispatch
import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
@testable import PlaybackTests

/// Observation as AVFoundation's KVO with `.initial`: every observable stream starts with the value
/// now and misses no change after it; notification streams are subscribed when they are made; time
/// observers are called in the order of the changes, on their queue or on the player's own
/// callback thread. And the API's small forms: the `actionAtItemEnd` setter, `seek(to:)`.
@Suite struct ObservationTests {
    let unit = PlaybackTests.ObservationTests()   // its fixtures: backend, describe, item, seekWithoutWaiting

    /// Streams made while another thread changes the rate: each starts with a value and then sees
    /// every change (no two equal rates in a row, which a lost change would show), ending with the
    /// rate the player has at the end.
    @Test func noChangeFallsBetweenTheValueNowAndTheFirstChange() async throws {
        let player = try Player(item: unit.item("a.mp4"), logger: quiet)
        let done = Atomic(false)
        let toggler = Thread {
            var on = false
            while !done.load(ordering: .relaxed) {
                on.toggle()
                if on { player.play() } else { player.pause() }
            }
            player.pause()
        }
        toggler.start()
        var streams: [AsyncStream<Player.Change>] = []
        for _ in 0..<50 {
            streams.append(player.changes())
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        done.store(true, ordering: .relaxed)
        #expect(await eventually { toggler.isFinished })
        let final = player.rate
        #expect(final == 0)
        for stream in streams {
            var rates: [Float] = []
            for await change in stream {
                if case .rate(let r) = change { rates.append(r) }
                if rates.last == final, player.rate == final {
                    // Caught up once the last value is the final one (the toggler has ended). A
                    // stream made after the last toggle holds only its first value: waiting for a
                    // second would wait for ever.
                    break
                }
            }
            #expect(!rates.isEmpty)
            #expect(zip(rates, rates.dropFirst()).allSatisfy { $0 != $1 })
            #expect(rates.last == final)
        }
    }


    /// With no queue, callbacks run on the player's own callback thread, one at a time: never on
    /// the thread that pulls the vsyncs, never on the thread that calls `play()`.
    @Test func callbacksWithoutAQueueRunOnThePlayersCallbackThreadOneAtATime() throws {
        let player = try Player(item: unit.item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let threads = Recorder<UInt>()
        let roles = Recorder<String>()
        let roleKey = "observation-test-role"
        let inFlight = Atomic(0), most = Atomic(0)
        let times = Recorder<MediaTime>()
        _ = try player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 30)) { time in
            let now = inFlight.add(1, ordering: .relaxed).newValue
            _ = most.max(now, ordering: .relaxed)
            threads.append(UInt(pthread_self()))
            roles.append(Thread.current.threadDictionary[roleKey] as? String ?? "-")
            times.append(time)
            Thread.sleep(forTimeInterval: 0.001)
            inFlight.subtract(1, ordering: .relaxed)
        }
        // Threads are told apart by a mark in their dictionary (a pthread id can be reused once
        // its thread has ended).
        Thread.current.threadDictionary[roleKey] = "caller"
        defer { Thread.current.threadDictionary[roleKey] = nil }
        // The vsyncs are pulled on one thread while another pauses and plays.
        player.play()
        nonisolated(unsafe) let pulled = display  // used only by the puller thread from here on
        let puller = Thread {
            Thread.current.threadDictionary[roleKey] = "puller"
            pulled.step(240)
        }
        puller.start()
        for _ in 0..<40 {
            player.pause()
            player.play()
        }
        while !puller.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        #expect(player.waitForTimeObserverCallbacks(timeout: 30))
        #expect(times.all.count > 40)
        #expect(Set(threads.all).count == 1)
        #expect(Set(roles.all) == ["-"], "callbacks ran on: \(Set(roles.all))")
        #expect(most.load(ordering: .relaxed) == 1)
        // Pausing and playing do not move time: in the order of the changes, times never go back.
        #expect(zip(times.all, times.all.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// With a serial queue, callbacks run there in the order of the changes, whichever thread
    /// made them (a periodic 0.000 after 3.000 was seen when each thread called back itself).
    @Test func callbacksOnAGivenQueueComeInTheOrderOfTheChanges() throws {
        let player = try Player(item: unit.item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let queue = DispatchQueue(label: "observer-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let onQueue = Recorder<Bool>()
        let times = Recorder<MediaTime>()
        _ = try player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 30), queue: queue) { time in
            onQueue.append(DispatchQueue.getSpecific(key: key) == 7)
            times.append(time)
        }
        nonisolated(unsafe) let pulled = display  // used only by the puller thread from here on
        let puller = Thread { pulled.step(240) }
        puller.start()
        for _ in 0..<40 {
            player.pause()
            player.play()
        }
        while !puller.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        queue.sync {}
        #expect(times.all.count > 40)
        #expect(onQueue.all.allSatisfy { $0 })
        #expect(zip(times.all, times.all.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// With `.pause` too, the time at the end is the item's duration, and the periodic observer's
    /// last time is not past it.
    @Test func currentTimeStopsAtTheDurationAtTheEnd() throws {
        let player = try Player(item: unit.item("a.mp4", frames: 9), logger: quiet)
        let times = Recorder<MediaTime>()
        _ = try player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 60)) { times.append($0) }
        let display = try VirtualDisplay(player)
        player.play()
        display.step(60)
        player.waitForTimeObserverCallbacks()
        let duration = MediaTime(value: 9, timescale: 30)
        #expect(player.currentTime() == duration)
        #expect(times.all.allSatisfy { $0 <= duration })
        #expect(times.all.last == duration)
    }
}
