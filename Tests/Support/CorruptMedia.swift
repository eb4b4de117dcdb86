import Foundation

private let corruptLock = NSLock()

extension TestMedia {
    /// An H.264 clip (2 s, 30 fps, 320x180, an MP4 with its index at the end) whose coded
    /// pictures are damaged: every 97th byte from 10% to 80% of the file is inverted. It opens,
    /// and FFmpeg's decoder reports errors on many of its frames.
    public static func corruptClip() throws -> String {
        corruptLock.lock()
        defer { corruptLock.unlock() }
        let path = folder + "/corrupt-h264.mp4"
        if FileManager.default.fileExists(atPath: path) { return path }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try clip(seconds: 2, fps: 30))))
        for i in stride(from: bytes.count / 10, to: bytes.count * 8 / 10, by: 97) { bytes[i] = ~bytes[i] }
        try Data(bytes).write(to: URL(fileURLWithPath: path + ".part"))
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: path + ".part", toPath: path)
        return path
    }
}
