import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// marquee itself (headless) playing an HLS master playlist of two variants served on loopback:
/// the variant fetched is the one that fits `display.mode`, or the item's `live.maxHeight`.
@Suite(.serialized) struct LiveOptionsRunTests {
    @Test func theVariantFetchedFitsTheOutput() throws {
        let server = try LoopbackServer("serve", [try TestMedia.hlsVariants(seconds: 4)])
        // (display.mode, the item's live options, the variant folder fetched)
        // A wall's output shows part of a larger picture: the tallest plays there.
        let wall = #", "wall": {"canvas": {"width": 640, "height": 360}, "outputs": [{"name": "screen", "x": 0, "y": 0, "width": 320, "height": 180}]}"#
        for (mode, live, fetched) in [("320x180", "", "v1"), ("1280x720", "", "v0"), ("1280x720", #", "live": {"maxHeight": 200}"#, "v1"),
                                      ("320x180", "", "v0 wall")] {
            let inWall = fetched.hasSuffix(" wall")
            let fetched = String(fetched.prefix(2))
            let path = try TestConfig.write("""
                {"playlist": [{"uri": "\(server.url)/master.m3u8"\(live)}], "loop": false, "display": {"mode": "\(mode)"},
                 "network": {"allow": ["http://127.0.0.1"]}\(inWall ? wall : "")}
                """, named: "variants-\(UUID().uuidString.prefix(8)).json")
            let before = server.events.count  // after --check-config's own probe
            let running = try MarqueeProcessTests.Running(config: path, clock: "real", exitAfter: 5, extra: ["--mode", "\(mode)@60"])
            #expect(running.wait(timeout: 40) == 0, "\(running.log)")
            let requests = server.settledEvents().dropFirst(before)
            let segments = { (v: String) in requests.filter { $0.hasPrefix("GET /\(v)/seg") } }
            let count = { (v: String) in segments(v).count }
            let other = fetched == "v0" ? "v1" : "v0"
            // Each open probes every variant (its first segment); then only the chosen one is read.
            #expect(segments(fetched).contains("GET /\(fetched)/seg3.ts"), "\(mode)\(live): \(fetched) played to its end: \(Array(requests))")
            #expect(!segments(other).isEmpty && segments(other).allSatisfy { $0 == "GET /\(other)/seg0.ts" },
                    "\(mode)\(live): \(other) beyond the probe: \(Array(requests))")
            print("marquee, display \(mode)\(live)\(inWall ? " in a wall" : ""): segments fetched 360p (v0) \(count("v0")), 180p (v1) \(count("v1"))")
        }
    }

    /// Bad `live` values are refused by the schema and `--check-config` at their path, and by a
    /// reload, which keeps the playlist playing.
    @Test func badLiveOptionsAreRefusedByCheckConfigAndReload() throws {
        let allow = #""network": {"allow": ["rtsp://127.0.0.1", "http://127.0.0.1"]}"#
        for (item, path) in [(#"{"uri": "rtsp://127.0.0.1:1/cam", "live": {"transport": "quic"}}"#, "playlist[0].live.transport"),
                             (#"{"uri": "http://127.0.0.1:1/a.m3u8", "live": {"maxHeight": 0}}"#, "playlist[0].live.maxHeight"),
                             (#"{"uri": "rtsp://127.0.0.1:1/cam", "live": {"latency": 100}}"#, "playlist[0].live.latency")] {
            let file = try TestConfig.write(#"{"playlist": [\#(item)], \#(allow)}"#, named: "live-bad-\(UUID().uuidString.prefix(8)).json", .refused)
            let checked = try TestConfig.checkConfig(file)
            #expect(checked.errorText.contains(path), "\(checked.errorText)")
        }
        let clip = try TestMedia.clip(seconds: 2, fps: 30)
        let config = try TestConfig.write(#"{"playlist": [{"uri": "\#(clip)"}], \#(allow)}"#, named: "live-reload-\(UUID().uuidString.prefix(8)).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: "virtual", exitAfter: 600)
        let client = try running.connect()
        try TestConfig.write(#"{"playlist": [{"uri": "\#(clip)"}, {"uri": "rtsp://127.0.0.1:1/cam", "live": {"mode": "fast"}}], \#(allow)}"#, to: config, .refused)
        let refused = client.request(["reload"], id: 1)
        #expect(refused?["error"]?.stringValue == "error running command")
        #expect(refused?["detail"]?.stringValue?.contains("playlist[1].live.mode") == true, "\(String(describing: refused))")
        #expect(client.request(["get_property", "playlist-count"], id: 2)?["data"]?.numberValue == 1, "the old playlist plays on")
        _ = client.request(["quit"], id: 3)  // its reply may lose the race with the exit
        #expect(running.wait(timeout: 20) == 0)
    }
}
