import Foundation
@testable import Kiosk
@testable import Remote
@testable import RemoteTests
import Testing
import TestSupport

/// Issue 30's attacks on the HTTP API of a playing marquee (headless, real clock): each is refused
/// or bounded, and the trace of the whole run shows no gap, drop or repeat.
@Suite(.serialized) struct RemoteSecurityTests {
    typealias Player = RemoteProcessTests.Player

    @Test func attacksAreRefusedOrBoundedWhilePlaybackGoesOn() throws {
        let player = try Player(seconds: 120)
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        let view = Player.viewToken

        // No token, a wrong one, or a view token where control is needed.
        for route in RemoteAPI.routes where route.role != nil {
            let path = route.pattern.replacingOccurrences(of: "{name}", with: "x.mp4")
            #expect(player.ask(route.method, path, token: nil, body: [])?.status == 401, "\(route.method) \(path)")
            #expect(player.ask(route.method, path, token: "guessed", body: [])?.status == 401, "\(route.method) \(path)")
            if route.role == .control {
                #expect(player.ask(route.method, path, token: view, body: Array("{}".utf8))?.status == 403, "\(route.method) \(path) with a view token")
            }
        }
        #expect(player.ask("POST", "/api/v1/command", token: view, body: Array(#"{"command":["set_property","pause",true]}"#.utf8))?.status == 403)

        // A cross-site POST and a rebinding Host, with a valid control token.
        let pause = Array(#"{"command":["set_property","pause",true]}"#.utf8)
        #expect(player.ask("POST", "/api/v1/command", body: pause, headers: ["Origin": "http://evil.example"])?.status == 403)
        #expect(player.ask("POST", "/api/v1/command", body: pause, headers: ["Sec-Fetch-Site": "cross-site"])?.status == 403)
        #expect(player.ask("GET", "/api/v1/status", headers: ["Host": "evil.example:\(player.port)"])?.status == 403)
        #expect(try player.json("/api/v1/properties/pause")["data"] == false, "nothing paused the player")

        // A 1 MB header.
        let huge = player.ask("GET", "/api/v1/status", headers: ["X-Big": String(repeating: "a", count: 1 << 20)], timeout: 10)?.status
        #expect(huge == nil || huge == 431 || huge == 413, "\(huge ?? 0)")

        // 100 idle connections from 127.0.0.1: at most maxConnectionsPerClient (8) stay open;
        // another address is answered meanwhile.
        do {
            let idle = (0..<100).compactMap { _ in RawConnection(port: player.port) }
            let closed = idle.filter { $0.closedByPeer(within: 0.05) }.count
            #expect(closed >= 90, "closed at once: \(closed) of \(idle.count)")
            #expect(player.ask("GET", "/api/v1/health", token: view, source: "127.0.0.2")?.status == 200)
        }  // the client closes them

        // Slow-loris: 20 connections trickling a header for 2 s.
        do {
            var alive = (0..<20).compactMap { _ in RawConnection(port: player.port, source: "127.0.0.3") }
            for i in 0..<40 {
                alive = alive.filter { $0.send(i == 0 ? "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " : "a") && !$0.closedByPeer(within: 0) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(alive.count <= 8, "slow connections still open: \(alive.count)")
            #expect(player.ask("GET", "/api/v1/health", token: view, source: "127.0.0.4")?.status == 200)
        }

        // An upload of 300 MB against http.uploads.maxBytes (1 MB): refused by its length before
        // a byte is read...
        let declared = try #require(RawConnection(port: player.port, source: "127.0.0.5"))
        declared.send("PUT /api/v1/media/huge.mp4 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Player.controlToken)\r\nContent-Length: \(300 << 20)\r\n\r\n")
        #expect(RawReply(declared.readAll(timeout: 5))?.status == 413)
        // ...and without a length (chunked), cut off once over it.
        let streamed = try #require(RawConnection(port: player.port, source: "127.0.0.5"))
        streamed.send("PUT /api/v1/media/huge2.mp4 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Player.controlToken)\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = Array("100000\r\n".utf8) + [UInt8](repeating: 0x41, count: 1 << 20) + Array("\r\n".utf8)
        var sent = 0
        let started = Date()
        while sent < 300, streamed.send(chunk), Date().timeIntervalSince(started) < 30 { sent += 1 }
        #expect(sent < 64, "MB sent before the server cut the upload off: \(sent)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: player.uploads).isEmpty, "no partial file is left")

        // Path traversal in upload names.
        for name in ["..", "%2e%2e", "..%2f..%2fevil.mp4", "%2e%2e%2fevil.mp4", ".evil.mp4", "a%2fevil.mp4", "evil%00.mp4", "%2fevil.mp4"] {
            let status = player.ask("PUT", "/api/v1/media/\(name)", body: Array("x".utf8), source: "127.0.0.6")?.status
            #expect(status == 400 || status == 404, "\(name): \(status ?? 0)")
        }
        #expect(!FileManager.default.fileExists(atPath: player.folder + "/evil.mp4"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: player.uploads).isEmpty)

        // Still playing and answering; then the whole trace.
        #expect(player.process.end == nil)
        #expect(player.ask("GET", "/api/v1/health", token: view)?.status == 200)
        #expect(player.waitForPlaying(0.5))
        _ = player.stop()
        let (_, report) = try Command.checkTrace(player.trace, ["--refresh", "60"])
        let figures = try #require(report["headless-0"])
        // A presentation thread the API blocked would hold a picture for a run of vsyncs (a
        // slow-loris holding it a second: 60). What a busy machine does to one frame with no HTTP at
        // all (a drop, one vsync late, an item's start slipping a vsync and the frames after it
        // with it) is not that: the figures are printed, and the longest hold is what is bounded.
        let frames = figures["frames"] as? Int ?? 0, late = figures["cadence_errors"] as? Int ?? -1
        let lost = ["gaps", "drops", "repeats"].map { figures[$0] as? Int ?? -1 }
        let vsyncs = try String(contentsOfFile: player.trace, encoding: .utf8).split(separator: "\n").compactMap { line -> Int? in
            guard let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  json["type"] as? String == "frame" else { return nil }
            return json["vsync"] as? Int
        }
        let longestHold = zip(vsyncs, vsyncs.dropFirst()).map { $1 - $0 }.max() ?? 0
        print("HTTP attacks during playback: gaps, drops, repeats \(lost), \(late) late, of \(frames) frames; longest hold \(longestHold) vsyncs (2 for each 30 fps frame at 60 Hz)")
        #expect(late >= 0 && lost.allSatisfy { $0 >= 0 })
        #expect(longestHold <= 4, "a picture held \(longestHold) vsyncs: \(figures["problems"] ?? "")")
        #expect(frames > 60, "\(figures)")
    }
}
