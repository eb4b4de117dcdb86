import Foundation
import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

@Suite struct PlayerRuleTests {
    let unit = PlaybackTests.PlayerRuleTests()   // its fixtures: backend, item

    @Test func actionNoneHoldsTheLastFrameAndTimeStopsAtTheItemsEnd() throws {
        let player = try Player(item: unit.item("a.mp4", frames: 6), logger: quiet)
        player.actionAtItemEnd = .none
        let times = Recorder<MediaTime>()
        _ = try player.addPeriodicTimeObserver(forInterval: tm(1, 30)) { times.append($0) }
        let display = try VirtualDisplay(player)
        player.play()
        display.step(40)  // the clip lasts 12 vsyncs
        player.waitForTimeObserverCallbacks()
        // The rate stays, the last frame stays, and time stops at the duration (AVFoundation's
        // currentTime never passes it); the periodic observer does not run past it either.
        #expect(player.rate == 1 && display.shown.count == 6)
        #expect(player.currentTime() == tm(6, 30))
        #expect(times.all.last == tm(6, 30) || times.all.last == tm(5, 30))
        #expect(times.all.allSatisfy { $0 <= tm(6, 30) })
        let count = times.all.count
        display.step(30)
        player.waitForTimeObserverCallbacks()
        #expect(times.all.count == count && player.currentTime() == tm(6, 30))
        // Seeking back plays it again.
        player.seek(to: .zero)
        display.step(3)
        #expect(player.currentTime() < tm(1, 10))
    }

    @Test func awaitSeekReturnsTrueOnceTheFrameIsShown() async throws {
        let player = try Player(item: unit.item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        async let finished = player.seek(to: tm(2, 1))
        try await Task.sleep(nanoseconds: 20_000_000)
        display.step()
        #expect(await finished == true)
    }

}
