import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless, real clock) with network items served on loopback by the test.
@Suite(.serialized) struct NetworkRunTests {
    func config(_ items: [String], allow: [String], extra: String = "") throws -> String {
        let path = TestMedia.folder + "/net-config-\(UUID().uuidString).json"
        let playlist = items.map { #"{"uri": "\#($0)"}"# }.joined(separator: ", ")
        let list = allow.map { #""\#($0)""# }.joined(separator: ", ")
        try TestConfig.write(#"{"playlist": [\#(playlist)], "loop": true, "network": {"allow": [\#(list)]\#(extra)}}"#, to: path)
        return path
    }

    /// Frames of the trace: (presentation time in seconds, item index).
    func frames(_ running: MarqueeProcessTests.Running) throws -> [(t: Double, item: Int)] {
        try running.traceLines().filter { $0["type"] as? String == "frame" }.compactMap { line in
            guard let t = line["t"] as? Double, let item = line["item"] as? Int else { return nil }
            return (t, item)
        }
    }

    /// The longest stretch with no new picture, in seconds.
    func longestFreeze(_ frames: [(t: Double, item: Int)]) -> Double {
        zip(frames, frames.dropFirst()).map { $1.t - $0.t }.max() ?? .infinity
    }

    /// A server that accepts and never answers, between two clips: the picture never freezes
    /// (the second clip follows the first on time, the hung item passed over) while the hung
    /// item's open runs to its limit.
    @Test func aSourceThatHangsOnOpenFreezesNoPicture() throws {
        let clip = try TestMedia.clip(seconds: 2, fps: 30)
        let hung = try LoopbackServer("hang", [])
        let path = try config([clip, "\(hung.url)/live.ts", clip], allow: ["http://127.0.0.1"], extra: #", "openTimeout": 3"#)
        let running = try MarqueeProcessTests.Running(config: path, clock: "real", exitAfter: 7)
        #expect(running.wait(timeout: 40) == 0, "\(running.log)")
        let shown = try frames(running)
        #expect(Set(shown.map(\.item)) == [0, 2], "items shown: \(Set(shown.map(\.item)))")
        #expect(shown.count >= 120, "frames: \(shown.count) (both clips whole: 120)")
        let freeze = longestFreeze(shown)
        // A 30 fps frame lasts 0.033 s; the bound leaves room for a late frame on a loaded
        // machine, far below the 3 s open limit the picture once waited for.
        #expect(freeze < 0.2, "the picture stood still for \(freeze) s; log:\n\(running.log)")
        #expect(running.log.contains("passed over"), "\(running.log)")
        #expect(hung.events.count >= 1, "the hung source was tried")
        #expect(running.log.contains("timed out"), "\(running.log)")
    }

    /// A live HLS item alone plays for ever: its server killed and restarted, health says
    /// `degraded` naming the source while it is down and `ok` once it is back, and the picture
    /// moves again within 3 s of the server's return.
    @Test func aLiveItemAloneComesBackAndHealthSaysSo() throws {
        let folder = TestMedia.folder + "/live-run-\(UUID().uuidString)"
        let encoder = try LiveHLS(folder: folder, seconds: 60)
        defer { withExtendedLifetime(encoder) {} }  // writing until the test ends
        var server: LoopbackServer? = try LoopbackServer("serve", [folder])
        let port = server!.port
        let url = "http://127.0.0.1:\(port)/index.m3u8"
        let path = try config([url], allow: ["http://127.0.0.1"])
        let running = try MarqueeProcessTests.Running(config: path, clock: "real", exitAfter: 60)
        let client = try running.connect()
        func health() -> (status: String, reasons: [String]) {
            let value = client.request(["get_property", "health"], id: 1)?["data"]
            return (value?["status"]?.stringValue ?? "none", value?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        func waitFor(_ what: String, within seconds: Double, _ test: () -> Bool) -> Double? {
            let start = Date()
            while Date().timeIntervalSince(start) < seconds {
                if test() { return Date().timeIntervalSince(start) }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return nil
        }
        func position() -> Double { client.request(["get_property", "time-pos"], id: 2)?["data"]?.numberValue ?? 0 }
        // Playing, not just started: health is ok before the first picture, and a server killed
        // while the stream still opens is a failed item, not a live source that went down.
        // (Frames dropped under load make health degraded, not failed, so it is not asked.)
        let playing = waitFor("playing", within: 20) { position() > 1 }
        #expect(playing != nil, "health: \(health()), time-pos \(position()); log:\n\(running.log)")
        server?.kill()
        server = nil
        let noticed = waitFor("degraded", within: 10) { health().reasons.contains { $0.hasPrefix("live source \(url): down for") } }
        #expect(noticed != nil, "health while the server is down: \(health())")
        Thread.sleep(forTimeInterval: 1)
        server = try LoopbackServer("serve", [folder], port: port)
        let back = waitFor("ok", within: 10) { !health().reasons.contains { $0.hasPrefix("live source") } }
        #expect(back != nil && back! < 3, "back after \(back.map { "\($0)" } ?? "never") s: \(health())")
        print("live item in marquee: outage noticed after \(noticed ?? -1) s, health back \(back ?? -1) s after the server's return")
        _ = client.request(["quit"], id: 9)
        _ = running.wait(timeout: 20)
        #expect(running.log.contains("live source down; reopening") && running.log.contains("live source back"), "\(running.log)")
    }
}
