import Foundation
import Media
import Playback
import Testing
import TestSupport

/// The FFmpeg backend on real files made by the ffmpeg command: what assets load, how files that
/// cannot be played fail, where seeks land, and a queue of real clips on a hand-driven vsync.
@Suite struct FFmpegBackendTests {
    let backend = FFmpegBackend()
    let quietLogger = Logger(level: .error, sink: { _ in })

    func asset(_ path: String) -> Asset { Asset(url: URL(fileURLWithPath: path), backend: backend) }

    /// A 30 fps clip with a sync frame every 10 frames (at 0, 1/3 s, 2/3 s, 1 s, ...).
    func clipWithKeyframesEveryTenFrames() throws -> String {
        try TestMedia.make("clip-30fps-gop10.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-t", "2",
            "-c:v", "libx264", "-preset", "ultrafast", "-x264-params", "keyint=10:min-keyint=10:scenecut=0",
            "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    /// A 30 fps clip with B-frames and one sync frame (x264's default GOP): MP4 writes an edit list
    /// and the decoder reorders frames.
    func clipWithBFrames() throws -> String {
        try TestMedia.make("clip-30fps-bframes.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-t", "2",
            "-c:v", "libx264", "-preset", "medium", "-bf", "3", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    /// The clip `source` remuxed with a display matrix of 90 degrees counter-clockwise: FFmpeg 6.1+
    /// writes it with the input option `-display_rotation 90`; FFmpeg 5.1 (Debian 12) turns the
    /// `rotate=90` stream tag into the same matrix.
    func rotatedClip(_ source: String) throws -> String {
        do {
            return try TestMedia.make("rotated-display-rotation-90.mp4",
                                      ["-display_rotation", "90", "-i", source, "-c", "copy", "-f", "mp4"])
        } catch {
            return try TestMedia.make("rotated-rotate-tag-90.mp4",
                                      ["-i", source, "-c", "copy", "-metadata:s:v:0", "rotate=90", "-f", "mp4"])
        }
    }

    // MARK: Assets

    @Test func garbageFileFailsTheItemWithFFmpegsReason() async throws {
        let path = try TestMedia.garbage()
        let item = PlayerItem(asset: asset(path))
        let player = try Player(item: item, logger: quietLogger)
        #expect(await eventually { item.status == .failed })
        let text = "\(item.error.map { "\($0)" } ?? "no error")"
        #expect(text.contains("garbage.mp4"))
        #expect(text.contains("Invalid data found when processing input"))
        _ = player
    }

    // MARK: Seeking

    // MARK: A queue of real clips

}

/// Drives a player's video output by hand on a virtual 60 Hz vsync clock, recording every new picture.
final class HandDrivenDisplay {
    let output: PlayerVideoOutput
    let clock: VirtualVsyncClock
    private var vsync: Int64 = -1
    private(set) var shown: [(vsync: Int64, item: PlayerItem?, frame: VideoFrame?)] = []

    init(_ player: Player, refresh: RefreshRate = RefreshRate(numerator: 60)) throws {
        clock = VirtualVsyncClock(refresh: refresh)
        output = try PlayerVideoOutput(player: player, refresh: refresh, name: "hand-0")
    }

    func step(_ count: Int) {
        for _ in 0..<count {
            vsync = clock.earliestVsync(after: vsync)
            let picture = output.picture(forVsync: vsync, waitingUpTo: 10)
            if picture.isNew { shown.append((vsync, picture.item, picture.frame as? VideoFrame)) }
        }
    }

    var lastFrame: VideoFrame? { shown.last?.frame }
}

/// A thread-safe list for callbacks to record into.
final class Recorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return condition()
}
