import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless, real clock) playing remote files through `network.cache`, served on
/// loopback by the test: gapless from the cache, on through the server's absence, a changed file
/// swapped in at an item boundary, and cut or corrupt downloads never played.
@Suite(.serialized) struct RemoteCacheRunTests {
    typealias Running = MarqueeProcessTests.Running

    func folder(_ name: String) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func config(_ urls: [String], cache: String, refresh: Double) throws -> String {
        let playlist = urls.map { #"{"uri": "\#($0)"}"# }.joined(separator: ", ")
        return try TestConfig.write("""
            {"playlist": [\(playlist)], "loop": true,
             "network": {"allow": ["http://127.0.0.1"], "cache": {"folder": "\(cache)", "refresh": \(refresh)}}}
            """, named: "cache-run-\(UUID().uuidString.prefix(8)).json")
    }

    /// The trace's frames: (time, item, pts).
    func frames(_ running: Running) -> [(t: Double, item: Int, pts: Double)] {
        ((try? running.traceLines()) ?? []).filter { $0["type"] as? String == "frame" }.compactMap { line in
            guard let t = line["t"] as? Double, let item = line["item"] as? Int, let pts = line["pts"] as? Double else { return nil }
            return (t, item, pts)
        }
    }

    /// Runs of consecutive frames of one item: (item, frames, first time, last pts). The last
    /// pts tells the clips apart even where a loaded machine drops a frame.
    func runs(_ frames: [(t: Double, item: Int, pts: Double)]) -> [(item: Int, count: Int, t: Double, end: Double)] {
        var out: [(item: Int, count: Int, t: Double, end: Double)] = []
        for f in frames {
            if let last = out.last, last.item == f.item {
                out[out.count - 1].count += 1
                out[out.count - 1].end = max(last.end, f.pts)
            } else {
                out.append((f.item, 1, f.t, f.pts))
            }
        }
        return out
    }

    func waitFor(within seconds: Double, _ test: () -> Bool) -> Bool {
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if test() { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }

    /// Five remote clips (21 to 33 frames each, told apart by their length) play gaplessly from
    /// the cache; the server is killed and three more passes play as before, health saying the
    /// copies are stale; it comes back with clip 2 changed (60 frames), which plays from an item
    /// boundary on. `MARQUEE_CACHE_ABSENCE=600` keeps the server away ten minutes (issue 28's
    /// figure; `make test` keeps it to the three passes).
    @Test func fiveRemoteFilesPlayGaplesslyOutliveTheirServerAndTakeAChange() throws {
        let absence = ProcessInfo.processInfo.environment["MARQUEE_CACHE_ABSENCE"].flatMap(Double.init).map { min(max($0, 0), 3600) } ?? 0
        let served = try folder("served")
        let cache = try folder("cache")
        let lengths = [21, 24, 27, 30, 33]
        for (i, n) in lengths.enumerated() {
            try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: Double(n) / 30, fps: 30), toPath: "\(served)/c\(i).mp4")
        }
        var server: LoopbackServer? = try LoopbackServer("serve", [served])
        let port = server!.port
        let urls = (0..<5).map { "http://127.0.0.1:\(port)/c\($0).mp4" }
        let running = try Running(config: try config(urls, cache: cache, refresh: 1), clock: "real", exitAfter: 50 + absence)
        let client = try running.connect()
        func reasons() -> [String] {
            client.request(["get_property", "health"], id: 1)?["data"]?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        // A whole pass from the cache (every clip has been downloaded and played).
        #expect(waitFor(within: 20) { Set(runs(frames(running)).dropLast().map(\.item)) == Set(0..<5) }, "log:\n\(running.log)")
        let served0 = server!.events.filter { $0.hasPrefix("GET") }.count
        server?.kill()
        server = nil
        let killedAt = frames(running).last?.t ?? 0
        // Three passes (about 4.5 s each) with the server away, and at least `absence` seconds
        // (slept through: reading the growing trace meanwhile would load the machine).
        Thread.sleep(forTimeInterval: absence)
        #expect(waitFor(within: 25) { runs(frames(running)).filter { $0.t > killedAt && $0.item == 4 }.count >= 3 }, "log:\n\(running.log)")
        let stale = reasons().filter { $0.contains("not refreshed") }
        #expect(stale.count >= 1, "health while the server is away: \(reasons())")
        // Back, with clip 2 changed: 60 frames instead of 27.
        try FileManager.default.removeItem(atPath: "\(served)/c2.mp4")
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 2, fps: 30), toPath: "\(served)/c2.mp4")
        server = try LoopbackServer("serve", [served], port: port)
        let backAt = frames(running).last?.t ?? 0
        #expect(waitFor(within: 20) { runs(frames(running)).contains { $0.item == 2 && $0.end > 1.5 && $0.t > backAt } }, "log:\n\(running.log)")
        // One more pass after the change, then quit.
        #expect(waitFor(within: 15) { runs(frames(running)).filter { $0.t > backAt && $0.item == 4 }.count >= 2 })
        _ = client.request(["quit"], id: 9)
        #expect(running.wait(timeout: 20) == 0, "\(running.log)")

        let shown = frames(running)
        let all = runs(shown)
        let first = try #require(all.firstIndex { $0.item == 0 })
        // Gapless: after the first pass begins, no picture stood still longer than a late frame.
        let steady = shown.drop { $0.t < all[first].t }
        let holds = zip(steady, steady.dropFirst()).map { (hold: $1.t - $0.t, from: $0, to: $1) }
        let worst = try #require(holds.max { $0.hold < $1.hold })
        let freeze = worst.hold
        // A 30 fps frame lasts 0.033 s; the bound leaves room for a late frame on a loaded machine.
        #expect(freeze < 0.2, "the picture stood still for \(freeze) s at \(worst.from.t) s (item \(worst.from.item) pts \(worst.from.pts) to item \(worst.to.item) pts \(worst.to.pts)); server killed at \(killedAt) s, back at \(backAt) s")
        // Whole passes in order, each clip whole: the first copies, then clip 2's new one.
        let passes = Array(all[first...].dropLast())
        var sawNew = false
        for (k, run) in passes.enumerated() {
            #expect(run.item == k % 5, "run \(k): item \(run.item); runs: \(passes.map { "\($0.item):\($0.count):\($0.end)" })")
            if run.item == 2 && run.end > 1.9 { sawNew = true; continue }
            // The clip's last frame (n - 1) / 30 s is shown: each clip whole, the old copy of
            // clip 2 never again once the new one played.
            let last = Double(lengths[run.item] - 1) / 30
            // Each clip to its end; a loaded machine may drop its last frame as late.
            #expect(run.end > last - 0.045 && run.end < last + 0.01 && !(run.item == 2 && sawNew),
                    "run \(k): item \(run.item) ended at \(run.end) s; runs: \(passes.map { "\($0.item):\($0.count):\($0.end)" })")
        }
        #expect(sawNew)
        // Three whole passes while the server was away (each ends with clip 4).
        #expect(passes.filter { $0.t > killedAt && $0.t <= backAt && $0.item == 4 }.count >= 3, "passes while the server was away")
        print("remote cache run: \(passes.count) clips played, \(passes.filter { $0.t > killedAt && $0.t < backAt }.count) with the server away for \((backAt - killedAt).formatted(decimals: 1)) s; longest hold \(freeze) s; \(served0) requests before the kill")
    }

    /// A body cut short (the whole length announced, half sent) and a file of garbage are never
    /// played: only the good clip is shown, and the cache keeps only its copy.
    @Test func cutAndGarbageDownloadsNeverPlay() throws {
        let served = try folder("served-bad")
        let cache = try folder("cache-bad")
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 1, fps: 30), toPath: "\(served)/good.mp4")
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 2, fps: 30, width: 640, height: 360), toPath: "\(served)/cut.mp4")
        var garbage = [UInt8](repeating: 0, count: 200_000)
        for i in garbage.indices { garbage[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
        try Data(garbage).write(to: URL(fileURLWithPath: "\(served)/garbage.mp4"))
        let server = try LoopbackServer("serve", [served])
        let urls = ["good.mp4", "cut/cut.mp4", "garbage.mp4"].map { "\(server.url)/\($0)" }
        let running = try Running(config: try config(urls, cache: cache, refresh: 1), clock: "real", exitAfter: 8)
        #expect(running.wait(timeout: 40) == 0, "\(running.log)")
        let shown = frames(running)
        #expect(Set(shown.map(\.item)) == [0], "items shown: \(Set(shown.map(\.item)))")
        #expect(shown.count >= 60, "frames of the good clip: \(shown.count)")
        #expect(running.log.contains("the body ended after"), "\(running.log)")
        // Passed over at its turn, named as the playlist has it: its number and its whole URL.
        #expect(running.log.contains("msg=\"cannot play item; skipped\" item=3 uri=\(urls[2])"), "\(running.log)")
        #expect(server.events.filter { $0.contains("/cut/cut.mp4") }.count >= 2, "the cut file was tried again: \(server.events)")
        #expect(server.events.filter { $0.contains("/garbage.mp4") }.count >= 2, "the garbage was tried again: \(server.events)")
        // A download cut by the exit may leave its .part file (resumed, or removed, at the next
        // start); the copy's validators are kept beside it (.meta).
        let names = try FileManager.default.contentsOfDirectory(atPath: cache)
        let kept = names.filter { !$0.hasSuffix(".part") && !$0.hasSuffix(".meta") }
        #expect(kept.count == 1 && kept[0].hasSuffix(".mp4") && names.contains(kept[0] + ".meta"), "cache: \(names)")
    }

    /// With a server that keeps validators and ranges (netfixture `/v/`): each check of an
    /// unchanged copy is answered 304 with no body, and a first download cut at half goes on from
    /// the half (Range, If-Range): the server sends each file's bytes once in all, and both play.
    @Test func checksCostNoBodyAndACutDownloadResumes() throws {
        let served = try folder("served-v")
        let cache = try folder("cache-v")
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 1, fps: 30), toPath: "\(served)/a.mp4")
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 2, fps: 30, width: 640, height: 360), toPath: "\(served)/b.mp4")
        _ = FileManager.default.createFile(atPath: "\(served)/b.mp4.cut", contents: nil)
        let sizes = try ["a.mp4", "b.mp4"].map { try #require(FileManager.default.attributesOfItem(atPath: "\(served)/\($0)")[.size] as? NSNumber).intValue }
        let server = try LoopbackServer("serve", [served])
        let urls = ["a.mp4", "b.mp4"].map { "\(server.url)/v/\($0)" }
        let running = try Running(config: try config(urls, cache: cache, refresh: 1), clock: "real", exitAfter: 8)
        #expect(running.wait(timeout: 40) == 0, "\(running.log)")
        #expect(Set(frames(running).map(\.item)) == [0, 1], "both clips play")
        for (name, size) in zip(["a.mp4", "b.mp4"], sizes) {
            // The cache's requests (libcurl sends no User-Agent); --check-config's probes (TestConfig.write,
            // through FFmpeg: Lavf) apart.
            let all = server.settledEvents().filter { $0.hasPrefix("GET /v/\(name) status=") }
            let answers = all.filter { $0.hasSuffix(" agent=-") }
            let direct = all.count - answers.count
            let statuses = answers.compactMap { $0.split(separator: " ").first { $0.hasPrefix("status=") }?.dropFirst(7) }.map(String.init)
            let sent = answers.compactMap { $0.split(separator: " ").first { $0.hasPrefix("sent=") }.flatMap { Int($0.dropFirst(5)) } }
            let checks = statuses.filter { $0 == "304" }.count
            #expect(checks >= 3, "\(name): \(answers)")
            #expect(sent.reduce(0, +) == size, "\(name): \(sent.reduce(0, +)) bytes sent for \(size): \(answers)")
            if name == "b.mp4" { #expect(Array(statuses.prefix(2)) == ["200", "206"], "\(answers)") }
            print("cache with validators, \(name) (\(size) bytes): \(statuses.count) requests (\(statuses.joined(separator: ","))), \(sent.reduce(0, +)) bytes sent; \(direct) more by --check-config's probe")
        }
    }
}
