import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless, real clock) playing a remote M3U (`{"m3u": "http://..."}`) through
/// `network.cache`, served on loopback by the test: its entries play from the cache in order and
/// gaplessly; an entry whose SHA-256 tag does not match, one on a host not allowed and a `file:`
/// one never play (the host not allowed is never asked); a changed list plays from an item
/// boundary once all of its new set is downloaded; restarted with the server gone, the last
/// good set plays.
@Suite(.serialized) struct RemotePlaylistRunTests {
    typealias Running = MarqueeProcessTests.Running
    let cacheRun = RemoteCacheRunTests()

    func sha256(_ path: String) throws -> String {
        let result = try Command.run("/usr/bin/sha256sum", [path], timeout: 30)
        return String(result.text.prefix(64))
    }

    /// A clip of `frames` frames at 30 fps, copied to `path` (told apart in the trace by its length).
    func clip(_ frames: Int, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: Double(frames) / 30, fps: 30), toPath: path)
    }

    /// Which clip a run is, by its last frame's time; nil: none of `lengths`.
    func clipLength(_ end: Double, _ lengths: [Int]) -> Int? {
        lengths.first { end > Double($0 - 1) / 30 - 0.045 && end < Double($0 - 1) / 30 + 0.01 }
    }

    @Test func aRemoteM3UPlaysFromTheCacheSwitchesWholeSetsAndOutlivesItsServer() throws {
        let served = try cacheRun.folder("m3u-served")
        let cache = try cacheRun.folder("m3u-cache")
        let first = [21, 24, 27, 30]
        for (i, n) in first.enumerated() { try clip(n, to: "\(served)/c\(i).mp4") }
        // A good clip whose tag names another file's hash: never to be played.
        try clip(45, to: "\(served)/bad.mp4")
        let goodHash = try sha256("\(served)/c1.mp4")
        let wrongHash = try sha256("\(served)/c0.mp4")
        let server = try LoopbackServer("serve", [served])
        // Another host, not in network.allow: it must never be asked.
        let other = try LoopbackServer("serve", [served], address: "127.0.0.2")
        try """
            #EXTM3U
            c0.mp4
            #EXT-X-MARQUEE-SHA256:\(goodHash)
            c1.mp4
            #EXT-X-MARQUEE-SHA256:\(wrongHash)
            bad.mp4
            #EXT-X-MARQUEE-SHA256:not-a-hash
            /v/c2.mp4
            http://127.0.0.2:\(other.port)/v/c0.mp4
            file:///etc/hostname
            c3.mp4
            """.write(toFile: "\(served)/list.m3u", atomically: true, encoding: .utf8)
        let list = "\(server.url)/v/list.m3u"
        let configText = """
            {"playlist": {"m3u": "\(list)"}, "loop": true,
             "network": {"allow": ["http://127.0.0.1"], "cache": {"folder": "\(cache)", "refresh": 2}}}
            """
        let config = try TestConfig.write(configText, named: "m3u-run-\(UUID().uuidString.prefix(8)).json")
        let running = try Running(config: config, clock: "real", exitAfter: 90)
        let client = try running.connect()
        func reasons() -> [String] {
            client.request(["get_property", "health"], id: 1)?["data"]?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        func clips(after t: Double = -1) -> [Int?] {
            cacheRun.runs(cacheRun.frames(running)).filter { $0.t > t }.dropLast().map { clipLength($0.end, first + [36, 39, 45]) }
        }
        // Two whole passes of the four good clips, in order.
        #expect(cacheRun.waitFor(within: 40) { clips().count >= 9 }, "log:\n\(running.log)")
        let health = reasons()
        #expect(health.contains { $0.contains("/v/bad.mp4") && $0.contains("SHA-256 mismatch: expected \(wrongHash), got ") },
                "health: \(health)")

        // The list changes to a new set; one of its clips is not on the server yet.
        try "c4.mp4\nc5.mp4\n".write(toFile: "\(served)/list.m3u", atomically: true, encoding: .utf8)
        try clip(36, to: "\(served)/c4.mp4")
        #expect(cacheRun.waitFor(within: 20) { server.events.contains { $0.hasPrefix("GET /v/c5.mp4") } }, "c5 asked for: \(server.events)")
        Thread.sleep(forTimeInterval: 1.2)
        let addedAt = cacheRun.frames(running).last?.t ?? 0
        try clip(39, to: "\(served)/c5.mp4")
        #expect(cacheRun.waitFor(within: 30) { clips(after: addedAt).filter { $0 == 39 }.count >= 2 }, "log:\n\(running.log)")
        _ = client.request(["quit"], id: 9)
        #expect(running.wait(timeout: 20) == 0, "\(running.log)")

        let shown = cacheRun.frames(running)
        let all = cacheRun.runs(shown)
        let start = try #require(all.firstIndex { _ in true })
        let runs = Array(all[start...].dropLast())
        let lengths = runs.map { clipLength($0.end, first + [36, 39, 45]) }
        // Never the clip whose hash did not match, never one cut short.
        #expect(!lengths.contains(45) && !lengths.contains(nil), "runs: \(runs.map { "\($0.item):\($0.count):\($0.end)" })")
        // The first set in order, then (once) the switch, then the new set in order.
        let switchAt = try #require(lengths.firstIndex { $0 == 36 || $0 == 39 }, "the new set never played: \(lengths)")
        let before = lengths[..<switchAt].compactMap { $0 }
        let after = lengths[switchAt...].compactMap { $0 }
        #expect(before.enumerated().allSatisfy { $0.element == first[($0.offset + first.firstIndex(of: before[0])!) % 4] }, "first set: \(before)")
        #expect(after.enumerated().allSatisfy { $0.element == [36, 39][$0.offset % 2] }, "new set: \(after)")
        // Only once all of it was on the server: not one frame of it before c5 was added.
        #expect(runs[switchAt].t > addedAt, "the new set began at \(runs[switchAt].t) s, c5 added at \(addedAt) s")
        // Gapless throughout, the switch included.
        let holds = zip(shown, shown.dropFirst()).map { $1.t - $0.t }
        let freeze = holds.max() ?? 0
        #expect(freeze < 0.2, "the picture stood still for \(freeze) s")
        #expect(running.log.contains("SHA-256 mismatch") && running.log.contains("/v/bad.mp4"), "\(running.log)")
        #expect(running.log.contains("hash tag ignored") && running.log.contains("not-a-hash"), "\(running.log)")
        #expect(running.log.contains("127.0.0.2") && running.log.contains("file:///etc/hostname"), "the skipped entries are named: \(running.log)")
        #expect(!other.settledEvents().contains { $0.hasPrefix("GET") }, "the host not allowed was asked: \(other.events)")
        #expect(!server.events.contains { $0.contains("etc/hostname") })
        print("remote M3U run: \(runs.count) clips played (\(before.count) of the first set, \(after.count) of the new); longest hold \(freeze) s; new set began \(runs[switchAt].t - addedAt) s after its last clip was served")

        // The server gone, marquee again: the last good set plays from the cache.
        server.kill()
        let started = Date()
        let again = try Running(config: config, clock: "real", exitAfter: 8)
        let againClient = try again.connect()
        #expect(cacheRun.waitFor(within: 20) { !cacheRun.frames(again).isEmpty }, "\(again.log)")
        let firstFrame = Date().timeIntervalSince(started)
        var offline: [String] = []
        #expect(cacheRun.waitFor(within: 6) {
            offline = againClient.request(["get_property", "health"], id: 2)?["data"]?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
            return offline.contains { $0.hasPrefix("remote playlist \(list): not refreshed for ") && $0.contains("last good since ") }
        }, "health with the server away: \(offline)")
        #expect(again.wait(timeout: 40) == 0, "\(again.log)")
        let replay = cacheRun.runs(cacheRun.frames(again)).dropLast().map { clipLength($0.end, first + [36, 39, 45]) }
        #expect(replay.count >= 3 && replay.allSatisfy { $0 == 36 || $0 == 39 }, "after a restart offline: \(replay); log:\n\(again.log)")
        // At once: no wait for the server (a loaded machine takes seconds to start marquee at all).
        #expect(firstFrame < 10, "first frame \(firstFrame) s after the start")
        #expect(again.log.contains("remote playlist not refreshed; its last good set plays"), "\(again.log)")
        print("remote M3U restart offline: first frame seen \(firstFrame) s after the start, \(replay.count) clips of the last good set")
    }
}
