import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Testing

@Suite struct PlaylistDriverTests {
    let backend = FakeBackend()

    /// A config of `count` scripted clips (`/fake/0.mp4`...) and a driver of a new player.
    func setUp(_ count: Int, loop: Bool, shuffle: Bool = false) throws -> (KioskConfig, PlaylistDriver) {
        for i in 0..<count { _ = backend.add("\(i).mp4", .init(frames: 30, fps: 30)) }
        let playlist = (0..<count).map { #"{"uri": "\#($0).mp4"}"# }.joined(separator: ", ")
        let config = try KioskConfig.parse(#"{"playlist": [\#(playlist)], "loop": \#(loop), "shuffle": \#(shuffle)}"#,
                                           baseDirectory: "/fake")
        return (config, PlaylistDriver(player: QueuePlayer(logger: quiet), backend: backend))
    }

    @Test func thePlayOrderGoesRoundFromTheFirstEntry() throws {
        let (config, _) = try setUp(4, loop: true)
        #expect(PlaylistDriver.playOrder(config, from: 2) == [2, 3, 0, 1])
        #expect(PlaylistDriver.playOrder(config, from: 0) == [0, 1, 2, 3])
        let (shuffled, _) = try setUp(20, loop: true, shuffle: true)
        #expect(PlaylistDriver.playOrder(shuffled, from: 5).sorted() == Array(0..<20))
    }

    @Test func anItemCarriesItsEntrysIndexAndEnd() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "start": 1.5, "end": 3}]}"#,
                                           baseDirectory: "/fake")
        let item = PlaylistDriver.makeItem(config, 1, backend: backend)
        #expect(item.playlistIndex == 1 && item.asset.url.path == "/fake/b.mp4")
        #expect(item.forwardPlaybackEndTime == MediaTime(seconds: 3, preferredTimescale: 90_000))
        #expect(!PlaylistDriver.makeItem(config, 0, backend: backend).forwardPlaybackEndTime.isNumeric)
    }

    @Test func aPlaylistWithoutLoopIsQueuedOnceFromItsFirstItem() throws {
        let (config, driver) = try setUp(4, loop: false)
        defer { driver.player.removeAllItems() }
        driver.start(config, from: 1, afterCurrentItem: false)
        #expect(driver.player.items().map(\.playlistIndex) == [1, 2, 3, 0])
        #expect(driver.loopCount == 0)
        #expect(!driver.appendLooped(config, range: 0..<1))  // nothing loops
        // A schedule's change: the item playing stays, the rest is replaced.
        driver.start(config, from: 3, afterCurrentItem: true, replacingQueued: true)
        #expect(driver.player.items().map(\.playlistIndex) == [1, 3, 0, 1, 2])
    }

    @Test func aLoopedPlaylistQueuesAWindowAndGrowsAtItsEnd() throws {
        let (config, driver) = try setUp(5, loop: true)
        defer {
            driver.start(config, afterCurrentItem: false)
            driver.player.removeAllItems()
        }
        driver.start(config, from: 3, afterCurrentItem: false)
        #expect(driver.player.items().map(\.playlistIndex) == [3, 4, 0])
        var longer = config
        longer.playlist.append(contentsOf: config.playlist)
        #expect(driver.appendLooped(longer, range: 5..<10))
        #expect(driver.player.items().map(\.playlistIndex) == [3, 4, 0])  // what is queued stays
    }

    @Test func skippingQueuesFromTheTargetItem() throws {
        let (config, driver) = try setUp(4, loop: false)
        defer { driver.player.removeAllItems() }
        driver.start(config, afterCurrentItem: false)
        #expect(driver.player.currentItem?.playlistIndex == 0)
        driver.skip(2, in: config)
        #expect(driver.player.currentItem?.playlistIndex == 2)
        driver.skip(-3, in: config)  // round the end
        #expect(driver.player.currentItem?.playlistIndex == 3)
        driver.skip(1, in: config)
        #expect(driver.player.currentItem?.playlistIndex == 0)
        driver.skip(0, in: config)
        #expect(driver.player.currentItem?.playlistIndex == 0)
    }
}
