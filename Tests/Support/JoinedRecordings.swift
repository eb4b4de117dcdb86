import Foundation

extension TestMedia {
    /// Two one-second 25 fps MPEG-TS recordings (160x90) joined byte for byte, as a capture or a
    /// concatenation of recordings gives them: the second's timestamps start `offset` seconds
    /// after the first's (a jump forward of about `offset - 1` s), or before them when negative.
    public static func joinedRecordings(secondAt offset: Int) throws -> String {
        let name = "joined-\(offset > 0 ? "forward" : "backward")-\(abs(offset))s.ts"
        let path = folder + "/" + name
        if FileManager.default.fileExists(atPath: path) { return path }
        let base = offset > 0 ? 0 : -offset
        func part(_ at: Int, _ colour: String) throws -> Data {
            let file = try make("part-\(colour)-\(at)s.ts", [
                "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "1", "-vf", "drawbox=c=\(colour):t=fill:w=20:h=20",
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-output_ts_offset", "\(at)", "-f", "mpegts",
            ])
            return try Data(contentsOf: URL(fileURLWithPath: file))
        }
        let joined = try part(base, "red") + part(base + offset, "blue")
        // Tests running at once may both make it: each writes its own copy and renames it in place.
        let part = path + ".\(UUID().uuidString).part"
        try joined.write(to: URL(fileURLWithPath: part))
        guard rename(part, path) == 0 else { throw GenerationError(description: "cannot rename \(part): errno \(errno)") }
        return path
    }
}
