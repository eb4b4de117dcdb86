import Foundation

/// Test media made with the `ffmpeg` command (installed by `make test`), once per test process,
/// in a temporary folder. Nothing generated is committed.
public enum TestMedia {
    public struct GenerationError: Error, CustomStringConvertible {
        public let description: String
    }

    /// A folder of this process's generated media.
    public static let folder: String = {
        let path = NSTemporaryDirectory() + "marquee-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    private static let lock = NSLock()

    /// Runs `ffmpeg` with `arguments` (after `-y -v error`) to make `name` in `folder`, unless it
    /// exists already. Returns its path.
    public static func make(_ name: String, _ arguments: [String]) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        let path = folder + "/" + name
        if FileManager.default.fileExists(atPath: path) { return path }
        let result = try Command.run("ffmpeg", ["-nostdin", "-y", "-v", "error"] + arguments + [path + ".part.mp4"])
        guard result.status == 0 else {
            throw GenerationError(description: "ffmpeg failed making \(name): \(result.errorText)")
        }
        try FileManager.default.moveItem(atPath: path + ".part.mp4", toPath: path)
        return path
    }

    /// An H.264 clip of `seconds` at `fps`, `width` x `height`, from FFmpeg's test pattern.
    public static func clip(seconds: Double, fps: Int, width: Int = 320, height: Int = 180) throws -> String {
        try make("clip-\(width)x\(height)-\(fps)fps-\(seconds)s.mp4", [
            "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(fps)", "-t", "\(seconds)",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    /// A 320x240 clip (4:3) of four flat quadrants: red, green, blue and white, losslessly coded
    /// (x264 qp 0), so that every decoded sample is exactly what swscale made of the colour.
    public static func quadrants() throws -> String {
        try make("quadrants.mp4", [
            "-f", "lavfi", "-i", "color=c=red:size=160x120:rate=10", "-f", "lavfi", "-i", "color=c=0x00ff00:size=160x120:rate=10",
            "-f", "lavfi", "-i", "color=c=blue:size=160x120:rate=10", "-f", "lavfi", "-i", "color=c=white:size=160x120:rate=10",
            "-filter_complex", "[0][1][2][3]xstack=inputs=4:layout=0_0|w0_0|0_h0|w0_h0,format=yuv420p",
            "-t", "1", "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    /// A file that is not media at all.
    public static func garbage() throws -> String {
        let path = folder + "/garbage.mp4"
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }).write(to: URL(fileURLWithPath: path))
        return path
    }
}
