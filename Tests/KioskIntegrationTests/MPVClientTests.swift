import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// A playing `marquee` driven by what drives mpv: python-mpv-jsonipc (from PyPI, into a venv made
/// here, as `make bench` makes bench/.venv), and the same requests sent to mpv itself.
@Suite(.serialized) struct MPVClientTests {
    /// The test venv's python with `package` (from PyPI; `module` is its import name) installed:
    /// the venv is made once, in the build folder. Cancels the test when PyPI cannot be reached.
    static func venvPython(package: String = "python-mpv-jsonipc", module: String = "python_mpv_jsonipc") throws -> String {
        do {
            return try TestVenv.python(package: package, module: module)
        } catch let error as TestVenv.Unavailable where error.offline {
            try Test.cancel("PyPI is unreachable, so \(package) cannot be installed: \(error.description)")
        }
    }

    /// Three clips of `seconds`, 30 fps, each a colour of its own (so items differ).
    func clips(seconds: Int) throws -> [String] {
        try ["red", "green", "blue"].map { colour in
            try TestMedia.make("mpv-\(colour)-\(seconds)s.mp4", ["-f", "lavfi", "-i", "color=c=\(colour):size=160x90:rate=30:duration=\(seconds)",
                                                                 "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "ultrafast"])
        }
    }

    @Test func pythonMPVJSONIPCAttachesReadsSetsObservesAndSeesEventsInOrder() throws {
        let python = try Self.venvPython()
        let clips = try clips(seconds: 20)
        let running = try MarqueeProcessTests.Running(config: try MarqueeProcessTests().writeConfig(clips), exitAfter: 90)
        _ = try running.connect()
        let result = try Command.run(python, [Command.repository + "/tools/mpv-client-check.py", running.socket])
        try #require(result.status == 0, "the client failed: \(result.errorText)\nmarquee's log:\n\(running.log)")
        let report = try #require((try? JSONSerialization.jsonObject(with: result.output)) as? [String: Any], "\(result.text)")

        // Attached: the client read property-list and command-list.
        let properties = report["properties"] as? [String] ?? []
        #expect(properties.contains("playlist_pos") && properties.contains("time_pos"), "\(properties)")
        #expect(report["has_playlist_next"] as? Bool == true)
        // Properties read as mpv gives them.
        #expect(report["playlist_count"] as? Int == 3)
        #expect(report["path"] as? String == clips[0], "the path as the playlist gives it")
        #expect(report["filename"] as? String == (clips[0] as NSString).lastPathComponent)
        #expect(report["idle_active"] as? Bool == false)
        #expect(report["version"] as? Int == 131072)
        #expect(report["unknown_property_error"] as? String == "property not found")
        let duration = try #require(report["duration"] as? Double)
        #expect(abs(duration - 20) < 0.1)
        let playlist = report["playlist"] as? [[String: Any]] ?? []
        #expect(playlist.map { $0["id"] as? Int } == [1, 2, 3], "\(playlist)")
        // Set and read back.
        #expect(report["pause_before"] as? Bool == false)
        #expect(report["pause_after_true"] as? Bool == true)
        #expect(report["pause_after_no"] as? Bool == false)
        // time-pos observers hear of every new picture (30 fps: about 60 in 2 s; mpv sends one a
        // frame too). At least half of them, on a busy machine.
        let timeEvents = report["time_pos_events_2s"] as? Int ?? 0
        print("python-mpv-jsonipc: attached in \(report["attach_s"] ?? "?") s; time-pos changes in 2 s at 30 fps: \(timeEvents)")
        #expect(timeEvents >= 30, "time-pos changes in 2 s: \(timeEvents)")
        #expect(report["time_pos_increasing"] as? Bool == true)

        // playlist-next: playlist-pos observed moving on, and mpv's events in mpv's order.
        let before = try #require(report["position_before_next"] as? Int)
        let positions = report["positions"] as? [Int] ?? []
        #expect(positions.last == (before + 1) % 3, "\(positions)")
        #expect(report["playlist_pos_after_next"] as? Int == (before + 1) % 3)
        let events = (report["events_after_next"] as? [[String: Any]] ?? []).map { event -> String in
            let name = event["event"] as? String ?? "?"
            let id = (event["playlist_entry_id"] as? Int).map { " \($0)" } ?? ""
            let reason = (event["reason"] as? String).map { " \($0)" } ?? ""
            return name + id + reason
        }
        let endID: Int = before + 1, startID: Int = (before + 1) % 3 + 1
        let expected: [String] = ["end-file \(endID) stop", "start-file \(startID)", "file-loaded", "video-reconfig", "playback-restart"]
        #expect(events == expected, "\(events)")
        _ = running.wait(timeout: 0)
    }

    /// Items that end by themselves: every end-file (eof) comes before the next start-file, with
    /// mpv's entry ids; loadfile appends an entry with the next id, and set playlist-pos plays it.
    @Test func itemChangesAreReportedInMPVsOrderAndLoadfileAppends() throws {
        let clips = try clips(seconds: 1)
        let running = try MarqueeProcessTests.Running(config: try MarqueeProcessTests().writeConfig(clips), exitAfter: 60)
        let client = try running.connect()
        var events: [String] = []
        let deadline = Date(timeIntervalSinceNow: 20)
        while events.filter({ $0.hasPrefix("start-file") }).count < 7 && Date() < deadline {
            guard let line = client.readLine(), let event = try? JSONParser.parse(line), let name = event["event"]?.stringValue else { continue }
            guard name == "start-file" || name == "end-file" else { continue }
            let id = event["playlist_entry_id"]?.numberValue.map { " \(Int($0))" } ?? ""
            events.append(name + id + (event["reason"]?.stringValue.map { " \($0)" } ?? ""))
        }
        // From the first start-file on: start, end (eof) of the same entry, start of the next.
        let from = try #require(events.firstIndex { $0.hasPrefix("start-file") }, "\(events)")
        let seen = Array(events[from...])
        #expect(seen.count >= 13, "\(seen)")
        for (i, event) in seen.enumerated() {
            let words = event.split(separator: " ")
            let id = Int(words.count > 1 ? words[1] : "") ?? 0
            if i % 2 == 0 {
                #expect(words.first == "start-file", "\(i): \(seen)")
                if i > 0 { #expect(id == (Int(seen[i - 1].split(separator: " ")[1]) ?? 0) % 3 + 1, "entry ids 1, 2, 3, 1...: \(seen)") }
            } else {
                #expect(event == "end-file \(Int(seen[i - 1].split(separator: " ")[1]) ?? -1) eof", "\(i): \(seen)")
            }
        }
        // loadfile append: a fourth entry with id 4, which set playlist-pos then plays.
        let loaded = client.request(["loadfile", .string(clips[0]), "append"], id: 1)
        #expect(loaded?["data"]?["playlist_entry_id"]?.numberValue == 4, "\(String(describing: loaded))")
        #expect(client.request(["get_property", "playlist-count"], id: 2)?["data"]?.numberValue == 4)
        #expect(client.request(["get_property", "playlist/3/id"], id: 3)?["data"]?.numberValue == 4)
        #expect(client.request(["set_property", "playlist-pos", 3], id: 4)?["error"]?.stringValue == "success")
        var started: Double?
        let until = Date(timeIntervalSinceNow: 10)
        while started != 4 && Date() < until {
            guard let line = client.readLine(), let event = try? JSONParser.parse(line) else { continue }
            if event["event"]?.stringValue == "start-file" { started = event["playlist_entry_id"]?.numberValue }
        }
        #expect(started == 4, "the appended entry played")
        _ = running.wait(timeout: 0)
    }

    @Test func repliesAgreeWithMPVsForEveryRequestInTheControlDocTable() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") else {
            try Test.cancel("needs mpv (Debian's mpv package, which make test installs)")
        }
        let clips = try clips(seconds: 20)
        let running = try MarqueeProcessTests.Running(config: try MarqueeProcessTests().writeConfig(clips), exitAfter: 120)
        _ = try running.connect()
        let result = try Command.run("python3", [Command.repository + "/tools/mpv-compare.py", "--marquee", running.socket,
                                                 "--doc", Command.repository + "/docs/control.md"] + clips)
        let report = try #require((try? JSONSerialization.jsonObject(with: result.output)) as? [String: Any],
                                  "\(result.text)\n\(result.errorText)")
        let rows = report["rows"] as? [[String: Any]] ?? []
        // Every row marked `same` was sent to both (the table has over 40 of them).
        let doc = try String(contentsOfFile: Command.repository + "/docs/control.md", encoding: .utf8)
        let table = doc.components(separatedBy: "\n| Request").dropFirst().first ?? ""
        let same = table.components(separatedBy: "\n\n").first!.split(separator: "\n").filter { line in
            line.hasPrefix("| `") && line.split(separator: "|").last?.trimmingCharacters(in: .whitespaces).hasPrefix("same") == true
        }.count
        #expect(rows.count == same && same > 40, "\(rows.count) compared of \(same)")
        let problems = report["problems"] as? [String] ?? ["no report"]
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(result.status == 0)
        let events = report["events_after_next"] as? [String: [String]] ?? [:]
        print("mpv comparison: \(rows.count) requests compared; events after playlist-next: \(events)")
        #expect(events["marquee"]?.first == "end-file(stop)", "\(events)")
        _ = running.wait(timeout: 0)
    }
}
