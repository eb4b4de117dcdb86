import Foundation

extension TestMedia {
    /// A folder holding an HLS master playlist (`master.m3u8`) of two variants of one picture of
    /// `seconds`, 640x360 (`v0/`) and 320x180 (`v1/`), in 1 s segments (`seg0.ts`...), made by
    /// ffmpeg now: a folder of its own each time, for a server of its own.
    public static func hlsVariants(seconds: Int = 8) throws -> String {
        let folder = TestMedia.folder + "/hls-variants-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let result = try Command.run("ffmpeg", [
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-t", "\(seconds)",
            "-filter_complex", "[0:v]split=2[a][b];[b]scale=320:180[s]", "-map", "[a]", "-map", "[s]",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p", "-b:v:0", "800k", "-b:v:1", "300k",
            "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod",
            "-master_pl_name", "master.m3u8", "-var_stream_map", "v:0 v:1",
            "-hls_segment_filename", folder + "/v%v/seg%d.ts", folder + "/v%v/index.m3u8",
        ])
        guard result.status == 0 else { throw GenerationError(description: "ffmpeg could not make the HLS variants: \(result.errorText)") }
        return folder
    }
}
