import Display
import Foundation
import Kiosk
import Media
import Playback
import Testing
import TestSupport

/// What `KioskConfig.parse` refuses in `text` (relative paths against `/`), as problems.
func configProblems(_ text: String) -> [ConfigError.Problem] {
    do {
        _ = try KioskConfig.parse(text, baseDirectory: "/")
        return []
    } catch {
        return error.problems
    }
}

/// The problems a config's text has, as `--check-config` prints them (none for a good config);
/// relative paths in it are taken from `base`.
func problems(_ text: String, base: String = "/media") -> [String] {
    do {
        _ = try KioskConfig.parse(text, baseDirectory: base)
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

@Suite struct ConfigTests {
    @Test func validConfigResolvesRelativeURIs() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}, {"uri": "/abs/b.mp4"}, {"uri": "file:///c%20d.mp4"}], "loop": false,
             "display": {"output": "headless", "mode": "1280x720@59.94", "background": "#102030", "gravity": "resize"},
             "decode": {"hwdec": "vaapi"}, "log": {"level": "debug"}}
            """, baseDirectory: "/media")
        #expect(config.playlist.map(\.path) == ["/media/a.mp4", "/abs/b.mp4", "/c d.mp4"])
        #expect(config.loop == false)
        #expect(config.display.output == .headless)
        #expect(config.display.mode == DisplayMode(width: 1280, height: 720, refresh: RefreshRate(numerator: 60000, denominator: 1001)))
        #expect(config.display.background.description == "#102030")
        #expect(config.display.gravity == .resize)
        #expect(config.logLevel == .debug)
        #expect(config.hardwareDecoding == .vaapi)
    }

    @Test func everyProblemIsReportedWithItsJSONPath() {
        let found = problems("""
            {"playlist": [{"uri": "a.mp4"}, {"url": "b.mp4"}, {"uri": 3}], "loop": "yes", "colour": 1,
             "display": {"mode": "big", "output": "hdmi", "background": "red"}}
            """)
        #expect(found == [
            "colour: unknown key (allowed here: $schema, playlist, loop, shuffle, display, decode, control, log, wall, schedule, timezone, audio, overlays, transition, triggers, inputs, network, http, mqtt)",
            "playlist[1].url: unknown key (allowed here: uri, start, end, gravity, duration, volume, transition, live)",
            "playlist[1].uri: missing: the file to play",
            "playlist[2].uri: expected a string, found a number",
            "loop: expected true or false, found a string",
            "display.mode: \"big\" is not a mode: write preferred, highest, WxH or WxH@Hz, e.g. 1920x1080@60",
            "display.output: \"hdmi\" is not one of \"auto\", \"kms\", \"headless\"",
            "display.background: \"red\" is not a colour: write #rrggbb",
        ])
    }

    @Test func colourConversionIsAutoUnlessChosen() throws {
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/media").display.conversion == .auto)
        let cpu = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "display": {"conversion": "cpu"}}"#, baseDirectory: "/media")
        #expect(cpu.display.conversion == .cpu)
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"conversion": "gpu"}}"#)
            == [#"display.conversion: "gpu" is not one of "auto", "shader", "cpu""#])
    }

    @Test func scanoutIsAutoUnlessChosen() throws {
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/media").display.scanout == .auto)
        for mode in ScanoutMode.allCases {
            let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "display": {"scanout": "\#(mode.rawValue)"}}"#, baseDirectory: "/media")
            #expect(config.display.scanout == mode)
        }
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"scanout": "overlay"}}"#)
            == [#"display.scanout: "overlay" is not one of "gl", "planes", "auto""#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"scanout": 1}}"#)
            == [#"display.scanout: expected a string, found a number"#])
    }

    @Test func missingOrEmptyPlaylistIsAnError() {
        #expect(problems("{}") == ["playlist: missing: the list of items to play"])
        #expect(problems(#"{"playlist": []}"#) == ["playlist: empty: give at least one item"])
        #expect(problems("[1]") == ["expected an object, found an array"])
    }

    @Test func syntaxErrorsGiveLineAndColumn() {
        #expect(problems("{\n  \"playlist\": [\n    {\"uri\": \"a.mp4\",}\n  ]\n}") == [
            "syntax error at line 3, column 21: expected a member name in double quotes",
        ])
        #expect(problems("{\"loop\": tru}") == ["syntax error at line 1, column 10: invalid literal, expected true"])
    }

    @Test func unreadableFileIsNamed() {
        #expect(throws: ConfigError.self) { try KioskConfig.load(path: "/nonexistent/marquee.json") }
        do {
            _ = try KioskConfig.load(path: "/nonexistent/marquee.json")
        } catch {
            #expect(error.description == "/nonexistent/marquee.json: cannot read the file: No such file or directory")
        }
    }
}

/// A whole run of `config` on a headless output at 60 Hz with the virtual clock, through the same
/// entry point as `marquee`: its trace lines, where the trace is, and the wall time it took.
struct HeadlessRun {
    let trace: [[String: Any]]
    let tracePath: String
    let wallSeconds: Double

    init(_ config: KioskConfig, width: Int, height: Int, seconds: Double, lines: LogLines) throws {
        var config = config
        config.display.output = .headless
        config.display.mode = DisplayMode(width: width, height: height, refresh: RefreshRate(numerator: 60))
        var options = RunOptions()
        options.clock = .virtual
        options.exitAfter = seconds
        let tracePath = TestMedia.folder + "/trace-\(UUID().uuidString).jsonl"
        options.tracePath = tracePath
        let started = Date()
        _ = try runKiosk(config: config, options: options, logger: Logger(level: .info, sink: lines.append)) { true }
        wallSeconds = Date().timeIntervalSince(started)
        trace = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        self.tracePath = tracePath
    }

    var frames: [[String: Any]] { trace.filter { $0["type"] as? String == "frame" } }
}

@Suite struct OutputSelectionTests {
    @Test func autoIsHeadlessWithoutAConnectedConnector() throws {
        #expect(try resolveOutputKind(.auto, connectors: []).0 == .headless)
        #expect(try resolveOutputKind(.headless, connectors: [ConnectedConnector(card: "card0", connector: "HDMI-A-1")]).0 == .headless)
    }

    @Test func kmsFailsClearlyUntilItExists() {
        #expect(throws: OutputUnavailable.self) { try resolveOutputKind(.kms, connectors: []) }
    }

    @Test func connectorsAreReadFromSysfs() throws {
        let root = TestMedia.folder + "/sysfs-\(UUID().uuidString)"
        for (entry, status) in [("card0-HDMI-A-1", "disconnected"), ("card0-HDMI-A-2", "connected"), ("renderD128", nil)] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(entry)", withIntermediateDirectories: true)
            if let status { try (status + "\n").write(toFile: "\(root)/\(entry)/status", atomically: true, encoding: .utf8) }
        }
        #expect(connectedConnectors(sysfs: root) == [ConnectedConnector(card: "card0", connector: "HDMI-A-2")])
    }
}
