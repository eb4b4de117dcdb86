import Foundation
import Media
import Network
import Playback
import Testing
import TestSupport
@testable import MediaTests

/// Network items through FFmpeg with `network.allow` enforced: servers on loopback only, started
/// here; every open and read against them bounded by the limits given.
@Suite(.serialized) struct NetworkInputTests {
    func limits(_ allow: [String], open: Double = 10, read: Double = 5) throws -> MediaIOLimits {
        var limits = MediaIOLimits(open: open, read: read)
        limits.network = try NetworkAllowList(entries: allow)
        return limits
    }

    /// A folder of its own with the 2 s MPEG-TS clip in it (served over HTTP).
    func servedFolder() throws -> (folder: String, clip: String) {
        let folder = TestMedia.folder + "/net-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let clip = try TestMedia.make("clip-160x90-25fps-2s.ts", [
            "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "2",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mpegts",
        ])
        try FileManager.default.copyItem(atPath: clip, toPath: folder + "/clip.ts")
        return (folder, "clip.ts")
    }

    func frames(_ decoder: VideoDecoder, limit: Int = 500) throws -> Int {
        var n = 0
        while n < limit, try decoder.nextFrame() != nil { n += 1 }
        return n
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    @Test func anAllowedHTTPFilePlaysAndAnotherIsRefusedWithoutARequest() throws {
        let (folder, clip) = try servedFolder()
        let server = try LoopbackServer("serve", [folder])
        let decoder = try VideoDecoder(path: "\(server.url)/\(clip)", threads: 1, limits: limits(["http://127.0.0.1"]))
        #expect(decoder.info.width == 160 && decoder.info.height == 90)
        #expect(try frames(decoder) == 50)
        let before = server.events.count
        #expect(before >= 1)
        for allow in [[], ["https://127.0.0.1"], ["http://127.0.0.1:1"], ["http://127.0.0.2"]] {
            do {
                _ = try VideoDecoder(path: "\(server.url)/\(clip)", threads: 1, limits: limits(allow))
                Issue.record("opened with network.allow \(allow)")
            } catch let error as MediaError {
                #expect(error.reason.hasPrefix("refused by network.allow: http://127.0.0.1:\(server.port)"), "\(error)")
            }
        }
        #expect(server.events.count == before, "a refused URL made a request: \(server.events)")
    }

    /// An HLS playlist served from 127.0.0.1 whose entries lead elsewhere: a segment on 127.0.0.2,
    /// `file:` URLs, an absolute path, and a redirect to 127.0.0.2. Only 127.0.0.1 is allowed: its
    /// good segments play, and the listener on 127.0.0.2 counts no connection at all.
    @Test func aHostileHLSPlaylistReachesNothingOutsideTheList() throws {
        let (folder, _) = try servedFolder()
        // Three 1 s segments of a real stream (ffmpeg -f hls), then the playlist rewritten.
        let result = try Command.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "3",
                                                "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p",
                                                "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
                                                "-hls_segment_filename", folder + "/seg%d.ts", folder + "/real.m3u8"])
        #expect(result.status == 0, "\(result)")
        let elsewhere = try LoopbackServer("count", [], address: "127.0.0.2")
        let server = try LoopbackServer("serve", [folder])
        try "http://127.0.0.2:\(elsewhere.port)/seg1.ts".write(toFile: folder + "/redirect-seg9.ts.txt", atomically: true, encoding: .utf8)
        let hostile = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:1
        #EXT-X-MEDIA-SEQUENCE:0
        #EXTINF:1.0,
        seg0.ts
        #EXTINF:1.0,
        http://127.0.0.2:\(elsewhere.port)/seg1.ts
        #EXTINF:1.0,
        file://\(folder)/seg1.ts
        #EXTINF:1.0,
        \(folder)/seg1.ts
        #EXTINF:1.0,
        /redirect/seg9.ts
        #EXTINF:1.0,
        http://localhost.:\(elsewhere.port)/seg1.ts
        #EXTINF:1.0,
        seg2.ts
        #EXT-X-ENDLIST

        """
        try hostile.write(toFile: folder + "/hostile.m3u8", atomically: true, encoding: .utf8)
        let decoder = try VideoDecoder(path: "\(server.url)/hostile.m3u8", threads: 1, limits: limits(["http://127.0.0.1"]))
        let shown = try frames(decoder)
        // seg0 and seg2 (25 frames each) are the only ones that may play.
        #expect(shown >= 25 && shown <= 50, "frames: \(shown)")
        Thread.sleep(forTimeInterval: 0.3)  // a connection in flight would be counted by now
        #expect(elsewhere.events.isEmpty, "connections to 127.0.0.2: \(elsewhere.events)")
        let requests = server.events
        #expect(!requests.contains("GET /seg1.ts"), "seg1 reached through 127.0.0.1: \(requests)")
        #expect(requests.contains("GET /redirect/seg9.ts"), "the redirect was asked for, and not followed: \(requests)")
        #expect(requests.contains("GET /seg0.ts") && requests.contains("GET /seg2.ts"), "\(requests)")
    }

    /// RTSP and RTP open their own connections (FFmpeg's `io_open` never sees their URL): the URL
    /// is checked before the open all the same, and a refused one makes no connection.
    @Test(arguments: ["rtsp", "rtp", "udp"]) func aStreamURLIsCheckedBeforeItsDemuxerConnects(scheme: String) throws {
        let elsewhere = try LoopbackServer("count", [], address: "127.0.0.2")
        for allow in [[], ["\(scheme)://127.0.0.1"]] {
            do {
                _ = try VideoDecoder(path: "\(scheme)://127.0.0.2:\(elsewhere.port)/cam", threads: 1, limits: limits(allow, open: 2, read: 1))
                Issue.record("\(scheme) to 127.0.0.2 opened with network.allow \(allow)")
            } catch let error as MediaError {
                #expect(error.reason.hasPrefix("refused by network.allow: \(scheme)://127.0.0.2:\(elsewhere.port)"), "\(error)")
            }
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(elsewhere.events.isEmpty, "connections to 127.0.0.2: \(elsewhere.events)")
    }

    /// A server that accepts and never answers: the open fails at its limit, saying so.
    @Test func aServerThatNeverAnswersFailsTheOpenAtItsLimit() throws {
        let server = try LoopbackServer("hang", [])
        let start = Date()
        do {
            _ = try VideoDecoder(path: "\(server.url)/live.ts", threads: 1, limits: limits(["http://127.0.0.1"], open: 1.5, read: 1))
            Issue.record("opened a server that never answers")
        } catch let error as MediaError {
            let elapsed = Date().timeIntervalSince(start)
            #expect(elapsed >= 0.9 && elapsed < 3, "failed after \(elapsed) s: \(error)")
            #expect(error.reason.hasPrefix("timed out"), "\(error)")
        }
        #expect(server.events == ["conn"])
    }

    /// A server that sends half a stream, then holds the connection: the read fails within its
    /// limit of the stall, naming the wait (the frames the decoder still held come first).
    @Test func aStalledReadFailsWithinItsLimit() throws {
        let (folder, clip) = try servedFolder()
        let server = try LoopbackServer("serve", [folder])
        let start = Date()
        let decoder = try VideoDecoder(path: "\(server.url)/stall/\(clip)", threads: 1, limits: limits(["http://127.0.0.1"], open: 5, read: 1))
        var shown = 0
        do {
            while shown < 500, try decoder.nextFrame() != nil { shown += 1 }
            Issue.record("the stalled stream ended instead of timing out, after \(shown) frames")
        } catch let error as MediaError {
            // Half the clip arrives at once (loopback), then nothing: the error comes one read
            // limit later, not at the socket's own timeout (2 s) nor never.
            let elapsed = Date().timeIntervalSince(start)
            #expect(shown > 0 && shown < 50, "frames before the stall: \(shown)")
            #expect(elapsed >= 0.9 && elapsed < 1.9, "failed \(elapsed) s after the open started: \(error)")
            #expect(error.reason.contains("no data from the server for 1.0 s"), "\(error)")
        }
    }

    /// Twenty opens, half failing at their deadline: no descriptor or thread left behind.
    @Test func repeatedOpensLeaveNoDescriptorOrThread() throws {
        let (folder, clip) = try servedFolder()
        let server = try LoopbackServer("serve", [folder])
        let hung = try LoopbackServer("hang", [])
        let allow = try limits(["http://127.0.0.1"], open: 0.3, read: 0.3)
        func round() throws {
            let decoder = try VideoDecoder(path: "\(server.url)/\(clip)", threads: 1, limits: allow)
            _ = try decoder.nextFrame()
            _ = try? VideoDecoder(path: "\(hung.url)/x.ts", threads: 1, limits: allow)
        }
        // Counted for this test alone (other tests run in the same process meanwhile): its
        // connections to its two servers, and the threads started from its own named thread.
        func connections() -> Int { LiveSourceTests.connections(toPort: server.port) + LiveSourceTests.connections(toPort: hung.port) }
        let name = "net-open-test"
        final class Run: @unchecked Sendable {  // handed to the thread, read after it signalled
            var counts: (Int, Int, Int, Int)?
            var failure: (any Error)?
            var body: () throws -> (Int, Int, Int, Int) = { (0, 0, 0, 0) }
        }
        let run = Run()
        run.body = {
            try round()
            let before = (connections(), LiveSourceTests.threads(named: name))
            for _ in 0..<20 { try round() }
            return (before.0, before.1, connections(), LiveSourceTests.threads(named: name))
        }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            nameThisThread(name)
            do { run.counts = try run.body() } catch { run.failure = error }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 60) == .success, "20 rounds did not end within 60 s")
        if let failure = run.failure { throw failure }
        let counts = run.counts
        let (fds, threads, fdsAfter, threadsAfter) = try #require(counts)
        #expect(fdsAfter <= fds, "connections to the servers: \(fds) before, \(fdsAfter) after 20 rounds")
        #expect(threads == 1 && threadsAfter == 1, "threads: \(threads) before, \(threadsAfter) after 20 rounds")
    }
}
