import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Gapless playback across what a kiosk plays: mixed playlists (frame rates, codecs, containers,
/// short items, a still, items with and without sound) looping 20 passes on the virtual clock at
/// 50, 59.94 and 60 Hz. Every pass must be frame-complete: every frame once on the vsync of its
/// place (`tools/check-trace.py`), no repeat, no gap; nothing dropped by presentation or the
/// decoder (the virtual clock waits for each frame). Content faster than the output (60 fps on
/// 50 Hz) loses only the frames its cadence has no vsync for, and says so (`cadence-dropped`).
@Suite("Pacing matrix: mixed playlists frame-complete on the virtual clock", .serialized)
struct PacingMatrixTests {
    /// One clip: its frame rate (as ffmpeg takes it), frames, what encodes it, its container.
    struct Clip {
        let name: String
        let rate: String
        let frames: Int
        let video: [String]
        let format: String
        var sound = false
        var fps: Double {
            let parts = rate.split(separator: "/").compactMap { Double($0) }
            return parts.count == 2 ? parts[0] / parts[1] : parts[0]
        }

        func make() throws -> String {
            // The sound lasts as long as the pictures.
            let seconds = (Double(frames) / fps).formatted(.number.precision(.fractionLength(4)).grouping(.never))
            let audioIn = sound ? ["-f", "lavfi", "-t", seconds, "-i", "sine=frequency=1000:sample_rate=48000"] : []
            return try TestMedia.make("matrix-\(name)", ["-f", "lavfi", "-i", "testsrc2=size=256x144:rate=\(rate)"] + audioIn
                + ["-frames:v", "\(frames)"] + (sound ? ["-c:a", "aac"] : ["-an"]) + video + ["-pix_fmt", "yuv420p", "-f", format])
        }
    }

    static let clips: [Clip] = [
        // H.264 with a B-frame pyramid and open GOPs, short keyframe interval.
        Clip(name: "h264-pyramid-23.976.mp4", rate: "24000/1001", frames: 18,
             video: ["-c:v", "libx264", "-preset", "fast", "-bf", "3", "-x264-params", "b-pyramid=normal:open-gop=1:keyint=8:min-keyint=4"], format: "mp4"),
        Clip(name: "hevc-24.mkv", rate: "24", frames: 12,
             video: ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error:bframes=3"], format: "matroska"),
        Clip(name: "mpeg4-25.ts", rate: "25", frames: 10, video: ["-c:v", "mpeg4", "-bf", "2", "-q:v", "5"], format: "mpegts", sound: true),
        Clip(name: "vp9-29.97.webm", rate: "30000/1001", frames: 15,
             video: ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "10"], format: "webm"),
        Clip(name: "av1-30.mkv", rate: "30", frames: 9,
             video: ["-c:v", "libaom-av1", "-cpu-used", "8", "-usage", "realtime", "-g", "6"], format: "matroska"),
        Clip(name: "h264-50.ts", rate: "50", frames: 15, video: ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2"], format: "mpegts", sound: true),
        Clip(name: "h264-59.94.mp4", rate: "60000/1001", frames: 14, video: ["-c:v", "libx264", "-preset", "veryfast"], format: "mp4", sound: true),
        Clip(name: "h264-60.mkv", rate: "60", frames: 12, video: ["-c:v", "libx264", "-preset", "veryfast", "-bf", "2"], format: "matroska"),
    ]

    static func still() throws -> String {
        try TestMedia.make("matrix-still.png", ["-f", "lavfi", "-i", "testsrc2=size=256x144", "-frames:v", "1", "-f", "image2", "-c:v", "png"])
    }

    /// The stopped line's counters.
    static func stopped(_ log: String) -> [String: Int] {
        guard let line = log.split(separator: "\n").last(where: { $0.contains("msg=stopped") }) else { return [:] }
        var counts: [String: Int] = [:]
        for field in line.split(separator: " ") {
            let pair = field.split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Int(pair[1]) { counts[String(pair[0])] = value }
        }
        return counts
    }

    @Test("20 passes frame-complete", arguments: ["50", "59.94", "60"])
    func mixedPlaylistLoops(refresh: String) throws {
        let hz = refresh == "59.94" ? 60000.0 / 1001 : Double(refresh)!
        // At this refresh: every clip no faster than the output, with a still and the items
        // with sound among them. Faster content is `fasterThanTheOutput`'s.
        let clips = Self.clips.filter { $0.fps <= hz + 1e-9 }
        var entries = try clips.map { #"{"uri": "\#(try $0.make())"}"# }
        entries.insert(#"{"uri": "\#(try Self.still())", "duration": 0.3}"#, at: 3)
        let passSeconds = clips.reduce(0.3) { $0 + Double($1.frames) / $1.fps }
        let passes = 20
        let config = TestMedia.folder + "/matrix-\(refresh)-\(UUID().uuidString.prefix(8)).json"
        try TestConfig.write(#"{"playlist": [\#(entries.joined(separator: ", "))], "loop": true, "audio": {"enabled": true}}"#, to: config)
        let running = try MarqueeProcessTests.Running(config: config, clock: "virtual", exitAfter: passSeconds * (Double(passes) + 0.5),
                                                      extra: ["--mode", "256x144@\(refresh)"])
        #expect(running.wait(timeout: 300) == 0, "\(running.log.suffix(2000))")
        let (_, report) = try Command.checkTrace(running.trace, ["--refresh", refresh == "59.94" ? "60000/1001" : refresh])
        let figures = try #require(report["headless-0"], "\(report)")
        for name in ["gaps", "drops", "repeats", "cadence_errors", "blanks_after_start"] {
            #expect(figures[name] as? Int == 0, "\(refresh) Hz, \(name): \(figures["problems"] ?? "")")
        }
        // Every frame of every pass shown: the clips' frames and the still, 20 times.
        let perPass = clips.reduce(1) { $0 + $1.frames }
        #expect(figures["frames"] as? Int ?? 0 >= passes * perPass, "\(refresh) Hz: \(figures["frames"] ?? 0) frames, \(passes * perPass) expected")
        let counts = Self.stopped(running.log)
        #expect(counts["dropped"] == 0 && counts["cadence-dropped"] == 0 && counts["decoder-dropped"] == 0, "\(refresh) Hz: \(counts)")
    }

    @Test("content faster than the output loses only what its cadence has no vsync for, and says so")
    func fasterThanTheOutput() throws {
        let clips = Self.clips.filter { $0.fps > 50 }
        let entries = try clips.map { #"{"uri": "\#(try $0.make())"}"# }
        let passSeconds = clips.reduce(0) { $0 + Double($1.frames) / $1.fps }
        let config = TestMedia.folder + "/matrix-fast-\(UUID().uuidString.prefix(8)).json"
        try TestConfig.write(#"{"playlist": [\#(entries.joined(separator: ", "))], "loop": true}"#, to: config)
        let running = try MarqueeProcessTests.Running(config: config, clock: "virtual", exitAfter: passSeconds * 20 + 0.01,
                                                      extra: ["--mode", "256x144@50"])
        #expect(running.wait(timeout: 300) == 0, "\(running.log.suffix(2000))")
        let (_, report) = try Command.checkTrace(running.trace, ["--refresh", "50"])
        let figures = try #require(report["headless-0"], "\(report)")
        for name in ["gaps", "repeats", "cadence_errors", "blanks_after_start"] {
            #expect(figures[name] as? Int == 0, "\(name): \(figures["problems"] ?? "")")
        }
        let counts = Self.stopped(running.log)
        // The frames missing from the trace are exactly those the cadence dropped; none was late.
        #expect((figures["drops"] as? Int ?? 0) > 0)
        #expect(counts["cadence-dropped"] == figures["drops"] as? Int, "\(counts), trace: \(figures["drops"] ?? 0) missing")
        #expect(counts["dropped"] == 0 && counts["decoder-dropped"] == 0, "\(counts)")
    }
}
