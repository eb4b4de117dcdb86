import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Issue 26: start never depends on content being there. An empty or missing folder, an M3U file
/// that cannot be read, a schedule whose entries have nothing to play: marquee starts, sends
/// READY=1, shows the background, says why in health, and plays what appears.
@Suite(.serialized) struct ContentAbsentTests {
    typealias Running = MarqueeProcessTests.Running

    func emptyFolder() throws -> String {
        let folder = TestMedia.folder + "/empty-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The first READY=1 on `socket` within `timeout` s, and every message until then.
    func waitForReady(_ socket: NotifySocket, timeout: Double) -> (ready: Bool, messages: [String]) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var messages: [String] = []
        while deadline.timeIntervalSinceNow > 0 {
            guard let message = socket.receive(timeout: 0.2) else { continue }
            messages.append(message)
            if message.hasPrefix("READY=1") { return (true, messages) }
        }
        return (false, messages)
    }

    /// Was: exit 2, "the folder ... has no media files", for an entry dated years ahead.
    @Test func aScheduleEntryWithAnEmptyFolderDoesNotStopTheStart() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let folder = try emptyFolder()
        let config = try TestConfig.write("""
            {"playlist": [{"uri": "\(clip)"}],
             "schedule": [{"name": "later", "dates": ["2031-01-01"], "playlist": {"directory": "\(folder)"}},
                          {"name": "list", "dates": ["2032-01-01"], "playlist": {"m3u": "\(folder)/missing.m3u"}}]}
            """, named: "empty-entry-\(UUID().uuidString.prefix(8)).json")
        let notify = try NotifySocket()
        let running = try Running(config: config, exitAfter: 30, environment: ["NOTIFY_SOCKET": notify.path])
        let (ready, messages) = waitForReady(notify, timeout: 15)
        #expect(ready, "no READY=1 within 15 s: \(messages); log:\n\(running.log)")
        let client = try running.connect()
        var path: String?
        for _ in 0..<100 where path != clip {
            Thread.sleep(forTimeInterval: 0.1)
            path = client.request(["get_property", "path"], id: 1)?["data"]?.stringValue
        }
        #expect(path == clip, "the top-level playlist plays")
        _ = client.request(["quit"], id: 2)
        #expect(running.wait() == 0)
        #expect(running.log.contains("schedule[0].playlist.directory"), "the log names the entry's folder:\n\(running.log)")
    }

    /// An empty folder as the playlist (a USB stick mounted late): READY=1, the background, health
    /// says why; a file copied in plays within a couple of seconds, without a reload.
    @Test func anEmptyFolderPlaylistStartsAndPlaysWhatAppears() throws {
        let folder = try emptyFolder()
        let config = try TestConfig.write("""
            {"playlist": {"directory": "\(folder)"}, "display": {"background": "#2040c0"}}
            """, named: "empty-folder-\(UUID().uuidString.prefix(8)).json")
        let notify = try NotifySocket()
        let running = try Running(config: config, exitAfter: 40, environment: ["NOTIFY_SOCKET": notify.path])
        let (ready, messages) = waitForReady(notify, timeout: 15)
        #expect(ready, "no READY=1 within 15 s: \(messages); log:\n\(running.log)")
        let client = try running.connect()
        Thread.sleep(forTimeInterval: 2.5)  // a few passes of the folder, each finding it empty
        let health = client.request(["get_property", "health"], id: 1)?["data"]
        #expect(health?["status"]?.stringValue == "failed", "\(String(describing: health))")
        let reasons = health?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(reasons.contains { $0.contains(folder) && $0.contains("has no media files") }, "\(reasons)")
        let shot = try MarqueeProcessTests().png(client.request(["screenshot"], id: 2))
        let pixel = try MarqueeProcessTests().pixel(shot, x: "iw/2")
        #expect(MarqueeProcessTests().isColour(pixel, [0x20, 0x40, 0xc0]), "the background shows: \(pixel)")
        // Logged once for the reason, not once a second.
        #expect(running.log.components(separatedBy: "the playlist cannot be read").count - 1 == 1, "\(running.log)")

        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        // Copied under another name, then renamed: the folder never lists a half-written file.
        try FileManager.default.copyItem(atPath: clip, toPath: folder + "/.a.mp4.part")
        try FileManager.default.moveItem(atPath: folder + "/.a.mp4.part", toPath: folder + "/a.mp4")
        let copied = Date()
        var path: String?
        for _ in 0..<100 where path != folder + "/a.mp4" {
            Thread.sleep(forTimeInterval: 0.1)
            path = client.request(["get_property", "path"], id: 3)?["data"]?.stringValue
        }
        #expect(path == folder + "/a.mp4", "the new file plays; log:\n\(running.log)")
        #expect(Date().timeIntervalSince(copied) < 5)
        let after = client.request(["get_property", "health"], id: 4)?["data"]
        #expect(after?["reasons"]?.arrayValue?.contains { $0.stringValue?.contains("has no media files") == true } != true,
                "\(String(describing: after))")
        Thread.sleep(forTimeInterval: 1)  // a second of it
        _ = client.request(["quit"], id: 5)
        #expect(running.wait() == 0)
        let frames = try running.traceLines().filter { $0["type"] as? String == "frame" && $0["uri"] as? String == folder + "/a.mp4" }
        #expect(frames.count > 10)
    }

    /// `--check-config` lists content that is not there as a warning and exits 0: the config as
    /// written is valid, and the player would start.
    @Test func checkConfigWarnsOfAbsentContentAndExitsZero() throws {
        let folder = try emptyFolder()
        let config = TestMedia.folder + "/warn-\(UUID().uuidString.prefix(8)).json"
        try """
            {"playlist": {"directory": "\(folder)"},
             "schedule": [{"dates": ["2031-01-01"], "playlist": {"m3u": "\(folder)/missing.m3u"}},
                          {"dates": ["2032-01-01"], "playlist": {"directory": "\(folder)/not-mounted"}}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try Command.run(MarqueeProcessTests.binary.path, ["--config", config, "--check-config"])
        #expect(result.status == 0, "\(result.text)\(result.errorText)")
        let lines = result.errorText.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("warning: playlist.directory: the folder \(folder) has no media files") }, "\(lines)")
        #expect(lines.contains { $0.contains("warning: schedule[0].playlist.m3u: the M3U file \(folder)/missing.m3u cannot be opened: No such file or directory") }, "\(lines)")
        #expect(lines.contains { $0.contains("warning: schedule[1].playlist.directory: cannot read the folder \(folder)/not-mounted") }, "\(lines)")
        #expect(result.text.contains("valid (0 items, 3 warnings)"), "\(result.text)")
        // Invalid as written is still refused.
        try #"{"playlist": []}"#.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try Command.run(MarqueeProcessTests.binary.path, ["--config", config, "--check-config"]).status == 2)
    }
}
