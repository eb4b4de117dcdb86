import Foundation
import Playback
import PlaybackTestSupport
import Testing

@Suite struct AssetRuleTests {
    @Test func loadReturnsDurationAndTracksTogetherWithVideoTrackProperties() async throws {
        let backend = FakeBackend()
        let url = backend.add("a.mp4", .init(frames: 48, fps: 24, size: VideoSize(width: 640, height: 360), rotation: 90))
        let asset = Asset(url: url, backend: backend)
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        #expect(duration == tm(2, 1))
        let video = try #require(tracks.first)
        #expect(video.naturalSize == VideoSize(width: 640, height: 360))
        #expect(video.preferredTransform.rotationDegrees == 90)
        #expect(video.nominalFrameRate == 24)
        #expect(video.minFrameDuration == tm(1, 24))
        #expect(video.codec == "h264" && video.pixelFormat == "yuv420p" && video.colorSpace == "bt709")
        #expect(try await asset.load(.isPlayable))
    }

    @Test func cancelLoadingMakesPendingKeysCancelled() async throws {
        let backend = FakeBackend()
        backend.holdProbes(true)
        let asset = Asset(url: backend.add("a.mp4", .init(frames: 10, fps: 10)), backend: backend)
        let done = Recorder<Int>()
        asset.loadValues(forKeys: ["duration"]) { done.append(1) }
        #expect(asset.statusOfValue(forKey: "duration").status == .loading)
        asset.cancelLoading()
        #expect(done.all.count == 1)
        #expect(asset.statusOfValue(forKey: "duration").status == .cancelled)
        backend.holdProbes(false)
    }

    @Test func aLoadedValueNeverChanges() async throws {
        let backend = FakeBackend()
        let url = backend.add("a.mp4", .init(frames: 10, fps: 10))
        let asset = Asset(url: url, backend: backend)
        let first = try await asset.load(.duration)
        _ = backend.add("a.mp4", .init(frames: 99, fps: 10))  // the file changes on disk
        let second = try await asset.load(.duration)
        #expect(first == second && backend.probeCount == 1)
    }

    @Test func aMissingFileFailsTheKeyWithAnErrorSayingWhy() async throws {
        let backend = FakeBackend()
        let asset = Asset(url: URL(fileURLWithPath: "/fake/missing.mp4"), backend: backend)
        await #expect(throws: (any Error).self) { try await asset.load(.duration) }
        let (status, error) = asset.statusOfValue(forKey: "duration")
        #expect(status == .failed)
        #expect("\(error!)".contains("missing.mp4") && "\(error!)".contains("No such file"))
        guard case .failed = asset.status(of: .duration) else { Issue.record("expected failed"); return }
    }
}

@Suite struct PlayerItemRuleTests {

    @Test func beforeLoadingDurationIsIndefiniteTracksEmptySizeZero() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 10, fps: 10, rotation: 90)), backend: backend)
        #expect(item.duration.isIndefinite && item.tracks.isEmpty && item.presentationSize == .zero)
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        #expect(await eventually { item.status == .readyToPlay })
        #expect(item.duration == tm(1, 1))
        // Presentation size is after the container's rotation.
        #expect(item.presentationSize == VideoSize(width: 180, height: 320))
    }

    @Test func aFailingAutoLoadedKeyFailsTheItemAndFailedIsTerminal() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: URL(fileURLWithPath: "/fake/none.mp4"), backend: backend)
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        #expect(await eventually { item.status == .failed })
        #expect("\(item.error!)".contains("No such file"))
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        #expect(item.status == .failed)
    }

    @Test func currentTimeIsReadFromTheVsyncTimeline() throws {
        let backend = FakeBackend()
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: PlayerItem(url: backend.add("a.mp4", .init(frames: 60, fps: 30)), backend: backend))
        let display = try VirtualDisplay(player)
        player.play()
        display.step(31)  // vsyncs 0...30: half a second
        #expect(player.currentItem!.currentTime() == tm(1, 2))
    }

    @Test func itemSeekOutsideTheSeekableRangeFinishesWithFalse() async throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 30, fps: 30)), backend: backend)
        let player = Player(logger: quiet)
        try player.replaceCurrentItem(with: item)
        #expect(await eventually { item.status == .readyToPlay })
        #expect(await item.seek(to: tm(5, 1)) == false)
        #expect(await item.seek(to: tm(-1, 1)) == false)
    }

    @Test func oneItemBelongsToOnePlayerAtATime() throws {
        let backend = FakeBackend()
        let item = PlayerItem(url: backend.add("a.mp4", .init(frames: 30, fps: 30)), backend: backend)
        let first = QueuePlayer(items: [item], logger: quiet)
        let second = QueuePlayer(logger: quiet)
        #expect(second.canInsert(item, after: nil) == false)
        #expect(throws: PlayerError.itemInAnotherPlayer) { try Player(logger: quiet).replaceCurrentItem(with: item) }
        #expect(first.items().count == 1)
    }
}

extension VirtualDisplay {
    /// One vsync without waiting for the decoder (a real display's deadline).
    func vsyncStepNoWait() {
        step(1, wait: 0.01)
    }
}
