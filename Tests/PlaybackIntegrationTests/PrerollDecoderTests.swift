import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

/// How much decoding runs ahead, and how many decoders live at once: a decode thread decodes a
/// frame only when its queue has room for it, and the next item's preroll decodes its first
/// frames with a preroll reader, closes it, and opens the item's own reader only once the playing
/// item's reader has gone (or the item plays), skipping the frames it already gave.
@Suite struct PrerollDecoderTests {
    let unit = PlaybackTests.PrerollDecoderTests()   // its fixtures: backend, item

    @Test func aDecodeThreadHoldsNoFrameOfItsOwnWhileItsQueueIsFull() async throws {
        let asset = Asset(url: unit.backend.add("a.mp4", .init(frames: 30, fps: 30)), backend: unit.backend)
        let feeder = ItemFeeder(asset: asset, start: .zero, toleranceBefore: .zero, end: .invalid, capacity: 3, name: "a.mp4")
        feeder.start(logger: quiet)
        defer { feeder.stop() }
        // The ready event and two frames fill the queue's three places; a third frame is not decoded.
        #expect(await eventually { feeder.queue.count == 3 })
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(unit.backend.decodedCount == 2)
        // Taking one makes room for exactly one more.
        _ = feeder.queue.pop(timeout: 1)
        #expect(await eventually { unit.backend.decodedCount == 3 })
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(unit.backend.decodedCount == 3 && feeder.queue.count == 3)
    }

    @Test func aParkedPrerollOpensItsReaderWhenTheItemBeforeIsSkipped() throws {
        let player = QueuePlayer(items: [unit.item("a.mp4", frames: 60, index: 0), unit.item("b.mp4", frames: 20, index: 1)], logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        let deadline = Date(timeIntervalSinceNow: 5)
        // The preroll has given its first frames and closed its reader.
        while !(unit.backend.readersOpened.preroll == 1 && unit.backend.readersAlive.preroll == 0) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(unit.backend.readersOpened.preroll == 1 && unit.backend.readersAlive.preroll == 0)
        player.advanceToNextItem()
        display.step(50)
        let second = display.shown.filter { $0.item == 1 && $0.frame != nil }.map { $0.frame! }
        #expect(second == Array(0..<20))
    }

    @Test func waitForRoomReturnsAtOnceWithRoomAndWaitsWhileFull() {
        let queue = FrameQueue<Int>(capacity: 1)
        #expect(queue.waitForRoom(timeout: 0))
        #expect(queue.push(1, timeout: 0) == .pushed)
        let started = Date()
        #expect(!queue.waitForRoom(timeout: 0.1))
        #expect(Date().timeIntervalSince(started) >= 0.1)
        queue.close()
        #expect(queue.waitForRoom(timeout: 1), "a closed queue does not wait")
    }
}
