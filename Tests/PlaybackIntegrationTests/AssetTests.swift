import Foundation
import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

@Suite struct AssetRuleTests {

    @Test func statusOfNeverStartsLoading() async throws {
        let backend = FakeBackend()
        let asset = Asset(url: backend.add("a.mp4", .init(frames: 10, fps: 10)), backend: backend)
        guard case .notYetLoaded = asset.status(of: .duration) else { Issue.record("expected notYetLoaded"); return }
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(backend.probeCount == 0)
        _ = try await asset.load(.duration)
        guard case .loaded(let d) = asset.status(of: .duration) else { Issue.record("expected loaded"); return }
        #expect(d == tm(1, 1))
    }

    @Test func keyFormCallsOneCompletionForAllKeys() async throws {
        let backend = FakeBackend()
        let asset = Asset(url: backend.add("a.mp4", .init(frames: 10, fps: 10)), backend: backend)
        #expect(asset.statusOfValue(forKey: "duration").status == .unknown)
        let calls = Recorder<Int>()
        asset.loadValues(forKeys: ["duration", "tracks"]) { calls.append(1) }
        #expect(await eventually { calls.all.count == 1 })
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(calls.all.count == 1)
        #expect(asset.statusOfValue(forKey: "duration").status == .loaded)
        #expect(asset.statusOfValue(forKey: "tracks").status == .loaded)
        #expect(asset.statusOfValue(forKey: "colour").status == .failed)
    }

}

@Suite struct PlayerItemRuleTests {
    @Test func statusStaysUnknownUntilTheItemIsInAPlayer() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 10, fps: 10)), backend: backend)
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(item.status == .unknown && item.error == nil)
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        #expect(await eventually { item.status == .readyToPlay })
        #expect(item.error == nil)
    }

    @Test func reachingForwardPlaybackEndTimeEndsTheItemAsTheRealEndWould() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 30, fps: 30)), backend: backend)
        item.forwardPlaybackEndTime = tm(1, 3)  // 10 frames
        let player = Player(logger: quiet)
        let events = item.events()
        try player.replaceCurrentItem(with: item)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(40)
        #expect(display.shown.compactMap(\.frame) == Array(0..<10))
        let first = await firstValues(1, of: events).first
        guard case .didPlayToEndTime? = first else { Issue.record("expected didPlayToEndTime, got \(String(describing: first))"); return }
        #expect(player.rate == 0 && player.timeControlStatus == .paused)  // a plain player pauses at the end
    }

    @Test func decodeErrorPostsFailedToPlayToEndTimeWithTheError() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("bad.mp4", .init(frames: 30, fps: 30, failAt: 5)), backend: backend)
        let events = item.events()
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(20)
        guard case .failedToPlayToEndTime(let error)? = await firstValues(1, of: events).first else { Issue.record("expected failedToPlayToEndTime"); return }
        #expect("\(error)".contains("Invalid data"))
        #expect(item.status == .failed && item.error != nil)
    }

    @Test func seeksPostTimeJumpedAndSlowDecodingPostsPlaybackStalled() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 300, fps: 30)), backend: backend)
        let events = item.events()
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(4)
        player.seek(to: tm(5, 1)) { _ in }
        display.step(2)
        backend.holdDecoding(true)
        for _ in 0..<200 {  // past the frames already decoded and the player's stall timeout of 2 s (120 vsyncs)
            display.vsyncStepNoWait()
        }
        backend.holdDecoding(false)
        let seen = await firstValues(2, of: events).map { "\($0)" }
        #expect(seen == ["timeJumped", "playbackStalled"])
    }

}
