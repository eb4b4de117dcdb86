import Foundation
import Media
import Network
import Testing
import TestSupport
@testable import MediaTests

/// `network.cache`'s downloads (`RemoteFetch`, libcurl) against a loopback server that keeps
/// validators and ranges (tools/netfixture.py `/v/`): conditional checks answered 304 cost no body;
/// a cut download resumes from what is on disk, and restarts when the file changed or the server
/// ignores ranges.
@Suite(.serialized) struct RemoteFetchTests {
    struct Answer {
        let status: Int
        let sent: Int
        let range: String
        let ifRange: String
        let ifNoneMatch: String
    }

    /// The server's answers to `/v/` and `/norange/` requests, in order, once there are `count`:
    /// its lines come through a pipe, and may follow the body the client has already read (5 s
    /// at most).
    func answers(_ server: LoopbackServer, count: Int) -> [Answer] {
        let end = Date().addingTimeInterval(5)
        while Date() < end, server.events.filter({ $0.contains(" status=") }).count < count { Thread.sleep(forTimeInterval: 0.02) }
        return server.events.filter { $0.contains(" status=") }.map { line in
            var fields: [String: String] = [:]
            for part in line.split(separator: " ") where part.contains("=") {
                let kv = part.split(separator: "=", maxSplits: 1)
                fields[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
            }
            return Answer(status: Int(fields["status"] ?? "") ?? -1, sent: Int(fields["sent"] ?? "") ?? -1,
                          range: fields["range"] ?? "-", ifRange: fields["if-range"] ?? "-", ifNoneMatch: fields["if-none-match"] ?? "-")
        }
    }

    func served() throws -> (folder: String, size: Int) {
        let folder = TestMedia.folder + "/fetch-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let clip = try TestMedia.clip(seconds: 2, fps: 30)
        try FileManager.default.copyItem(atPath: clip, toPath: folder + "/clip.mp4")
        let size = try #require(FileManager.default.attributesOfItem(atPath: folder + "/clip.mp4")[.size] as? NSNumber).intValue
        return (folder, size)
    }

    func limits() throws -> RemoteFetch.Limits {
        var io = MediaIOLimits(open: 5, read: 5)
        io.network = try NetworkAllowList(entries: ["http://127.0.0.1"])
        return RemoteFetch.Limits(io: io, maxBytes: 64 << 20, maxSeconds: 30)
    }

    func equal(_ a: String, _ b: String) -> Bool { FileManager.default.contentsEqual(atPath: a, andPath: b) }

    @Test func anUnchangedFileIsAnswered304WithNoBodyAndAChangedOneIsFetched() throws {
        let (folder, size) = try served()
        let server = try LoopbackServer("serve", [folder])
        let url = "\(server.url)/v/clip.mp4"
        let part = folder + "/copy.part"
        guard case .downloaded(let bytes, let validators, let transferred) = try RemoteFetch.fetch(url, into: part, current: nil, limits: limits()) else {
            Issue.record("the first fetch did not download")
            return
        }
        #expect(bytes == Int64(size) && transferred == Int64(size) && equal(part, folder + "/clip.mp4"))
        #expect(validators.etag?.hasPrefix("\"") == true && validators.lastModified != nil, "\(validators)")
        // Checked again: 304, and not one byte of body.
        #expect(try RemoteFetch.fetch(url, into: part, current: validators, limits: limits()) == .notModified)
        // Changed on the server: its new ETag differs, the body comes whole.
        let other = try TestMedia.clip(seconds: 1, fps: 30)
        try FileManager.default.removeItem(atPath: folder + "/clip.mp4")
        try FileManager.default.copyItem(atPath: other, toPath: folder + "/clip.mp4")
        guard case .downloaded(_, let newer, _) = try RemoteFetch.fetch(url, into: part, current: validators, limits: limits()) else {
            Issue.record("a changed file was not downloaded")
            return
        }
        #expect(newer.etag != validators.etag && equal(part, other))
        let seen = answers(server, count: 3)
        #expect(seen.map(\.status) == [200, 304, 200], "\(seen)")
        #expect(seen.count > 1 && seen[1].sent == 0 && seen[1].ifNoneMatch != "-", "the 304: \(seen)")
        print("conditional fetch: \(seen.map { "\($0.status):\($0.sent)" }) bytes (file \(size))")
    }

    @Test func aCutDownloadResumesFromWhatIsOnDisk() throws {
        let (folder, size) = try served()
        let server = try LoopbackServer("serve", [folder])
        let url = "\(server.url)/v/clip.mp4"
        let part = folder + "/copy.part"
        _ = FileManager.default.createFile(atPath: folder + "/clip.mp4.cut", contents: nil)
        #expect(throws: MediaError.self) { try RemoteFetch.fetch(url, into: part, current: nil, limits: limits()) }
        let kept = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? NSNumber)?.intValue ?? 0
        #expect(kept == size / 2, "kept \(kept) of \(size)")
        #expect(RemoteFetch.validators(of: part)?.ifRange != nil)
        guard case .downloaded(let bytes, _, let transferred) = try RemoteFetch.fetch(url, into: part, current: nil, limits: limits()) else {
            Issue.record("the resume did not download")
            return
        }
        #expect(bytes == Int64(size) && transferred == Int64(size - kept))
        #expect(equal(part, folder + "/clip.mp4"), "the resumed copy differs from the server's file")
        let seen = answers(server, count: 2)
        #expect(seen.map(\.status) == [200, 206], "\(seen)")
        #expect(seen.count == 2 && seen[1].range == "bytes=\(kept)-" && seen[1].ifRange.hasPrefix("\""), "\(seen)")
        let total = seen.reduce(0) { $0 + $1.sent }
        #expect(total == size, "\(total) bytes sent for a \(size)-byte file")
        print("resumed fetch: \(seen.map { "\($0.status):\($0.sent)" }) bytes, \(total) in all for a \(size)-byte file")
    }

    /// Resumes only the same version: a file changed since the cut comes whole from zero (If-Range
    /// fails), and so does every body from a server that ignores ranges.
    @Test func aChangedFileOrAServerIgnoringRangesRestartsFromZero() throws {
        let (folder, _) = try served()
        let server = try LoopbackServer("serve", [folder])
        for (path, change) in [("v", true), ("norange", false)] {
            let url = "\(server.url)/\(path)/clip.mp4"
            let part = folder + "/\(path).part"
            _ = FileManager.default.createFile(atPath: folder + "/clip.mp4.cut", contents: nil)
            #expect(throws: MediaError.self) { try RemoteFetch.fetch(url, into: part, current: nil, limits: limits()) }
            if change {
                try FileManager.default.removeItem(atPath: folder + "/clip.mp4")
                try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 1, fps: 30), toPath: folder + "/clip.mp4")
            }
            guard case .downloaded(let bytes, _, let transferred) = try RemoteFetch.fetch(url, into: part, current: nil, limits: limits()) else {
                Issue.record("\(path): no download")
                continue
            }
            #expect(bytes == transferred && equal(part, folder + "/clip.mp4"), "\(path): \(bytes) bytes, \(transferred) this time")
            let last = try #require(answers(server, count: path == "v" ? 2 : 4).last)
            #expect(last.status == 200 && last.range.hasPrefix("bytes="), "\(path): \(last)")
        }
    }

    /// A URL outside the list, and a redirect to one, reach nothing outside it.
    @Test func aURLOutsideTheListIsNeverRequested() throws {
        let (folder, _) = try served()
        let elsewhere = try LoopbackServer("serve", [folder], address: "127.0.0.2")
        #expect(throws: MediaError.self) {
            try RemoteFetch.fetch("http://127.0.0.2:\(elsewhere.port)/v/clip.mp4", into: folder + "/x.part", current: nil, limits: limits())
        }
        let server = try LoopbackServer("serve", [folder])
        try "http://127.0.0.2:\(elsewhere.port)/v/clip.mp4".write(toFile: folder + "/redirect-1.txt", atomically: true, encoding: .utf8)
        do {
            _ = try RemoteFetch.fetch("\(server.url)/redirect/1", into: folder + "/y.part", current: nil, limits: limits())
            Issue.record("a redirect was followed")
        } catch let error as MediaError {
            #expect(error.reason.contains("redirects (302) to http://127.0.0.2:\(elsewhere.port)/v/clip.mp4"), "\(error)")
        }
        #expect(elsewhere.events.isEmpty, "\(elsewhere.events)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/y.part") || RemoteFetch.fileSize(folder + "/y.part") == 0)
    }
}
