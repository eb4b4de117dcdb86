import Foundation
@testable import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// Issue 28's wall figure: two marquee processes (two nodes of one clock-synced wall, headless,
/// cue sockets on loopback) play a remote M3U served on loopback by the test. The list changes;
/// one node gets the new set seconds after the other. Neither switches before both have it; then
/// both show the new set's first frame on the same vsync of the wall's timeline, with no hold.
@Suite(.serialized) struct WallSetProcessTests {
    typealias Running = MarqueeProcessTests.Running
    let cacheRun = RemoteCacheRunTests()
    let playlistRun = RemotePlaylistRunTests()

    struct Frame { let t: Double; let wall: Double; let vsync: Int; let name: String; let pts: Double }
    func frames(_ running: Running) -> [Frame] {
        ((try? running.traceLines()) ?? []).filter { $0["type"] as? String == "frame" }.compactMap { line in
            guard let t = line["t"] as? Double, let wall = line["wall"] as? Double, let vsync = line["vsync"] as? Int,
                  let uri = line["uri"] as? String, let pts = line["pts"] as? Double else { return nil }
            return Frame(t: t, wall: wall, vsync: vsync, name: (uri as NSString).lastPathComponent, pts: pts)
        }
    }

    /// The `field=` values of the log lines with `message`.
    func values(_ log: String, _ message: String, _ field: String) -> [String] {
        log.split(separator: "\n").filter { $0.contains("msg=\"\(message)\"") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("\(field)=") }.map { String($0.dropFirst(field.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
    }

    @Test func bothNodesSwitchToANewSetOnTheSameVsyncOnceBothHaveIt() throws {
        let interval = 1.0 / 60, slack = 0.0005
        // Each node's server folder: the late node's gets the new set `delay` seconds after the other's.
        let (early, late) = (try cacheRun.folder("wallset-early"), try cacheRun.folder("wallset-late"))
        let delay = 5.0
        let first = [("a0.mp4", 45), ("a1.mp4", 51)], second = [("n0.mp4", 36), ("n1.mp4", 42)]
        for (name, frames) in first + second { try playlistRun.clip(frames, to: "\(early)/\(name)") }
        for (name, _) in first { try FileManager.default.copyItem(atPath: "\(early)/\(name)", toPath: "\(late)/\(name)") }
        func list(_ set: [(String, Int)]) -> String { "#EXTM3U\n" + set.map { $0.0 + "\n" }.joined() }
        for folder in [early, late] { try list(first).write(toFile: "\(folder)/list.m3u", atomically: true, encoding: .utf8) }
        let (earlyServer, lateServer) = (try LoopbackServer("serve", [early]), try LoopbackServer("serve", [late]))
        let helper = TriggerProcessTests()
        let (leftPort, rightPort) = (try helper.freePort(), try helper.freePort())
        // Real nodes run one config; here the two differ only in their cache folder and in the
        // list's server (the late node's is a second server on another port, whose folder gets
        // the new set later): the list's bytes, and so the set's id, are the same on both.
        func config(_ node: String, server: LoopbackServer) throws -> String {
            let cache = try cacheRun.folder("wallset-cache-\(node)")
            return try TestConfig.write(#"""
                {"playlist": {"m3u": "\#(server.url)/v/list.m3u"}, "loop": true,
                 "network": {"allow": ["http://127.0.0.1"], "cache": {"folder": "\#(cache)", "refresh": 1}},
                 "wall": {"canvas": {"width": 640, "height": 180},
                          "outputs": [{"name": "left", "node": "left", "x": 0, "y": 0, "width": 320, "height": 180},
                                      {"name": "right", "node": "right", "x": 320, "y": 0, "width": 320, "height": 180}],
                          "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z",
                                   "cue": {"nodes": {"left": "127.0.0.1:\#(leftPort)", "right": "127.0.0.1:\#(rightPort)"}}}}}
                """#, named: "wall-set-\(node)-\(UUID().uuidString.prefix(8)).json")
        }
        let rightConfig = try config("right", server: lateServer)
        let left = try Running(config: try config("left", server: earlyServer), clock: "real", exitAfter: 55, extra: ["--node", "left"])
        let right = try Running(config: rightConfig, clock: "real", exitAfter: 55, extra: ["--node", "right"])
        defer { for running in [left, right] where running.process.isRunning { kill(running.process.processIdentifier, SIGKILL) } }
        // The first set, agreed on too: both play it.
        #expect(cacheRun.waitFor(within: 20) { [left, right].allSatisfy { r in frames(r).contains { $0.name == "a1.mp4" } } },
                "left:\n\(left.log)\nright:\n\(right.log)")

        // The list changes: the left node's server has it now, the right node's `delay` later.
        try list(second).write(toFile: "\(early)/list.m3u", atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: delay)
        for (name, _) in second { try FileManager.default.copyItem(atPath: "\(early)/\(name)", toPath: "\(late)/\(name)") }
        try list(second).write(toFile: "\(late)/list.m3u", atomically: true, encoding: .utf8)
        let lateServedAt = Date().timeIntervalSince1970
        #expect(cacheRun.waitFor(within: 20) { [left, right].allSatisfy { r in frames(r).contains { $0.name == "n1.mp4" } } },
                "left:\n\(left.log)\nright:\n\(right.log)")
        Thread.sleep(forTimeInterval: 1)
        // The right node restarts: it plays the new set at once, on its switch time, as the left does.
        kill(right.process.processIdentifier, SIGTERM)
        #expect(right.wait(timeout: 20) == 0, "right:\n\(right.log)")
        let again = try Running(config: rightConfig, clock: "real", exitAfter: 30, extra: ["--node", "right"])
        defer { if again.process.isRunning { kill(again.process.processIdentifier, SIGKILL) } }
        #expect(cacheRun.waitFor(within: 20) { (frames(again).last?.wall ?? 0) - (frames(again).first?.wall ?? .infinity) > 4 }, "\(again.log)")
        for running in [left, again] { kill(running.process.processIdentifier, SIGTERM) }
        #expect(left.wait(timeout: 20) == 0 && again.wait(timeout: 20) == 0, "left:\n\(left.log)\nright again:\n\(again.log)")

        // Both agreed on one switch time for the new set (the second agreement of each).
        let (leftAgreed, rightAgreed) = (values(left.log, "wall set agreed", "switch_at"), values(right.log, "wall set agreed", "switch_at"))
        #expect(leftAgreed.count == 2 && leftAgreed == rightAgreed, "left \(leftAgreed), right \(rightAgreed)")
        let switchAt = try #require(leftAgreed.last.flatMap(Double.init))
        // The late node's ready time for the new set: the switch is the margin (3 s) past it, rounded up to a second.
        let lateReady = try #require(values(right.log, "wall set whole here; waiting for the wall's other nodes", "ready_at").last.flatMap(Double.init))
        let earlyReady = try #require(values(left.log, "wall set whole here; waiting for the wall's other nodes", "ready_at").last.flatMap(Double.init))
        #expect(lateReady > lateServedAt - 0.5 && lateReady > earlyReady + delay - 1.5, "ready: left \(earlyReady), right \(lateReady), served late at \(lateServedAt)")
        #expect(switchAt >= lateReady + 3 && switchAt < lateReady + 4, "switch \(switchAt), late node ready \(lateReady)")
        #expect(!left.log.contains("late=yes") && !right.log.contains("late=yes"), "a node switched past the agreed time")

        // Each node's first frame of the new set, and the last frame before it.
        var figures: [String] = [], starts: [Frame] = []
        for (name, running) in [("left", left), ("right", right)] {
            let shown = frames(running)
            guard let i = shown.firstIndex(where: { $0.name == "n0.mp4" }) else {
                Issue.record("\(name): the new set never showed")
                continue
            }
            let start = shown[i]
            starts.append(start)
            #expect(start.pts == 0, "\(name) starts the new set on its first frame")
            // On the first vsync at or after the switch time.
            #expect(start.wall >= switchAt - slack && start.wall < switchAt + interval + slack,
                    "\(name): first frame at \(start.wall), switch at \(switchAt)")
            // Not one frame of the new set before the late node's server had it.
            #expect(start.wall > lateServedAt, "\(name): new set at \(start.wall), served to the late node at \(lateServedAt)")
            // No hold: around the switch, a new picture every frame (30 fps on 60 Hz), give or take one vsync.
            let around = shown.filter { abs($0.wall - switchAt) < 1 }
            let hold = zip(around, around.dropFirst()).map { $1.wall - $0.wall }.max() ?? 0
            #expect(hold < 1.0 / 30 + interval + slack, "\(name): the picture stood still \(hold) s around the switch")
            #expect(!shown[i...].contains { $0.name.hasPrefix("a") }, "\(name): the old set came back")
            figures.append("\(name): first frame of the new set at wall \(start.wall.formatted(decimals: 6)) (vsync \(start.vsync)), +\(((start.wall - switchAt) * 1000).formatted(decimals: 2)) ms past the switch time; longest hold around it \((hold * 1000).formatted(decimals: 1)) ms")
        }
        if starts.count == 2 {
            let apart = abs(starts[0].wall - starts[1].wall)
            #expect(apart < interval + slack, "the nodes showed the new set \(apart) s apart")
            figures.append("apart \((apart * 1000).formatted(decimals: 2)) ms; switch at \(switchAt.formatted(decimals: 3)), \((switchAt - lateServedAt).formatted(decimals: 2)) s after the late node's server had the new set; ready: left \(earlyReady.formatted(decimals: 3)), right \(lateReady.formatted(decimals: 3)) (\((lateReady - earlyReady).formatted(decimals: 2)) s later, \((lateReady - lateServedAt).formatted(decimals: 2)) s after its server had it)")
        }
        // The restarted node: the same frame as the left node at the same wall time (within a
        // vsync), once it is on the clock (its first second left out).
        let leftShown = frames(left), againShown = frames(again)
        let restartedAt = againShown.first?.wall ?? 0
        var compared = 0, differing: [String] = []
        for frame in againShown where frame.wall > restartedAt + 1 {
            guard let shown = leftShown.last(where: { $0.wall <= frame.wall + interval / 2 }), frame.wall - shown.wall < 0.1 else { continue }
            compared += 1
            if shown.name != frame.name || abs(shown.pts - frame.pts) > 1.0 / 30 + slack {
                differing.append("\(frame.wall): right \(frame.name) \(frame.pts), left \(shown.name) \(shown.pts)")
            }
        }
        #expect(compared > 60 && differing.count * 20 <= compared, "\(differing.count) of \(compared) differ: \(differing.prefix(10))\n\(again.log)")
        #expect(again.log.contains("wall_since=\(leftAgreed.last ?? "-")") || again.log.contains("wall_since=\"\(leftAgreed.last ?? "-")"), "\(again.log)")
        #expect(!againShown.contains { $0.name.hasPrefix("a") }, "the restarted node played the old set")
        figures.append("right restarted: \(compared - differing.count) of \(compared) frames the same as the left node's at the same wall time (within a frame)")
        print("wall set switch, two nodes, 60 Hz, the right node's new set \(delay) s late:\n" + figures.joined(separator: "\n"))
        earlyServer.kill()
        lateServer.kill()
    }
}
