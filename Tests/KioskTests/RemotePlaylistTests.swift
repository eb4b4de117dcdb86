import Foundation
import HTTPServer
@testable import Kiosk
import Network
import Playback
import Synchronization
import Testing

/// A remote M3U (`{"m3u": "https://..."}`): its text read (entries resolved against its URL,
/// refused ones skipped with the reason, SHA-256 tags), the config's refusals, and the set switch
/// with a scripted server and a virtual clock (no network, no FFmpeg).
@Suite struct RemotePlaylistTests {
    let allow = NetworkAllowList(rules: [try! NetworkAllowList.rule("https://cdn.example.com"), try! NetworkAllowList.rule("http://10.0.0.0/8")])
    /// cdn.example.com is a public address; anything else does not resolve.
    let resolve: @Sendable (String) throws -> [IPAddress] = { host in
        guard host == "cdn.example.com", let a = IPAddress("93.184.216.34") else { throw RemoteMediaCacheTests.Away() }
        return [a]
    }
    let hashA = String(repeating: "ab", count: 32)

    @Test func entriesResolveAgainstTheListsURL() {
        let list = RemoteM3U(text: "#EXTM3U\r\n#EXTINF:10,A\na.mp4\n../b.mp4\n/root/c.mp4\n  \nhttps://cdn.example.com/d.mp4?x=1\nhttp://10.1.2.3/e.mp4\n",
                             base: "https://cdn.example.com/lists/today.m3u", allow: allow, resolve: resolve)
        #expect(list.entries.map(\.url) == ["https://cdn.example.com/lists/a.mp4", "https://cdn.example.com/b.mp4", "https://cdn.example.com/root/c.mp4",
                                            "https://cdn.example.com/d.mp4?x=1", "http://10.1.2.3/e.mp4"])
        #expect(list.skipped.isEmpty && list.warnings.isEmpty)
    }

    @Test func entriesNotAllowedOrNotHTTPAreSkippedWithTheReason() {
        let list = RemoteM3U(text: "file:///etc/passwd\nhttps://other.example.org/x.mp4\nhttp://cdn.example.com/y.mp4\nrtsp://10.0.0.1/cam\nok.mp4\nlive/index.m3u8\n",
                             base: "https://cdn.example.com/l.m3u", allow: allow, resolve: resolve)
        #expect(list.entries.map(\.url) == ["https://cdn.example.com/ok.mp4"])
        #expect(list.skipped.count == 5)
        #expect(list.skipped[4] == #"line 6: "live/index.m3u8": a playlist, not a file to cache"#)
        #expect(list.skipped[0] == #"line 1: "file:///etc/passwd": file entries are not played from a remote playlist, only http and https"#)
        #expect(list.skipped[1].hasPrefix(#"line 2: "https://other.example.org/x.mp4": refused by network.allow: "#), "\(list.skipped[1])")
        #expect(list.skipped[2].hasPrefix(#"line 3: "http://cdn.example.com/y.mp4": refused by network.allow: "#), "\(list.skipped[2])")
        #expect(list.skipped[3].hasPrefix(#"line 4: "rtsp://10.0.0.1/cam": rtsp entries"#), "\(list.skipped[3])")
    }

    @Test func aHashTagGoesWithTheNextEntryOnly() {
        let text = """
            #EXT-X-MARQUEE-SHA256:\(hashA.uppercased())
            #EXTINF:5,A
            a.mp4
            b.mp4
            #EXT-X-MARQUEE-SHA256:1234
            c.mp4
            #ext-x-marquee-sha256: \(hashA)
            d.mp4
            """
        let list = RemoteM3U(text: text, base: "https://cdn.example.com/l.m3u", allow: allow, resolve: resolve)
        #expect(list.entries.map(\.sha256) == [hashA, nil, nil, hashA])
        #expect(list.warnings == [##"line 5: "#EXT-X-MARQUEE-SHA256:1234" is not #EXT-X-MARQUEE-SHA256: and 64 hex digits; the next entry has no hash"##])
    }

    /// A file is hashed in 64 KiB slices: the same digest as all of it at once, past several slices.
    @Test func aFilesHashIsItsBytesHash() throws {
        let bytes = (0..<200_003).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        let path = NSTemporaryDirectory() + "marquee-hash-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try sha256(ofFile: path) == sha256(bytes))
        #expect(hexString(sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(throws: FileHashError.self) { try sha256(ofFile: path + ".absent") }
        do {
            _ = try sha256(ofFile: path + ".absent")
        } catch {
            #expect(error.description == "\(path).absent: open failed (\(ENOENT): No such file or directory)")
        }
    }

    @Test func aNewSetWaitsForEveryEntryAndLeavesOutTheBadOnes() {
        #expect(RemoteSetSwitch([.ready, .pending, .bad("x"), .pending]) == .wait(pending: 2))
        #expect(RemoteSetSwitch([.ready, .bad("x"), .ready]) == .take(playable: [0, 2], skipped: [1]))
        #expect(RemoteSetSwitch([.bad("x")]) == .take(playable: [], skipped: [0]))
    }

    func problems(_ text: String) -> [String] { NetworkConfigTests().problems(text) }

    @Test func theConfigRefusesARemoteListItCannotKeepOrMayNotFetch() throws {
        let ok = try KioskConfig.parse(#"{"playlist": {"m3u": "https://cdn.example.com/l.m3u"}, "network": {"allow": ["https://cdn.example.com"], "cache": {}}}"#,
                                       baseDirectory: "/srv")
        #expect(ok.playlistOrigin == .remoteM3U("https://cdn.example.com/l.m3u") && ok.playlist.isEmpty)
        #expect(problems(#"{"playlist": {"m3u": "https://cdn.example.com/l.m3u"}, "network": {"allow": ["https://cdn.example.com"]}}"#)
            == [#"playlist.m3u: "https://cdn.example.com/l.m3u": a remote M3U needs network.cache (its last good copy and its entries are kept there, docs/network.md)"#])
        #expect(problems(#"{"playlist": {"m3u": "http://cdn.example.com/l.m3u"}, "network": {"allow": ["https://cdn.example.com"], "cache": {}}}"#)
            == ["playlist.m3u: refused by network.allow: http://cdn.example.com: the scheme http is not in network.allow"])
        #expect(problems(#"{"playlist": {"m3u": "http://10.9.9.9/l.m3u"}, "network": {"allow": ["http://192.168.0.0/16"], "cache": {}}}"#)
            == ["playlist.m3u: refused by network.allow: http://10.9.9.9: 10.9.9.9 is in no network.allow block for http"])
        #expect(problems(#"{"playlist": {"m3u": "rtsp://cam/l.m3u"}, "network": {"allow": ["rtsp://cam"], "cache": {}}}"#)
            == [#"playlist.m3u: "rtsp://cam/l.m3u": a remote M3U is fetched over http or https only, not rtsp"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["monday"], "playlist": {"m3u": "https://cdn.example.com/l.m3u"}}], "network": {"allow": ["https://cdn.example.com"], "cache": {}}}"#)
            .contains { $0.hasPrefix(#"schedule[0].playlist.m3u: "https://cdn.example.com/l.m3u": a remote M3U can only be the top-level playlist"#) })
    }

    @Test func aReloadNamingARemoteListIsRefusedOnlyByARunStartedWithoutOne() throws {
        let text = #"{"playlist": {"m3u": "https://cdn.example.com/l.m3u"}, "network": {"allow": ["https://cdn.example.com"], "cache": {}}}"#
        let loaded = try KioskConfig.parse(text, baseDirectory: "/srv")
        #expect(RemotePlaylist.reloadRefusal(loaded, running: "https://cdn.example.com/l.m3u") == nil)
        // Another list is taken up as a new set (`retarget`).
        #expect(RemotePlaylist.reloadRefusal(loaded, running: "https://cdn.example.com/other.m3u") == nil)
        #expect(RemotePlaylist.reloadRefusal(loaded, running: nil)
            == "playlist.m3u: the remote M3U https://cdn.example.com/l.m3u is taken up at the next start, not by a reload (this run started without one)")
        #expect(RemotePlaylist.reloadRefusal(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/srv"), running: "https://x/l.m3u") == nil)
    }

    // The set switch, with the cache's scripted server (RemoteMediaCacheTests) and a virtual clock.

    func playlist(_ server: RemoteMediaCacheTests.Server, _ cache: RemoteMediaCache, clock: RemoteMediaCacheTests.Clock, url: String,
                  holdsSets: Bool = false) -> RemotePlaylist {
        let resolve = resolve
        return RemotePlaylist(url: url, cache: cache, allow: allow, logger: Logger(level: .error, sink: { _ in }), holdsSets: holdsSets, fetch: { url, part, _ in
            guard let body = server.bodies.withLock({ $0[url] ?? nil }) else { throw RemoteMediaCacheTests.Away() }
            try body.write(toFile: part, atomically: false, encoding: .utf8)
            return .downloaded(bytes: Int64(body.utf8.count), validators: RemoteValidators(), transferred: Int64(body.utf8.count))
        }, resolve: resolve, now: { clock.now.withLock { $0 } })
    }

    func run(_ cache: RemoteMediaCache, _ list: RemotePlaylist, clock: RemoteMediaCacheTests.Clock, from: Double, to: Double) {
        for t in stride(from: from, through: to, by: 0.25) {
            clock.set(t)
            cache.step()
            list.step()
        }
    }

    func names(_ list: RemotePlaylist) -> [String] {
        ((try? list.items()) ?? []).map { String($0.path.split(separator: "/").last ?? "") }
    }

    @Test func aChangedListPlaysOnlyWhenItsWholeSetIsCachedAndTheLastGoodOneOutlivesTheServer() throws {
        let server = RemoteMediaCacheTests.Server()
        let clock = RemoteMediaCacheTests.Clock()
        let cache = try RemoteMediaCacheTests().make(server, clock: clock, refresh: 10)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let base = "https://cdn.example.com/l/"
        let good = hexString(sha256(Array("A1".utf8)))
        server.bodies.withLock {
            $0 = [base + "list.m3u": "#EXT-X-MARQUEE-SHA256:\(good)\na.mp4\n#EXT-X-MARQUEE-SHA256:\(hashA)\nb.mp4\nhttps://elsewhere.example/c.mp4\n",
                  base + "a.mp4": "A1", base + "b.mp4": "B1"]
        }
        let list = playlist(server, cache, clock: clock, url: base + "list.m3u")
        let changes = Mutex(0)
        list.onChange.withLock { $0 = { changes.withLock { $0 += 1 } } }
        do {
            _ = try list.items()
            Issue.record("a list never fetched has no items")
        } catch {
            #expect(error.message.contains("has no good copy yet"))
        }
        // b's hash never matches: failed three times and a refresh (10 s) on, it no longer holds
        // the set back.
        run(cache, list, clock: clock, from: 0, to: 9.5)
        #expect(names(list).isEmpty, "the set waits for b")
        run(cache, list, clock: clock, from: 9.75, to: 12)
        #expect(names(list) == ["a.mp4"])
        #expect(changes.withLock { $0 } == 1)
        #expect(cache.localFile(for: base + "b.mp4") == nil, "a download that does not match its hash is never kept")
        if case .failed(_, _, let reason) = cache.state(of: base + "b.mp4") {
            #expect(reason == "\(base)b.mp4: SHA-256 mismatch: expected \(hashA), got \(hexString(sha256(Array("B1".utf8)))); the download was deleted")
        } else {
            Issue.record("\(String(describing: cache.state(of: base + "b.mp4")))")
        }
        #expect(!server.requests.withLock { $0 }.contains { $0.contains("elsewhere") }, "an entry not allowed is never requested")

        // A new set, fetched at the list's next check (20 s); d is not on the server yet: a plays
        // on until d is cached too.
        server.bodies.withLock {
            $0[base + "list.m3u"] = "c.mp4\nd.mp4\n"
            $0[base + "c.mp4"] = "C1"
        }
        run(cache, list, clock: clock, from: 12.25, to: 21)
        #expect(cache.localFile(for: base + "c.mp4") != nil)
        #expect(cache.failures(of: base + "d.mp4") >= 1)
        #expect(names(list) == ["a.mp4"], "the new set waits for d")
        server.bodies.withLock { $0[base + "d.mp4"] = "D1" }
        run(cache, list, clock: clock, from: 21.25, to: 30)
        #expect(names(list) == ["c.mp4", "d.mp4"])

        // The server gone, a new start on the same folder: the last good set plays at once.
        server.bodies.withLock { $0 = [:] }
        let again = playlist(server, cache, clock: clock, url: base + "list.m3u")
        #expect(names(again) == ["c.mp4", "d.mp4"])
        let health = Mutex<String?>(nil)
        again.onHealth.withLock { $0 = { reason in health.withLock { $0 = reason } } }
        run(cache, again, clock: clock, from: 30.25, to: 36)
        #expect(names(again) == ["c.mp4", "d.mp4"])
        let said = health.withLock { $0 } ?? ""
        #expect(said.hasPrefix("remote playlist \(base)list.m3u: not refreshed for ") && said.contains("last good since "), "\(said)")
    }

    /// On a clock-synced wall of several nodes (`holdsSets`) a whole new set is held, not taken,
    /// until the wall agrees: then it is taken with its switch time, which a restart reads back.
    /// While a set waits for its downloads, the list's checks send that set's validators: the
    /// server answers "not modified" instead of sending the whole list again.
    @Test func aWallHoldsAWholeSetUntilItIsTakenAndChecksTheWaitingListWithItsValidators() throws {
        let server = RemoteMediaCacheTests.Server()
        let clock = RemoteMediaCacheTests.Clock()
        let cache = try RemoteMediaCacheTests().make(server, clock: clock, refresh: 10)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let base = "https://cdn.example.com/w/"
        server.bodies.withLock { $0 = [base + "list.m3u": "a.mp4\n", base + "a.mp4": "A1"] }
        // The list's server: an ETag per body; a request naming the body's ETag is not modified.
        let fetches = Mutex<[(sent: String?, downloaded: Bool)]>([])
        let make = { [resolve, allow] in
            RemotePlaylist(url: base + "list.m3u", cache: cache, allow: allow, logger: Logger(level: .error, sink: { _ in }), holdsSets: true,
                           fetch: { url, part, current in
                guard let body = server.bodies.withLock({ $0[url] ?? nil }) else { throw RemoteMediaCacheTests.Away() }
                let etag = "\"\(hexString(sha256(Array(body.utf8))).prefix(16))\""
                if current?.etag == etag {
                    fetches.withLock { $0.append((current?.etag, false)) }
                    return .notModified
                }
                fetches.withLock { $0.append((current?.etag, true)) }
                try body.write(toFile: part, atomically: false, encoding: .utf8)
                return .downloaded(bytes: Int64(body.utf8.count), validators: RemoteValidators(etag: etag), transferred: Int64(body.utf8.count))
            }, resolve: resolve, now: { clock.now.withLock { $0 } })
        }
        let list = make()
        run(cache, list, clock: clock, from: 0, to: 5)
        let first = try #require(list.heldSet(), "the first set, whole, is held")
        #expect(first.id == WallSetMessage.setID(of: Data("a.mp4\n".utf8)) && first.items.map(\.path) == [base + "a.mp4"])
        #expect(names(list).isEmpty && list.currentSet.id == nil, "not taken by itself")
        #expect(list.pin(first.id) && !list.pin(String(repeating: "0", count: 64)))
        let since = WallTime(nanoseconds: 1_790_000_007_000_000_000)
        #expect(!list.takeHeld(String(repeating: "0", count: 64), since: since))
        #expect(list.takeHeld(first.id, since: since))
        #expect(names(list) == ["a.mp4"] && list.currentSet.id == first.id && list.currentSet.since == since && list.heldSet() == nil)
        #expect(RemotePlaylist.readWallFile(list.wallFile, id: first.id) == since)

        // A new set whose b is not on the server yet: it waits, and each check after the one that
        // brought it is answered "not modified".
        server.bodies.withLock { $0[base + "list.m3u"] = "a.mp4\nb.mp4\n" }
        fetches.withLock { $0 = [] }
        run(cache, list, clock: clock, from: 5.25, to: 45)
        let waiting = fetches.withLock { $0 }
        print("list checks while the set waited: \(waiting.count), downloaded \(waiting.filter(\.downloaded).count)")
        #expect(waiting.count >= 3 && waiting.first?.downloaded == true && waiting.dropFirst().allSatisfy { !$0.downloaded && $0.sent != nil },
                "\(waiting)")
        // b, failed three times and a refresh on, no longer holds the set back: held without it, still not taken.
        #expect(list.heldSet()?.items.map(\.path) == [base + "a.mp4"] && names(list) == ["a.mp4"])
        server.bodies.withLock { $0[base + "b.mp4"] = "B1" }
        run(cache, list, clock: clock, from: 45.25, to: 120)
        let second = try #require(list.heldSet(), "whole now, and held")
        #expect(second.items.map(\.path) == [base + "a.mp4", base + "b.mp4"] && names(list) == ["a.mp4"])

        // Restarted before the wall switched: the last good set, on the switch time it took over.
        let again = make()
        #expect(names(again) == ["a.mp4"] && again.currentSet.id == first.id && again.currentSet.since == since)
        // A record of another set beside the copy is not this one's.
        #expect(RemotePlaylist.readWallFile(list.wallFile, id: second.id) == nil)
    }

    /// A reload naming another list: its set is fetched at once and takes over only once whole;
    /// the set playing plays on until then, and the new list is the last good copy after.
    @Test func anotherListNamedByAReloadTakesOverOnceItsWholeSetIsCached() throws {
        let server = RemoteMediaCacheTests.Server()
        let clock = RemoteMediaCacheTests.Clock()
        let cache = try RemoteMediaCacheTests().make(server, clock: clock, refresh: 60)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let base = "https://cdn.example.com/r/"
        server.bodies.withLock {
            $0 = [base + "one.m3u": "a.mp4\n", base + "a.mp4": "A1", base + "two.m3u": "b.mp4\nc.mp4\n", base + "b.mp4": "B1"]
        }
        let list = playlist(server, cache, clock: clock, url: base + "one.m3u")
        run(cache, list, clock: clock, from: 0, to: 3)
        #expect(names(list) == ["a.mp4"])
        // Named, it is fetched at once (not a refresh later); c is not on the server yet.
        list.retarget(base + "two.m3u")
        run(cache, list, clock: clock, from: 3.25, to: 6)
        #expect(server.requests.withLock { $0 }.contains { $0.hasSuffix("b.mp4") }, "the new list's entries are downloaded")
        #expect(names(list) == ["a.mp4"] && list.url == base + "one.m3u", "the set playing plays on")
        #expect(list.waiting == (base + "two.m3u", base + "two.m3u"), "\(list.waiting)")
        // Named back before it was taken: it is dropped.
        list.retarget(base + "one.m3u")
        #expect(list.waiting == (nil, nil) && names(list) == ["a.mp4"] && list.url == base + "one.m3u", "\(list.waiting)")
        list.retarget(base + "two.m3u")
        #expect(list.waiting == (base + "two.m3u", nil), "fetched again from the start: \(list.waiting)")
        server.bodies.withLock { $0[base + "c.mp4"] = "C1" }
        run(cache, list, clock: clock, from: 6.25, to: 20)
        #expect(names(list) == ["b.mp4", "c.mp4"] && list.url == base + "two.m3u")
        #expect(FileManager.default.contents(atPath: list.copyFile(for: base + "two.m3u")) == Data("b.mp4\nc.mp4\n".utf8))
        // A restart on the new list, the server away: its set plays.
        server.bodies.withLock { $0 = [:] }
        #expect(names(playlist(server, cache, clock: clock, url: base + "two.m3u")) == ["b.mp4", "c.mp4"])
    }

    /// On a wall: a set the wall agreed on (pinned) outlives a reload naming another list, so the
    /// node switches with the others and keeps it; the list named is taken up after.
    @Test func aSetTheWallAgreedOnOutlivesAReloadNamingAnotherList() throws {
        let server = RemoteMediaCacheTests.Server()
        let clock = RemoteMediaCacheTests.Clock()
        let cache = try RemoteMediaCacheTests().make(server, clock: clock, refresh: 60)
        defer { try? FileManager.default.removeItem(atPath: cache.folder) }
        let base = "https://cdn.example.com/p/"
        server.bodies.withLock { $0 = [base + "one.m3u": "a.mp4\n", base + "a.mp4": "A1", base + "two.m3u": "b.mp4\n", base + "b.mp4": "B1"] }
        let list = playlist(server, cache, clock: clock, url: base + "one.m3u", holdsSets: true)
        run(cache, list, clock: clock, from: 0, to: 3)
        let held = try #require(list.heldSet())
        #expect(list.pin(held.id))
        list.retarget(base + "two.m3u")
        run(cache, list, clock: clock, from: 3.25, to: 6)
        #expect(list.waiting == (base + "two.m3u", base + "one.m3u") && list.heldSet()?.id == held.id, "\(list.waiting)")
        let since = WallTime(nanoseconds: 1_790_000_007_000_000_000)
        #expect(list.takeHeld(held.id, since: since))
        #expect(names(list) == ["a.mp4"] && list.currentSet.id == held.id && list.currentSet.since == since)
        #expect(RemotePlaylist.readWallFile(list.copyFile(for: base + "one.m3u") + ".wall", id: held.id) == since)
        // The list named is taken up next, as a new set held for the wall.
        #expect(list.url == base + "one.m3u" && list.waiting.target == base + "two.m3u")
        run(cache, list, clock: clock, from: 6.25, to: 10)
        #expect(list.heldSet()?.id == WallSetMessage.setID(of: Data("b.mp4\n".utf8)) && list.waiting.candidate == base + "two.m3u")
    }
}
