import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport
@testable import MediaTests

/// FFmpeg's own messages through the logger: level mapping, the rate limit (on a clock of the
/// test's own), and a real decoder's errors arriving as log records.
@Suite(.serialized) struct FFmpegLogTests {
    typealias Clock = MediaTests.FFmpegLogTests.Clock
    typealias Lines = MediaTests.FFmpegLogTests.Lines
    let unit = MediaTests.FFmpegLogTests()   // its fixtures: panic

    /// A real decoder on a damaged clip: FFmpeg's errors arrive as log records (component h264),
    /// not on standard error.
    @Test func aDecodersErrorsArriveAsLogRecords() throws {
        let path = try TestMedia.corruptClip()
        let lines = Lines()
        FFmpegLog.route(to: lines.logger(.debug))
        defer { FFmpegLog.routeToStandardError() }
        let decoder = try VideoDecoder(path: path, threads: 1)
        var frames = 0
        while let _ = try? decoder.nextFrame(), frames < 200 { frames += 1 }
        let ffmpeg = lines.all.filter { $0.contains(#"msg="ffmpeg: "#) }
        print("ffmpeg log: \(frames) frames decoded, \(ffmpeg.count) FFmpeg lines, e.g. \(ffmpeg.first ?? "none")")
        #expect(ffmpeg.contains { $0.hasPrefix("level=error") && $0.contains("component=h264") }, "\(lines.all)")
        #expect(ffmpeg.count <= 20, "the rate limit holds a damaged stream to its budget")
    }

    /// Trying hardware decoders that are not there (this machine has no VAAPI, CUDA or V4L2
    /// decoder) logs FFmpeg's complaints at debug only: the outcome is reported once by Marquee.
    @Test func hardwareProbingIsQuiet() throws {
        let lines = Lines()
        FFmpegLog.route(to: lines.logger(.debug))
        defer { FFmpegLog.routeToStandardError() }
        for kind in [HardwareDecoding.cuda, .v4l2m2m, .vaapi] {
            let decoder = try? VideoDecoder(path: try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90), hardware: kind)
            _ = try? decoder?.nextFrame()
        }
        let ffmpeg = lines.all.filter { $0.contains(#"msg="ffmpeg: "#) }
        print("hardware probing: \(ffmpeg.count) FFmpeg lines, \(ffmpeg.filter { !$0.hasPrefix("level=debug") }.count) above debug")
        #expect(!ffmpeg.contains { !$0.hasPrefix("level=debug") && $0.contains("AVHWDeviceContext") || $0.contains("_v4l2m2m") && !$0.hasPrefix("level=debug") },
                "\(ffmpeg)")
    }

    /// `Asset(url:)` needs no backend: FFmpeg's, as `AVURLAsset(url:)`.
    @Test func anAssetWithoutABackendIsReadByFFmpeg() async throws {
        let path = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let asset = Asset(url: URL(fileURLWithPath: path))
        let duration = try await asset.load(.duration)
        #expect(abs(duration.seconds - 1) < 0.05, "\(duration.seconds)")
        let tracks = try await asset.load(.tracks)
        #expect(tracks.count == 1)
        let missing = Asset(url: URL(fileURLWithPath: "/nonexistent/clip.mp4"))
        await #expect(throws: (any Error).self) { try await missing.load(.duration) }
    }
}
