import Foundation
import Playback
import PlaybackTestSupport
import Testing

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

}

extension VirtualDisplay {
    /// One vsync without waiting for the decoder (a real display's deadline).
    func vsyncStepNoWait() {
        step(1, wait: 0.01)
    }
}
