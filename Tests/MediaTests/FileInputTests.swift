import Foundation
import Media
import Playback
import Testing
import TestSupport

/// How files are opened: only the `file` protocol, image names taken literally, and no open or
/// read that blocks longer than `MediaIOLimits` (FIFOs stand in for devices and stalled storage).
@Suite struct FileInputTests {
    /// A new FIFO in the test folder.
    func makeFIFO(_ name: String) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString).fifo.ts"
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return path
    }

    /// An MPEG-TS clip (readable from a FIFO: no index at the end).
    func transportStream() throws -> String {
        try TestMedia.make("clip-160x90-25fps-2s.ts", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "2",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mpegts",
        ])
    }

    /// Writes `data` into the FIFO at `path` from a thread of its own, then keeps the FIFO open
    /// (without writing) for `holdFor` seconds before closing it.
    func writeSlowly(_ path: String, _ data: Data, holdFor: Double) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let fd = open(path, O_WRONLY)
            if fd >= 0 {
                data.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
                Thread.sleep(forTimeInterval: holdFor)
                close(fd)
            }
            done.signal()
        }
        return done
    }

    /// Nested opens (an HLS playlist's segments) may use the `file` protocol only: a network
    /// segment is refused at once, never connected to. (FFmpeg 5.1's HLS demuxer refuses http
    /// from a local playlist on its own too; the whitelist makes it so for every demuxer.)
    @Test func aPlaylistFileWithANetworkSegmentIsRefused() throws {
        let path = TestMedia.folder + "/network-segment-\(UUID().uuidString).m3u8"
        try "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:9/a.ts\n#EXT-X-ENDLIST\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let started = Date()
        #expect(throws: MediaError.self) { try VideoDecoder.describe(path: path) }
        #expect(Date().timeIntervalSince(started) < 3)
    }

    /// A directory is refused by name, at once.
    @Test func aDirectoryIsRefused() throws {
        let error = try #require(throws: MediaError.self) { try VideoDecoder.describe(path: TestMedia.folder) }
        #expect(error.reason == "is a directory")
    }
}

/// Frames larger than the output's largest texture are scaled down on the decode thread.
@Suite struct TextureLimitTests {

    @Test func fittingKeepsTheAspectAndNeverGoesBelowOnePixel() {
        #expect(OutputCapabilities.fit(width: 16400, height: 16, maxSide: 16384) == (16384, 16))
        #expect(OutputCapabilities.fit(width: 20000, height: 30000, maxSide: 16384) == (10923, 16384))
        #expect(OutputCapabilities.fit(width: 100_000, height: 1, maxSide: 16384) == (16384, 1))
        #expect(OutputCapabilities.fit(width: 640, height: 360, maxSide: 16384) == (640, 360))
    }
}

/// Files that open but give no frame fail their item with FFmpeg's reason (before: the item
/// ended as if played, without a word).
@Suite struct NoFrameTests {

    /// A PNG whose header claims 65535x65535 fails at the probe, naming the size.
    @Test func aPictureSizeOutOfRangeFailsTheProbe() throws {
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            var crc: UInt32 = 0xffff_ffff
            for byte in typed {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
            }
            crc ^= 0xffff_ffff
            let be = { (v: UInt32) in [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
            return be(UInt32(body.count)) + typed + be(crc)
        }
        let header: [UInt8] = [0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 8, 2, 0, 0, 0]
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + chunk("IHDR", header)
            + chunk("IDAT", [0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
        let path = TestMedia.folder + "/huge-header-\(UUID().uuidString).png"
        try Data(png).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: MediaError.self) { try VideoDecoder.describe(path: path) }
        #expect(error.description.contains(path), "\(error)")
    }
}
