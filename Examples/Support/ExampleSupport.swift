// What both examples need around the AV Foundation-style code they show: a display to drive the
// player, and a test clip when no file is given.
import Display
import Foundation
import Playback

/// A headless output (EGL surfaceless, virtual 60 Hz clock) driving a player from a thread of its
/// own, as a display link would.
public enum ExampleDisplay {
    /// Presents `player` for `seconds` of display time, or (with `untilEmpty`) until its queue has
    /// played out; returns the presentation figures. `beforeEachVsync` runs on the display's thread.
    public static func present(_ player: Player, seconds: Double, untilEmpty: Bool = false, logger: Logger,
                               beforeEachVsync: @escaping @Sendable () -> Void = {}) async -> Result<PresentationStats, any Error> {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result {
                    let output = try HeadlessOutput(mode: DisplayMode(width: 640, height: 360, refresh: RefreshRate(numerator: 60)),
                                                    clock: .virtual)
                    let presenter = try PlayerPresenter(player: player, output: output, logger: logger,
                                                        exitAfter: MediaTime(seconds: seconds, preferredTimescale: 600))
                    return try presenter.run(stopWhenEmpty: untilEmpty) {
                        beforeEachVsync()
                        return true
                    }
                })
            }
            thread.name = "example-present"
            thread.start()
        }
    }
}

public enum ExampleMedia {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// An H.264 test pattern of `seconds` at `fps`, made with the ffmpeg command in the temporary
    /// folder (once).
    public static func testPattern(named name: String, seconds: Double, fps: Int) throws -> String {
        let path = NSTemporaryDirectory() + "marquee-example-\(name)-\(fps)fps-\(seconds)s.mp4"
        if FileManager.default.fileExists(atPath: path) { return path }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=\(fps)",
                             "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                             "-f", "mp4", path + ".part"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg failed making \(path): \(String(decoding: message, as: UTF8.self))")
        }
        try FileManager.default.moveItem(atPath: path + ".part", toPath: path)
        return path
    }
}
