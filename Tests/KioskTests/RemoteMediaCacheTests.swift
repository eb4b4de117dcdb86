import Foundation
@testable import Kiosk
import Media
import Network
import Playback
import Synchronization
import Testing

/// The cache's downloads, checks, swaps and eviction with a scripted server (what each URL's
/// download writes, or the error it throws) and a virtual clock: no network, no FFmpeg.
@Suite struct RemoteMediaCacheTests {
    final class Server: Sendable {
        /// URL -> the body to write, or nil: the server is away.
        let bodies = Mutex<[String: String?]>([:])
        let requests = Mutex<[String]>([])
    }

    final class Clock: Sendable {
        let now = Mutex(0.0)
        func set(_ t: Double) { now.withLock { $0 = t } }
    }

    struct Away: Error, CustomStringConvertible { var description: String { "Connection refused" } }
    struct Corrupt: Error, CustomStringConvertible { var description: String { "no decodable frame" } }

    func make(_ server: Server, clock: Clock, maxSize: Int64 = 1 << 20, refresh: Double = 60) throws -> RemoteMediaCache {
        var settings = RemoteCacheSettings()
        settings.folder = NSTemporaryDirectory() + "marquee-cache-\(UUID().uuidString)"
        settings.maxSize = maxSize
        settings.refresh = refresh
        return try RemoteMediaCache(settings: settings, fetch: { url, path in
            server.requests.withLock { $0.append(url) }
            guard let body = server.bodies.withLock({ $0[url] ?? nil }) else { throw Away() }
            try body.write(toFile: path, atomically: false, encoding: .utf8)
            return Int64(body.utf8.count)
        }, verify: { path in
            // "Media" here: any body not starting with "garbage".
            if (try String(contentsOfFile: path, encoding: .utf8)).hasPrefix("garbage") { throw Corrupt() }
        }, logger: Logger(level: .error, sink: { _ in }), now: { clock.now.withLock { $0 } })
    }

    func contents(_ cache: RemoteMediaCache, _ url: String) -> String? {
        cache.localFile(for: url).flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
    }

    @Test func copiesAreSwappedInOnlyWhenVerifiedAndStayWhileTheServerIsAway() throws {
        let server = Server()
        let clock = Clock()
        let (a, b) = ("http://127.0.0.1/a.mp4", "http://127.0.0.1/b.mp4")
        server.bodies.withLock { $0 = [a: "A1", b: "garbage"] }
        let cache = try make(server, clock: clock)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let swaps = Mutex<[String]>([])
        cache.onSwap.withLock { $0 = { urls in swaps.withLock { $0.append(contentsOf: urls) } } }
        cache.want([a, b])
        #expect(cache.isCached(a) && !cache.isCached("http://127.0.0.1/c.mp4"))
        #expect(cache.localFile(for: a) == nil, "nothing plays before its copy is complete")
        cache.step()
        cache.step()
        #expect(contents(cache, a) == "A1")
        #expect(cache.localFile(for: b) == nil, "a download that fails its check never plays")
        if case .failed(_, 1, "no decodable frame") = cache.state(of: b) {} else { Issue.record("\(String(describing: cache.state(of: b)))") }
        #expect(swaps.withLock { $0 } == [a])
        // The server goes away for ten minutes: checks fail, the copy plays on.
        server.bodies.withLock { $0 = [:] }
        for t in stride(from: 60.0, through: 660, by: 0.5) {
            clock.set(t)
            cache.step()
        }
        #expect(contents(cache, a) == "A1")
        if case .stale(_, _, _, "Connection refused") = cache.state(of: a) {} else { Issue.record("\(String(describing: cache.state(of: a)))") }
        // Back with a changed file: swapped in at its next check.
        server.bodies.withLock { $0 = [a: "A2", b: "B1"] }
        for t in stride(from: 661.0, through: 700, by: 0.5) {
            clock.set(t)
            cache.step()
        }
        #expect(contents(cache, a) == "A2" && contents(cache, b) == "B1")
        #expect(cache.state(of: a).map { if case .ready(let c, _) = $0 { c.version } else { 0 } } == 2)
        #expect(swaps.withLock { $0 } == [a, a, b] || swaps.withLock { $0 } == [a, b, a])
        // Unchanged at the next check: no swap, and the files are all the cache holds.
        let before = swaps.withLock { $0.count }
        clock.set(800)
        cache.step()
        cache.step()
        #expect(swaps.withLock { $0.count } == before)
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.folder)
        #expect(names.count == 2 && !names.contains { $0.hasSuffix(".part") }, "\(names)")
    }

    /// With validators: a check the server answers "not modified" costs no download and no
    /// check of the file; the copy's validators are kept beside it and sent back; a cut download's
    /// part stays for the next try to go on from.
    @Test func aCurrentCopyIsNotDownloadedAgainAndACutPartIsKept() throws {
        let clock = Clock()
        let url = "http://127.0.0.1/a.mp4"
        struct Cut: Error, CustomStringConvertible { var description: String { "the body ended after 2 of 4 bytes" } }
        final class Origin: Sendable {
            let body = Mutex(("AAAA", "\"1\""))
            let cutNext = Mutex(false)
            let log = Mutex<[String]>([])
            let verified = Mutex(0)
        }
        let origin = Origin()
        var settings = RemoteCacheSettings()
        settings.folder = NSTemporaryDirectory() + "marquee-cache-\(UUID().uuidString)"
        settings.refresh = 60
        let cache = try RemoteMediaCache(settings: settings, conditionalFetch: { _, part, current in
            let (body, etag) = origin.body.withLock { $0 }
            if current?.etag == etag {
                origin.log.withLock { $0.append("304") }
                return .notModified
            }
            let kept = (try? String(contentsOfFile: part, encoding: .utf8)) ?? ""
            if origin.cutNext.withLock({ $0 }) {
                origin.cutNext.withLock { $0 = false }
                try String(body.prefix(2)).write(toFile: part, atomically: false, encoding: .utf8)
                origin.log.withLock { $0.append("cut") }
                throw Cut()
            }
            try (kept + body.dropFirst(kept.count)).write(toFile: part, atomically: false, encoding: .utf8)
            origin.log.withLock { $0.append("200 from \(kept.count)") }
            return .downloaded(bytes: Int64(body.count), validators: RemoteValidators(etag: etag), transferred: Int64(body.count - kept.count))
        }, verify: { _ in origin.verified.withLock { $0 += 1 } }, logger: Logger(level: .error, sink: { _ in }), now: { clock.now.withLock { $0 } })
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        cache.want([url])
        cache.step()
        let file = try #require(cache.localFile(for: url))
        #expect(RemoteFetch.validators(of: file)?.etag == "\"1\"", "the copy's validators are kept beside it")
        clock.set(60)
        cache.step()
        #expect(origin.log.withLock { $0 } == ["200 from 0", "304"])
        #expect(origin.verified.withLock { $0 } == 1, "a current copy is not checked again")
        if case .ready(let c, let at) = cache.state(of: url) { #expect(c.version == 1 && c.confirmed == 60 && at == 120) } else { Issue.record("\(String(describing: cache.state(of: url)))") }
        // Changed, and its download cut: the part stays for the retry, which goes on from it.
        origin.body.withLock { $0 = ("BBBB", "\"2\"") }
        origin.cutNext.withLock { $0 = true }
        clock.set(120)
        cache.step()
        #expect(FileManager.default.fileExists(atPath: file + ".part"))
        #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "AAAA", "the old copy plays on")
        clock.set(200)
        cache.step()
        #expect(origin.log.withLock { $0 } == ["200 from 0", "304", "cut", "200 from 2"])
        #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "BBBB" && RemoteFetch.validators(of: file)?.etag == "\"2\"")
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.folder).sorted()
        #expect(names.count == 2 && names.allSatisfy { !$0.hasSuffix(".part") }, "\(names)")
    }

    @Test func theLeastRecentlyPlayedLeaveFirstPlaylistFilesLast() throws {
        let server = Server()
        let clock = Clock()
        let urls = (0..<4).map { "http://127.0.0.1/\($0).ts" }
        server.bodies.withLock { for u in urls { $0[u] = String(repeating: "x", count: 100) } }
        let cache = try make(server, clock: clock, maxSize: 250)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        // An old file no longer in the playlist, played long ago.
        let old = cache.folder + "/old.ts"
        try String(repeating: "o", count: 100).write(toFile: old, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)], ofItemAtPath: old)
        // And a cut download of another file no longer in it, with its validators.
        let oldPart = cache.folder + "/gone.ts.part"
        try String(repeating: "p", count: 50).write(toFile: oldPart, atomically: false, encoding: .utf8)
        try RemoteFetch.keep(RemoteValidators(etag: "\"g\""), beside: oldPart)
        cache.want(Array(urls[0..<2]))
        cache.step()
        cache.step()
        #expect(!FileManager.default.fileExists(atPath: old), "the file not in the playlist left first")
        #expect(!FileManager.default.fileExists(atPath: oldPart) && RemoteFetch.validators(of: oldPart) == nil, "and the part it will not resume")
        #expect(cache.localFile(for: urls[0]) != nil && cache.localFile(for: urls[1]) != nil)
        // A third file over the cap: a playlist file leaves, the least recently played.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: cache.file(for: urls[1]))
        cache.want(Array(urls[0..<3]))
        cache.step()
        #expect(cache.localFile(for: urls[2]) != nil)
        #expect(!FileManager.default.fileExists(atPath: cache.file(for: urls[1])), "urls[1] was played least recently")
        #expect(cache.state(of: urls[1]) == .failed(retryAt: 60, failures: 1, reason: "evicted: the playlist's files take more than network.cache.maxSize"),
                "downloaded again after refresh seconds, not at once")
    }

    @Test func theConfigSaysWhichItemsAreCached() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}, {"uri": "http://127.0.0.1/b.mp4"}, {"uri": "http://127.0.0.1/live/index.m3u8"},
                          {"uri": "http://127.0.0.1/live.ts", "duration": 30}, {"uri": "https://127.0.0.1/c.webm?v=2"}, {"uri": "http://127.0.0.1/b.mp4"}],
             "network": {"allow": ["http://127.0.0.1", "https://127.0.0.1"], "cache": {"folder": "/var/cache/m", "maxSize": 10, "refresh": 30}}}
            """, baseDirectory: "/srv")
        #expect(config.cachedRemoteURLs == ["http://127.0.0.1/b.mp4", "https://127.0.0.1/c.webm?v=2"])
        #expect(config.network.cache?.maxSize == 10 * 1_048_576 && config.network.cache?.refresh == 30)
        #expect(config.network.cache?.resolvedFolder == "/var/cache/m")
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "http://127.0.0.1/b.mp4"}], "network": {"allow": ["http://127.0.0.1"]}}"#,
                                      baseDirectory: "/srv").cachedRemoteURLs == [])
        do {
            _ = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "network": {"cache": {"folder": "rel", "maxSize": 0, "refresh": "x", "size": 1}}}"#, baseDirectory: "/srv")
            Issue.record("accepted")
        } catch {
            let text = error.problems.map(\.description).joined(separator: "\n")
            for path in ["network.cache.folder", "network.cache.maxSize", "network.cache.refresh", "network.cache.size"] {
                #expect(text.contains(path), "\(path) not named in:\n\(text)")
            }
        }
    }
}

extension RemoteMediaCacheTests {
    /// Refreshes due every step never keep a later file from its first copy.
    @Test func firstCopiesComeBeforeRefreshes() throws {
        let server = Server()
        let clock = Clock()
        let urls = (0..<5).map { "http://127.0.0.1/\($0).mp4" }
        server.bodies.withLock { for u in urls { $0[u] = u } }
        let cache = try make(server, clock: clock, refresh: 0.5)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        cache.want(urls)
        for t in 0..<5 {
            clock.set(Double(t))  // every earlier copy is due for its check again
            cache.step()
        }
        #expect(urls.allSatisfy { cache.localFile(for: $0) != nil }, "\(urls.map { cache.state(of: $0) })")
        #expect(server.requests.withLock { $0 } == urls)
    }
}

extension RemoteMediaCacheTests {
    /// The first copy of all is told at once (the screen need not wait); the rest together once
    /// no download is due, so the playlist takes them at one boundary.
    @Test func swapsAreToldTogetherOnceNoDownloadIsDue() throws {
        let server = Server()
        let clock = Clock()
        let urls = (0..<3).map { "http://127.0.0.1/\($0).mp4" }
        server.bodies.withLock { for u in urls { $0[u] = u } }
        let cache = try make(server, clock: clock)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let told = Mutex<[[String]]>([])
        cache.onSwap.withLock { $0 = { urls in told.withLock { $0.append(urls) } } }
        cache.want(urls)
        #expect(cache.step() && told.withLock { $0 } == [[urls[0]]])
        #expect(cache.step() && cache.step())
        #expect(told.withLock { $0 } == [[urls[0]]], "not yet: downloads were due")
        #expect(!cache.step())
        #expect(told.withLock { $0 } == [[urls[0]], [urls[1], urls[2]]])
        #expect(!cache.step() && told.withLock { $0.count } == 2, "told once")
    }
}
