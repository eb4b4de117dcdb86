import Foundation
import Playback
import PlaybackTestSupport
import Testing

@Suite struct PlayerRuleTests {
    let backend = FakeBackend()

    func item(_ name: String, frames: Int = 30, fps: Int32 = 30, index: Int? = nil, keyframes: Int = 1) -> PlayerItem {
        let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps, keyframeInterval: keyframes)), backend: backend)
        item.playlistIndex = index
        return item
    }

    @Test func awaitSeekReturnsTrueOnceTheFrameIsShown() async throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        async let finished = player.seek(to: tm(2, 1))
        try await Task.sleep(nanoseconds: 20_000_000)
        display.step()
        #expect(await finished == true)
    }

}

@Suite struct QueuePlayerRuleTests {
    let backend = FakeBackend()
    func item(_ name: String, frames: Int = 30, fps: Int32 = 30, index: Int? = nil) -> PlayerItem {
        let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps)), backend: backend)
        item.playlistIndex = index
        return item
    }

}

@Suite struct PlayerLooperRuleTests {
    let backend = FakeBackend()

}
