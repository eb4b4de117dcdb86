import Foundation
import Media
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// The FFmpeg backend on real files made by the ffmpeg command: what assets load, how files that
/// cannot be played fail, where seeks land, and a queue of real clips on a hand-driven vsync.
@Suite struct FFmpegBackendTests {
    let unit = MediaTests.FFmpegBackendTests()   // its fixtures: asset, backend, clipWithBFrames, clipWithKeyframesEveryTenFrames, quietLogger, rotatedClip

    // MARK: Assets

    @Test func assetLoadsDurationAndTheVideoTrackOfARealFile() async throws {
        let asset = unit.asset(try TestMedia.clip(seconds: 2, fps: 30))
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        #expect(duration == MediaTime(value: 2, timescale: 1))
        let track = try #require(tracks.first)
        #expect(tracks.count == 1)
        #expect(track.mediaType == .video)
        #expect(track.naturalSize == VideoSize(width: 320, height: 180))
        #expect(track.nominalFrameRate == 30)
        #expect(track.minFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(track.codec == "h264")
        #expect(track.pixelFormat == "yuv420p")
        #expect(track.preferredTransform == .identity)
        // Untagged and below 720 lines: BT.601, as the stream's parameters (and its frames) say.
        #expect(track.colorSpace == "bt601")
        #expect(try await asset.load(.isPlayable))
        // The key-based form sees the same loaded keys.
        #expect(asset.statusOfValue(forKey: "duration").status == .loaded)
        #expect(asset.statusOfValue(forKey: "tracks").status == .loaded)
    }

    /// The probe reads only the container and the stream's parameters: a file whose video data is
    /// zeroed passes it, and fails where its first frame is decoded (`checkFirstFrame`, what a
    /// wall's shared timeline asks for), naming the file and FFmpeg's reason.
    @Test func aStreamThatDoesNotDecodePassesTheProbeButNotTheFirstFrameCheck() throws {
        let good = try TestMedia.make("faststart-320x180-1s.mp4", [
            "-f", "lavfi", "-i", "testsrc=size=320x180:rate=30", "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-movflags", "+faststart", "-f", "mp4",
        ])
        var data = try Data(contentsOf: URL(fileURLWithPath: good))
        let mdat = try #require(data.range(of: Data("mdat".utf8)))
        data.replaceSubrange(mdat.upperBound..<data.endIndex, with: Data(count: data.endIndex - mdat.upperBound))
        let zeroed = URL(fileURLWithPath: TestMedia.folder + "/zeroed-video-\(UUID().uuidString).mp4")
        try data.write(to: zeroed)
        #expect(try unit.backend.probe(zeroed).duration == MediaTime(value: 1, timescale: 1))
        do {
            try unit.backend.checkFirstFrame(zeroed)
            Issue.record("a stream of zeros decoded")
        } catch {
            #expect("\(error)".hasPrefix(zeroed.path + ": "), "\(error)")
        }
        try unit.backend.checkFirstFrame(URL(fileURLWithPath: good))
    }

    /// An RGB picture says BT.709, the matrix its frames are labelled with (not the height rule
    /// for untagged video).
    /// A unit.backend made for an output gives frames as decoded whatever its colour conversion: with
    /// the cpu conversion the player layer turns each into RGBA as it uploads it, so the queues
    /// hold the decoder's frames (4:2:0: 1.5 bytes a pixel, not RGBA's 4).
    @Test func framesStayAsDecodedWhateverTheConversion() throws {
        let clip = try TestMedia.clip(seconds: 0.5, fps: 30, width: 160, height: 90)
        for (conversion, format) in [(ColorConversion.cpu, PixelFormat.yuv420p), (.shader, .yuv420p)] {
            var output = OutputCapabilities.unconstrained
            output.colorConversion = conversion
            let reader = try FFmpegBackend(threads: 1, output: output).openReader(URL(fileURLWithPath: clip))
            var formats: [PixelFormat] = []
            while let frame = try reader.nextFrame() as? VideoFrame { formats.append(frame.pixelFormat) }
            #expect(formats.count == 15 && formats.allSatisfy { $0 == format }, "\(conversion): \(formats)")
        }
    }

    @Test func anRGBPictureSaysBT709() async throws {
        let png = try TestMedia.make("red-64x48.png", ["-f", "lavfi", "-i", "color=c=red:size=64x48", "-frames:v", "1", "-c:v", "png", "-f", "image2"])
        let track = try #require(try await unit.asset(png).load(.tracks).first)
        #expect(track.colorSpace == "bt709" && track.pixelFormat == "rgb24", "\(track.colorSpace) \(track.pixelFormat)")
    }

    @Test func assetOfA24FpsClipOfAnotherSizeSaysSo() async throws {
        let asset = unit.asset(try TestMedia.clip(seconds: 1, fps: 24, width: 256, height: 144))
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        #expect(duration == MediaTime(value: 1, timescale: 1))
        #expect(tracks.first?.naturalSize == VideoSize(width: 256, height: 144))
        #expect(tracks.first?.nominalFrameRate == 24)
        #expect(tracks.first?.minFrameDuration == MediaTime(value: 1, timescale: 24))
    }

    @Test func displayRotation90CounterClockwiseIsAPreferredTransformOf270Clockwise() async throws {
        let path = try unit.rotatedClip(try TestMedia.clip(seconds: 0.5, fps: 10))
        let asset = unit.asset(path)
        let tracks = try await asset.load(.tracks)
        let track = try #require(tracks.first)
        // The container's matrix says: turn 90 degrees counter-clockwise to show (ffmpeg's own
        // autorotation applies transpose=cclock to this file). Transforms here are clockwise on
        // screen, as CGAffineTransform's are in a top-left coordinate system: 270 degrees.
        #expect(track.preferredTransform.rotationDegrees == 270)
        #expect(track.preferredTransform == Transform2D(a: 0, b: -1, c: 1, d: 0))
        // Natural size is the coded picture, before the turn.
        #expect(track.naturalSize == VideoSize(width: 320, height: 180))

        // An item in a player reports the turned size.
        let item = PlayerItem(asset: asset)
        let player = try Player(item: item, logger: unit.quietLogger)
        #expect(await eventually { item.status == .readyToPlay })
        #expect(item.presentationSize == VideoSize(width: 180, height: 320))
        _ = player
    }

    @Test func missingFileFailsTheAssetWithFFmpegsReason() async throws {
        let path = TestMedia.folder + "/no-such-clip.mp4"
        let asset = unit.asset(path)
        await #expect {
            _ = try await asset.load(.tracks)
        } throws: { error in
            let text = "\(error)"
            return text.contains("no-such-clip.mp4") && text.contains("avformat_open_input")
                && text.contains("No such file or directory")
        }
        let (status, error) = asset.statusOfValue(forKey: "tracks")
        #expect(status == .failed)
        #expect("\(error.map { "\($0)" } ?? "")".contains("No such file or directory"))
        // The duration key was not asked for: asking its status never loads it.
        #expect(asset.statusOfValue(forKey: "duration").status == .unknown)
    }

    // MARK: Seeking

    @Test func decoderSeekLandsOnTheSyncFrameAtOrBeforeTheTarget() throws {
        let decoder = try VideoDecoder(path: try unit.clipWithKeyframesEveryTenFrames())
        func ptsAfterSeek(_ value: Int64, _ scale: Int32, count: Int = 1) throws -> [MediaTime] {
            try decoder.seek(to: MediaTime(value: value, timescale: scale))
            return try (0..<count).map { _ in try #require(try decoder.nextFrame()).pts }
        }
        // On a sync frame: exactly that frame.
        #expect(try ptsAfterSeek(1, 1) == [MediaTime(value: 1, timescale: 1)])
        // Between sync frames: the one before, then every frame in order up to the target.
        #expect(try ptsAfterSeek(33, 30, count: 4) == (30...33).map { MediaTime(value: Int64($0), timescale: 30) })
        // 1/3 s has no exact binary fraction: the seek must still land on the sync frame at 1/3.
        #expect(try ptsAfterSeek(1, 3) == [MediaTime(value: 10, timescale: 30)])
        #expect(try ptsAfterSeek(2, 3) == [MediaTime(value: 20, timescale: 30)])
        // Backwards to the start, and the stream goes on to its last frame.
        #expect(try ptsAfterSeek(0, 1) == [.zero])
        var count = 1
        while try decoder.nextFrame() != nil { count += 1 }
        #expect(count == 60)
        // After the end, a seek brings frames back.
        #expect(try ptsAfterSeek(59, 30) == [MediaTime(value: 50, timescale: 30)])
    }

    @Test func decoderSeekToAnNTSCFrameTimeLandsOnThatSyncFrame() throws {
        // 29.97 fps (time base 1/30000), a sync frame every 15 frames. Frame 15 is at 15015/30000 s,
        // which as a Double times 30000 is just below 15015: the seek must compute in integers.
        let path = try TestMedia.make("clip-ntsc-gop15.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30000/1001", "-t", "1.2",
            "-c:v", "libx264", "-preset", "ultrafast", "-x264-params", "keyint=15:min-keyint=15:scenecut=0",
            "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
        let decoder = try VideoDecoder(path: path)
        for frame in [15, 30] {
            let target = MediaTime(value: Int64(frame * 1001), timescale: 30000)
            try decoder.seek(to: target)
            #expect(try decoder.nextFrame()?.pts == target, "seek to frame \(frame)")
        }
    }

    @Test func decoderSeekInAClipWithBFramesNeverLandsPastTheTarget() throws {
        let decoder = try VideoDecoder(path: try unit.clipWithBFrames())
        var all: [MediaTime] = []
        while let frame = try decoder.nextFrame() { all.append(frame.pts) }
        #expect(all == (0..<60).map { MediaTime(value: Int64($0), timescale: 30) })
        for target in [MediaTime(value: 1, timescale: 1), MediaTime(value: 7, timescale: 30), MediaTime(value: 59, timescale: 30)] {
            try decoder.seek(to: target)
            var frames: [MediaTime] = []
            while let frame = try decoder.nextFrame() {
                frames.append(frame.pts)
                if frame.pts >= target { break }
            }
            #expect(frames.first.map { $0 <= target } == true, "seek to \(target) began at \(frames.first.map { "\($0)" } ?? "nothing")")
            #expect(frames.last == target, "seek to \(target) never gave the frame at the target")
        }
    }

    @Test func playerSeekWithZeroTolerancesShowsExactlyTheTargetFrame() async throws {
        for path in [try TestMedia.clip(seconds: 2, fps: 30), try unit.clipWithBFrames()] {
            let player = try Player(item: PlayerItem(asset: unit.asset(path)), logger: unit.quietLogger)
            let display = try HandDrivenDisplay(player)
            player.play()
            display.step(10)
            let pts = try #require(display.lastFrame).pts
            #expect(pts == MediaTime(value: 4, timescale: 30), "\(path)")  // vsync 9 at 60 Hz shows frame 4
            for target in [MediaTime(value: 1, timescale: 1), MediaTime(value: 11, timescale: 30), MediaTime(value: 2, timescale: 3)] {
                let done = Recorder<Bool>()
                player.seek(to: target) { done.append($0) }
                let before = display.shown.count
                display.step(1)
                #expect(display.shown.count == before + 1)
                #expect(display.lastFrame?.pts == target, "\(path): seek to \(target) showed \(display.lastFrame.map { "\($0.pts)" } ?? "nothing")")
                #expect(await eventually { done.all == [true] })
                #expect(player.currentTime() == target)
            }
        }
    }

    // MARK: A queue of real clips

    @Test func queueOfTwoRealClipsShowsEveryFrameOnceAndGaplessly() throws {
        // 30 fps 320x180, then 24 fps 256x144, at 60 Hz.
        let first = PlayerItem(asset: unit.asset(try TestMedia.clip(seconds: 1, fps: 30)))
        let second = PlayerItem(asset: unit.asset(try TestMedia.clip(seconds: 1, fps: 24, width: 256, height: 144)))
        let player = QueuePlayer(items: [first], logger: unit.quietLogger)
        #expect(player.canInsert(second, after: nil))
        try player.insert(second, after: nil)
        let display = try HandDrivenDisplay(player)
        player.play()
        display.step(130)

        let frames = display.shown.filter { $0.frame != nil }
        #expect(frames.count == 30 + 24)
        #expect(player.stats.dropped == 0)
        // Every frame once, in order: the first clip's 30, then the second's 24.
        #expect(frames.map { $0.item === first ? 0 : $0.item === second ? 1 : -1 } == Array(repeating: 0, count: 30) + Array(repeating: 1, count: 24))
        let firstTimes = (0..<30).map { MediaTime(value: Int64($0), timescale: 30) }
        let secondTimes = (0..<24).map { MediaTime(value: Int64($0), timescale: 24) }
        #expect(frames.map(\.frame!.pts) == firstTimes + secondTimes)
        // 30 fps: every 2nd vsync. The second clip starts on vsync 60, right after the first's
        // last frame had its two vsyncs; 24 fps: vsync 60 + round(2.5 j), the 3-2 cadence.
        let firstVsyncs: [Int64] = (0..<30).map { (i: Int64) in 2 * i }
        let secondVsyncs: [Int64] = (0..<24).map { (j: Int64) in 60 + (5 * j + 1) / 2 }
        let expected = firstVsyncs + secondVsyncs
        #expect(frames.map(\.vsync) == expected)
        // Then the background, on the vsync after the second clip's last frame had its time.
        let afterFrames = display.shown.dropFirst(frames.count)
        #expect(afterFrames.first.map { $0.frame == nil && $0.vsync == 120 } == true)
        #expect(first.status == .readyToPlay && second.status == .readyToPlay)
        #expect(player.currentItem == nil)
    }
}
