import Foundation
@testable import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

@Suite struct ScheduleConfigTests {

    @Test func schemaAndCheckConfigAgree() throws {
        _ = try weekSchedule()  // its night folder holds a file: --check-config refuses an empty one
        try TestConfig.write(weekConfig, named: "schedule-week.json")
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["sun"], "display": "off"}], "timezone": "UTC"}"#,
                             named: "schedule-off.json")
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["monday"], "playlist": [{"uri": "b.mp4"}]}]}"#,
                             named: "schedule-bad-day.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"from": "7:00", "playlist": [{"uri": "b.mp4"}]}]}"#,
                             named: "schedule-bad-time.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["mon"]}]}"#,
                             named: "schedule-no-playlist.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "timezone": "Berlin"}"#, named: "schedule-bad-zone.json", .refused)
    }
}

/// Whole runs through `runKiosk` on the headless output (60 Hz, virtual clock) whose first vsync
/// is at a chosen system-clock time: the schedule follows the virtual vsyncs' times.
@Suite(.serialized) struct ScheduleRunTests {
    struct Run {
        let trace: [[String: Any]]
        let status: KioskStatus.Snapshot
        var frames: [[String: Any]] { trace.filter { $0["type"] as? String == "frame" } }
        var switches: [[String: Any]] { trace.filter { $0["event"] as? String == "schedule" } }
    }

    func play(_ text: String, from start: String, seconds: Double, onVsync: ((Int64, KioskSession) -> Void)? = nil) throws -> Run {
        var config = try KioskConfig.parse(text, baseDirectory: TestMedia.folder)
        config.display.output = .headless
        config.display.mode = DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 60))
        config.virtualClockStart = utc(start)
        var options = RunOptions()
        options.clock = .virtual
        options.exitAfter = seconds
        let tracePath = TestMedia.folder + "/trace-\(UUID().uuidString).jsonl"
        options.tracePath = tracePath
        final class Holder: @unchecked Sendable { var session: KioskSession? }
        let holder = Holder()
        let lines = LogLines()
        _ = try runKiosk(config: config, options: options, logger: Logger(level: .info, sink: lines.append), makeSession: { output in
            let session = KioskSession(config: config, configPath: nil, logger: Logger(level: .info, sink: lines.append), output: output)
            holder.session = session
            return session
        }, onVsync: { n in if let session = holder.session { onVsync?(n, session) } }, shouldContinue: { true })
        let trace = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        let session = try #require(holder.session)
        return Run(trace: trace, status: session.status.snapshot)
    }

    /// Every frame two vsyncs after the one before (30 fps at 60 Hz): no gap, no repeat.
    func expectGapless(_ frames: [[String: Any]]) {
        let vsyncs = frames.map { $0["vsync"] as! Int }
        #expect(vsyncs == (0..<vsyncs.count).map { $0 * 2 })
    }

    @Test func anExactEntryStartsOnTheVsyncOfTheSpringChangeWithoutAGap() throws {
        let night = try TestMedia.clip(seconds: 3, fps: 30), early = try TestMedia.clip(seconds: 1, fps: 30, width: 320, height: 240)
        let top = try TestMedia.clip(seconds: 2, fps: 30)
        let text = """
            {"playlist": [{"uri": "\(top)"}], "timezone": "Europe/Berlin",
             "schedule": [{"name": "night", "days": ["fri", "sat"], "from": "22:00", "to": "02:00", "playlist": [{"uri": "\(night)"}]},
                          {"name": "early", "days": ["sun"], "from": "01:30", "to": "03:30", "switch": "exact",
                           "playlist": [{"uri": "\(early)"}]}]}
            """
        // 01:59:56 CET, four seconds before the clocks go from 02:00 CET to 03:00 CEST.
        let run = try play(text, from: "2026-03-29T00:59:56Z", seconds: 6)
        let frames = run.frames
        expectGapless(frames)
        let first = try #require(frames.firstIndex { $0["uri"] as? String == early })
        #expect(frames[first]["vsync"] as? Int == 240)
        #expect(frames[first]["pts"] as? Double == 0)
        #expect(frames[..<first].allSatisfy { $0["uri"] as? String == night })
        #expect(frames[first...].allSatisfy { $0["uri"] as? String == early })
        #expect(run.switches.count == 1)
        #expect(run.switches.first?["vsync"] as? Int == 240 && run.switches.first?["entry"] as? Int == 1)
        #expect(run.status.schedule == KioskStatus.ScheduleState(entry: 1, name: "early", display: "on"))
        #expect(run.status.items.map(\.uri) == [early])
    }

    @Test func anItemSwitchWaitsForTheItemPlayingAtTheEndOfANightEntry() throws {
        let night = try TestMedia.clip(seconds: 2, fps: 30), top = try TestMedia.clip(seconds: 1, fps: 30, width: 320, height: 240)
        let text = """
            {"playlist": [{"uri": "\(top)"}], "timezone": "Europe/Berlin",
             "schedule": [{"name": "night", "days": ["fri"], "from": "22:00", "to": "02:00", "playlist": [{"uri": "\(night)"}]}]}
            """
        // Saturday 01:59:57 CET: the Friday night entry ends in three seconds (vsync 180), in the
        // middle of its second item (120 to 240); the top-level playlist follows that item.
        let run = try play(text, from: "2026-03-28T00:59:57Z", seconds: 5)
        let frames = run.frames
        expectGapless(frames)
        let first = try #require(frames.firstIndex { $0["uri"] as? String == top })
        #expect(frames[first]["vsync"] as? Int == 240)
        #expect(frames[..<first].allSatisfy { $0["uri"] as? String == night })
        #expect(run.switches.first?["vsync"] as? Int == 240)
        #expect(run.switches.first?["entry"] is NSNull)
        #expect(run.status.schedule == KioskStatus.ScheduleState(entry: nil, name: "playlist", display: "on"))
    }
}

extension ScheduleRunTests {
    @Test func aDisplayOffEntryDarkensTheOutputStopsPlaybackAndWakesAtItsEnd() throws {
        let clip = try TestMedia.clip(seconds: 3, fps: 30)
        let text = """
            {"playlist": [{"uri": "\(clip)"}], "timezone": "UTC",
             "schedule": [{"name": "closed", "from": "00:00:02", "to": "00:00:04", "switch": "exact", "display": "off"}]}
            """
        final class Seen: @unchecked Sendable { var health: [Int64: String] = [:]; var off: [Int64: String?] = [:] }
        let seen = Seen()
        let run = try play(text, from: "2026-03-30T00:00:00Z", seconds: 6) { n, session in
            guard n == 60 || n == 180 || n == 300 else { return }
            seen.health[n] = session.status.supervision().reasons.joined() + "|" + session.status.supervision().status
            seen.off[n] = session.status.snapshot.displayOff
        }
        // Frames until the entry's moment (vsync 120), then standby (no picture asked for, so
        // none decoded), then, two seconds later, the playlist again from its start on the vsync
        // the entry ends.
        let power = run.trace.filter { $0["event"] as? String == "display-power" }
        #expect(power.map { $0["state"] as? String } == ["off", "on"])
        #expect(power.map { $0["vsync"] as? Int } == [120, 240])
        let frames = run.frames
        #expect(!frames.contains { (120..<240).contains($0["vsync"] as! Int) })
        #expect(frames.filter { ($0["vsync"] as! Int) < 120 }.last?["vsync"] as? Int == 118)
        let back = try #require(frames.first { ($0["vsync"] as! Int) >= 240 })
        #expect(back["vsync"] as? Int == 240)
        #expect(back["pts"] as? Double == 0)
        #expect(seen.health[60] == "|ok")
        #expect(seen.health[180] == "off (scheduled)|off")
        #expect(seen.off[180] == .some("off (scheduled)"))
        #expect(seen.health[300] == "|ok")
        #expect(run.switches.map { $0["entry"] is NSNull ? -1 : ($0["entry"] as! Int) } == [0, -1])
    }
}

/// Two marquee processes (two nodes of a wall under clock sync, real clock) with a schedule entry
/// that starts a few seconds after they do.
@Suite(.serialized) struct ScheduleWallTests {
    @Test func twoClockSyncedNodesSwitchOnTheSameVsyncWithoutAGap() throws {
        let a = try TestMedia.clip(seconds: 2, fps: 30)
        let b = try TestMedia.clip(seconds: 1, fps: 30, width: 320, height: 240)
        // The moment: a whole second 15 s from now, in UTC (writing the config runs --check-config,
        // and a busy machine may take seconds to start both processes).
        let moment = (Date().timeIntervalSince1970 + 15).rounded(.up)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: moment))
        func two(_ n: Int?) -> String { String(format: "%02d", n ?? 0) }
        let date = "\(parts.year!)-\(two(parts.month))-\(two(parts.day))"
        let from = "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second))"
        let config = TestMedia.folder + "/wall-schedule-\(UUID().uuidString).json"
        try TestConfig.write(#"""
            {"playlist": [{"uri": "\#(a)"}], "timezone": "UTC",
             "schedule": [{"name": "later", "dates": ["\#(date)"], "from": "\#(from)", "to": "24:00", "switch": "exact",
                           "playlist": [{"uri": "\#(b)"}]}],
             "wall": {"canvas": {"width": 320, "height": 180},
                      "outputs": [{"name": "screen", "x": 0, "y": 0, "width": 320, "height": 180}],
                      "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z"}}}
            """#, to: config)
        let first = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 19)
        Thread.sleep(forTimeInterval: 1.3)
        let second = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 18)
        #expect(first.wait() == 0)
        #expect(second.wait() == 0)
        var onsets: [Double] = []
        for node in [first, second] {
            let lines = try node.traceLines()
            let frames = lines.filter { $0["type"] as? String == "frame" }
            let shown = lines.drop { $0["type"] as? String != "frame" }
            #expect(!shown.contains { $0["type"] as? String == "blank" })
            let switches = lines.filter { $0["event"] as? String == "schedule" }
            #expect(switches.count == 1 && switches.first?["entry"] as? Int == 0, "\(switches)")
            guard let index = frames.firstIndex(where: { $0["uri"] as? String == b }), index > 0 else {
                Issue.record("no frame of the entry's playlist after one of the playlist: \(node.log)")
                continue
            }
            // The vsync each node planned the switch on is the one nearest the moment on its own
            // clock (half a vsync either way, and a millisecond for the trace's rounding): a pure
            // function of the moment, the same on every node.
            let planned = try #require(switches.first?["vsync"] as? Int)
            let reference = try #require(frames[..<index].last)
            let plannedWall = (reference["wall"] as! Double) + Double(planned - (reference["vsync"] as! Int)) / 60
            onsets.append(plannedWall)
            #expect(abs(plannedWall - moment) <= 0.5 / 60 + 0.001, "planned vsync at \(plannedWall) for the moment \(moment)")
            // The first frame of the entry on that vsync, and the last of the playlist one or two
            // vsyncs before (30 fps at 60 Hz on the clock's cadence: the cut may shorten it to
            // one); a machine too busy to decode it in time (the suite runs in parallel) shows it
            // late, counted as delayed, by at most 0.1 s.
            let shownLate = (frames[index]["vsync"] as! Int) - planned
            #expect(shownLate >= 0 && shownLate <= 6, "the entry's first frame \(shownLate) vsyncs after the planned one")
            #expect(frames[index - 1]["uri"] as? String == a)
            #expect((1...2).contains(planned - (frames[index - 1]["vsync"] as! Int)))
            #expect(frames[index...].allSatisfy { $0["uri"] as? String == b })
            // The new playlist was queued at the clock's position: wall sync did not have to restart it.
            #expect(!node.log.contains("off by more than 0.5 s"), "\(node.log)")
        }
        if onsets.count == 2 { #expect(abs(onsets[0] - onsets[1]) < 1.0 / 60, "\(onsets)") }
    }
}

/// `set_property display-power` on a running marquee (headless output, real clock).
@Suite(.serialized) struct DisplayPowerProcessTests {
    func pixel(_ reply: JSONValue?) throws -> [UInt8] {
        let png = try #require(Data(base64Encoded: reply?["data"]?["data"]?.stringValue ?? ""), "no screenshot in \(String(describing: reply))")
        let path = TestMedia.folder + "/shot-\(UUID().uuidString).png"
        try png.write(to: URL(fileURLWithPath: path))
        return Array(try Command.run("ffmpeg", ["-v", "error", "-i", path, "-vf", "crop=1:1:iw/2:ih/2", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).output)
    }

    func near(_ pixel: [UInt8], _ expected: [Int]) -> Bool {
        pixel.count == 3 && zip(pixel, expected).allSatisfy { abs(Int($0) - $1) <= 8 }
    }

    @Test func displayPowerOffDarkensTheOutputHoldsPlaybackAndHealthSaysOff() throws {
        let red = try TestMedia.make("power-red-4s.mp4", ["-f", "lavfi", "-i", "color=c=red:size=320x180:rate=30", "-t", "4",
                                                          "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv444p", "-f", "mp4"])
        let config = TestMedia.folder + "/power-\(UUID().uuidString).json"
        try TestConfig.write(##"{"playlist": [{"uri": "\##(red)"}], "display": {"background": "#ffffff"}}"##, to: config)
        let marquee = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 30)
        let client = try marquee.connect()
        Thread.sleep(forTimeInterval: 1.5)
        #expect(near(try pixel(client.request(["screenshot"], id: 1)), [255, 0, 0]))
        #expect(client.request(["set_property", "display-power", "off"], id: 2)?["error"]?.stringValue == "success")
        #expect(client.request(["get_property", "display-power"], id: 3)?["data"]?.stringValue == "off")
        let health = client.request(["get_property", "health"], id: 4)?["data"]
        #expect(health?["status"]?.stringValue == "off")
        #expect(health?["reasons"]?.arrayValue?.map { $0.stringValue } == ["off (by command)"])
        // Black, not the background: a screen in standby.
        #expect(near(try pixel(client.request(["screenshot"], id: 5)), [0, 0, 0]))
        // Playback holds: the time does not move while the display is off.
        let before = client.request(["get_property", "time-pos"], id: 6)?["data"]?.numberValue
        Thread.sleep(forTimeInterval: 1.0)
        let after = client.request(["get_property", "time-pos"], id: 7)?["data"]?.numberValue
        #expect(before != nil && before == after)
        #expect(client.request(["set_property", "display-power", "sideways"], id: 8)?["error"]?.stringValue
                == "unsupported format for accessing property")
        #expect(client.request(["set_property", "display-power", "on"], id: 9)?["error"]?.stringValue == "success")
        Thread.sleep(forTimeInterval: 1.0)
        // Awake: ok (a busy machine may drop a frame: that alone is allowed).
        let awake = client.request(["get_property", "health"], id: 10)?["data"]
        #expect(awake?["status"]?.stringValue == "ok" || (awake?["status"]?.stringValue == "degraded"
                && awake?["reasons"]?.arrayValue?.allSatisfy { $0.stringValue?.hasSuffix("frames dropped in the last minute") == true } == true),
                "\(String(describing: awake))")
        let resumed = client.request(["get_property", "time-pos"], id: 11)?["data"]?.numberValue
        #expect((resumed ?? 0) > (after ?? 0))
        #expect(near(try pixel(client.request(["screenshot"], id: 12)), [255, 0, 0]))
        _ = client.request(["quit"], id: 13)
        #expect(marquee.wait() == 0)
    }
}
