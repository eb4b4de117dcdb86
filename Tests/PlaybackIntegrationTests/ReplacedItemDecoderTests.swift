import Foundation
import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

/// Issue 26: a queue whose next item is replaced again and again (a playlist queued anew per
/// `loadfile append`, items removed while the next one prerolls) must not keep the replaced
/// items' decode threads: each ends when its item leaves, not a wait's timeout later, so a burst
/// of replacements cannot pile them up.
@Suite("A replaced or removed next item keeps no decode thread")
struct ReplacedItemDecoderTests {
    let backend = FakeBackend()

    @Test("the parked preroll of a removed next item ends at once, ten times in a row")
    func aRemovedParkedPrerollEndsAtOnce() throws {
        let current = PlayerItem(url: backend.add("replaced-current.mp4", .init(frames: 3000, fps: 30)), backend: backend)
        let player = QueuePlayer(items: [current], logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        #expect(player.waitForDecodeThreads(atMost: 1, timeout: 5) == 1)
        var lingered: [Double] = []
        for n in 0..<10 {
            let next = PlayerItem(url: backend.add("replaced-next-\(n).mp4", .init(frames: 300, fps: 30)), backend: backend)
            let opened = backend.readersOpened.preroll
            try player.insert(next, after: current)
            // Its preroll decodes its first frames with a preroll reader, then parks (its reader
            // closed, its thread waiting for the current item's decoder to go).
            let deadline = ContinuousClock.now + .seconds(5)
            while !(backend.readersOpened.preroll > opened && backend.readersAlive.preroll == 0) && ContinuousClock.now < deadline {
                display.step()
                Thread.sleep(forTimeInterval: 0.01)
            }
            #expect(player.decodeThreadCount == 2, "the current item's decoder and the next one's parked preroll")
            Thread.sleep(forTimeInterval: 0.05)
            let removed = ContinuousClock.now
            player.remove(next)
            #expect(player.waitForDecodeThreads(atMost: 1, timeout: 5) == 1)
            lingered.append((ContinuousClock.now - removed).seconds)
        }
        // Was: each parked preroll went on waiting for up to 0.5 s (about 2.5 s for the ten).
        #expect(lingered.reduce(0, +) < 1.0, "seconds each removed item's decode thread outlived it: \(lingered)")
        #expect(player.decodeThreadCount == 1)
        player.removeAllItems()
        #expect(player.waitForDecodeThreads(atMost: 0, timeout: 5) == 0)
    }

}
