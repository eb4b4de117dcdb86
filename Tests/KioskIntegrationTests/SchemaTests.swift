import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// configs/marquee.schema.json against the config reader (`marquee --check-config`): what one
/// accepts the other accepts, and the same bad configs are refused by both. The schema is checked
/// with the jsonschema package (PyPI, in the test venv).
@Suite(.serialized) struct SchemaTests {
    static let schema = Command.repository + "/configs/marquee.schema.json"

    /// Each file's schema problems (empty: valid).
    func schemaProblems(_ files: [String]) throws -> [String: [String]] {
        let python = try MPVClientTests.venvPython(package: "jsonschema", module: "jsonschema")
        let result = try Command.run(python, [Command.repository + "/tools/schema-check.py", Self.schema] + files)
        try #require(result.status == 0, "\(result.errorText)")
        return try #require((try? JSONSerialization.jsonObject(with: result.output)) as? [String: [String]], "\(result.text)")
    }

    func checkConfig(_ path: String) throws -> CommandResult {
        try Command.run(MarqueeProcessTests.binary.path, ["--config", path, "--check-config"])
    }

    /// The config examples of the docs (README.md and every docs/*.md): each ```json block that is a whole config.
    func documentedConfigs() throws -> [String] {
        var files: [String] = []
        let docs = try FileManager.default.contentsOfDirectory(atPath: Command.repository + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        for doc in ["README.md"] + docs {
            let text = try String(contentsOfFile: Command.repository + "/" + doc, encoding: .utf8)
            for (i, block) in text.components(separatedBy: "```json\n").dropFirst().enumerated() {
                let body = block.components(separatedBy: "```").first ?? ""
                guard body.hasPrefix("{"), let value = try? JSONParser.parse(body), value["playlist"] != nil || value["wall"] != nil else { continue }
                let path = TestMedia.folder + "/doc-\(doc.replacingOccurrences(of: "/", with: "-"))-\(i).json"
                try body.write(toFile: path, atomically: true, encoding: .utf8)
                files.append(path)
            }
        }
        return files
    }

    /// Configs as the tests and the shipped folder write them, a `$schema` key and a full wall.
    static let goodConfigs = [
        #"{"$schema": "marquee.schema.json", "playlist": [{"uri": "a.mp4"}], "loop": true}"#,
        #"{"playlist": [{"uri": "a.mp4", "start": 1, "end": 2, "gravity": "resize"}, {"uri": "b.png", "duration": 0.5}], "shuffle": true}"#,
        #"{"playlist": {"directory": "media"}, "display": {"output": "headless", "mode": "1920x1080@59.94"}}"#,
        #"{"playlist": {"m3u": "list.m3u"}, "display": {"mode": "preferred"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "16384x1@1000"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"waitForCard": 0}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"output": "kms", "waitForCard": 30}}"#,
        #"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "transition": {"type": "fade", "duration": 10}}], "transition": {"type": "crossfade", "duration": 0.5}}"#,
        #"{"playlist": [{"uri": "a.mp4", "transition": {"type": "cut"}}], "transition": {"type": "crossfade"}}"#,
        ##"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"image": "logo.png", "anchor": "bottom-right", "offset": [-5, 10], "width": 8, "height": 4, "opacity": 0}, {"text": "Hi", "on": "canvas", "size": 1024, "color": "#A0b0C0"}, {"clock": "%c", "schedule": {"days": ["mon"], "to": "24:00", "dates": ["2026-01-01..2026-01-02"]}}]}"##,
        #"{"playlist": [{"uri": "a.mp4", "volume": 40}], "audio": {"enabled": true, "device": "hdmi:CARD=PCH,DEV=0", "volume": 80, "mute": false, "delay": -0.05, "output": "left"}}"#,
        ##"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"gpio": {"chip": "gpiochip0", "line": 17, "edge": "rising", "bias": "pull-down"}, "debounce": 0.01}, "do": {"play": ["a.mp4"], "then": "next"}, "busy": "queue", "rearm": 0, "idle": 10, "signal": {"osc": {"to": "127.0.0.1:7000", "address": "/lamp"}}}, {"on": {"key": 2, "hold": 1}, "do": "prev"}, {"on": {"osc": "/v", "args": [0.5, "x", false]}, "do": {"set": "mute", "value": true}}], "inputs": {"osc": "127.0.0.1:9000", "keys": ["/dev/input/event0"]}}"##,
        #"{"wall": {"canvas": {"width": 20, "height": 10}, "regions": [{"x": 0, "y": 0, "width": 10, "height": 10, "playlist": {"directory": "media"}}, {"x": 10, "y": 0, "width": 10, "height": 10, "playlist": {"m3u": "list.m3u"}}], "outputs": [{"name": "all", "x": 0, "y": 0, "width": 20, "height": 10}]}}"#,
        #"{"wall": {"canvas": {"width": 3840, "height": 1080}, "regions": [{"x": 0, "y": 0, "width": 1920, "height": 1080, "playlist": [{"uri": "l.mp4"}]}, {"x": 1920, "y": 0, "width": 1920, "height": 1080, "playlist": [{"uri": "r.mp4"}], "gravity": "resizeAspectFill"}], "outputs": [{"name": "left", "x": 0, "y": 0, "width": 1920, "height": 1080, "rotation": 90, "connector": "HDMI-A-1", "node": "pi-1"}, {"name": "right", "x": 1920, "y": 0, "width": 1920, "height": 1080, "connector": "HDMI-A-1", "node": "pi-2"}], "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z"}}}"#,
    ]

    /// Bad configs: each refused by the schema and by --check-config.
    static let badConfigs = [
        #"{"playlist": []}"#,
        #"{"loop": true}"#,
        #"{"playlist": [{"uri": 5}]}"#,
        #"{"playlist": [{"uri": ""}]}"#,
        #"{"playlist": [{"uri": "a.mp4", "start": -1}]}"#,
        #"{"playlist": [{"uri": "a.mp4", "duration": 0}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "speed": 2}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "transition": {"type": "wipe", "duration": 1}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "transition": {"duration": 1}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "transition": {"type": "fade", "duration": -1}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "transition": {"type": "fade", "duration": 0}}"#,
        #"{"playlist": [{"uri": "a.mp4", "transition": {"type": "crossfade", "duration": 1e300}}]}"#,
        #"{"playlist": [{"uri": "a.mp4", "transition": {"type": "crossfade", "duration": "1"}}]}"#,
        #"{"playlist": [{"uri": "a.mp4", "transition": {"type": "crossfade", "speed": 1}}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "transition": "crossfade"}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "loop": "yes"}"#,
        #"{"$schema": 5, "playlist": [{"uri": "a.mp4"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "0x0@0"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "1920x1080@1001"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "16385x100"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"output": "screen-7"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"waitForCard": 31}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"waitForCard": -1}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "display": {"waitForCard": "10"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"volume": 101}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"device": ""}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"device": "my device"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"mute": "yes"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"delay": 2}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "audio": {"speakers": 2}}"#,
        #"{"playlist": [{"uri": "a.mp4", "volume": -1}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "anchor": "middle"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "opacity": -0.1}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": ""}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "image": "logo.png"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"image": "logo.png", "size": 10}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"image": "logo.png", "scale": 2, "width": 10}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"clock": "%H", "offset": [1, 2, 3]}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"clock": "%H", "size": 0}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"clock": "%H", "schedule": {"from": "7:00"}}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "overlays": {"text": "Hi"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1", "osc": "/a"}, "do": "next"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"osc": "play"}, "do": "next"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"gpio": {"chip": "gpiochip0", "line": 4096}}, "do": "next"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}, "do": "jump"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}, "do": {"play": "a.mp4", "then": "later"}}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}, "do": {"set": "volume"}}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}, "do": "next", "busy": "wait"}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"key": "KEY_1"}, "do": "next", "idle": 0}]}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "inputs": {"osc": "localhost:9000"}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "inputs": {"keys": []}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": []}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 0, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10, "rotation": 45}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"x": 0, "y": 0, "width": 10, "height": 10}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": -1, "y": 0, "width": 10, "height": 10}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10, "screen": 1}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "regions": [{"x": 0, "y": 0, "width": 0, "height": 10}], "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}]}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "sync": {"mode": "gps"}}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "sync": {"mode": "clock", "epoch": "2400-01-01T00:00:00Z"}}}"#,
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "sync": {"mode": "clock", "epoch": "yesterday"}}}"#,
    ]

    /// Makes every file a config names by a relative path (a clip, or a picture for .png), next to
    /// the config, so that --check-config finds something playable.
    func makeMedia(namedBy files: [String]) throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let picture = try TestMedia.make("schema-picture.png", ["-f", "lavfi", "-i", "color=c=red:size=16x16", "-frames:v", "1"])
        for file in files {
            guard let config = try? JSONParser.parse(String(contentsOfFile: file, encoding: .utf8)) else { continue }
            var lists: [JSONValue] = [config["playlist"] ?? .null]
            if case .array(let regions)? = config["wall"]?["regions"] { lists += regions.map { $0["playlist"] ?? .null } }
            if case .array(let entries)? = config["schedule"] { lists += entries.map { $0["playlist"] ?? .null } }
            // Overlay images: PNG files (read when the config is).
            if case .array(let overlays)? = config["overlays"] {
                let png = try TestMedia.make("schema-overlay.png", ["-f", "lavfi", "-i", "color=c=red@0.5:size=16x16,format=rgba",
                                                                    "-frames:v", "1", "-c:v", "png", "-f", "image2", "-update", "1"])
                for uri in overlays.compactMap({ $0["image"]?.stringValue }) where !uri.hasPrefix("/") {
                    let target = ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(uri)
                    try? FileManager.default.removeItem(atPath: target)
                    try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                    try FileManager.default.copyItem(atPath: png, toPath: target)
                }
            }
            for case .array(let items) in lists {
                for uri in items.compactMap({ $0["uri"]?.stringValue }) where !uri.hasPrefix("/") {
                    let target = ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(uri)
                    guard !FileManager.default.fileExists(atPath: target) else { continue }
                    try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                    try FileManager.default.copyItem(atPath: uri.hasSuffix(".png") ? picture : clip, toPath: target)
                }
            }
        }
    }

    func write(_ texts: [String], _ prefix: String) throws -> [String] {
        try texts.enumerated().map { i, text in
            let path = TestMedia.folder + "/\(prefix)-\(i).json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    @Test func everyShippedDocumentedAndTestConfigValidatesAndChecks() throws {
        let shipped = try FileManager.default.contentsOfDirectory(atPath: Command.repository + "/configs")
            .filter { $0.hasSuffix(".json") && $0 != "marquee.schema.json" }.map { Command.repository + "/configs/" + $0 }
        #expect(shipped.count >= 3)
        let documented = try documentedConfigs()
        #expect(documented.count >= 6, "config examples found in the docs: \(documented)")
        // What the folder and M3U playlists of the good configs name (the reader reads them).
        try FileManager.default.createDirectory(atPath: TestMedia.folder + "/media", withIntermediateDirectories: true)
        try "a.mp4\n".write(toFile: TestMedia.folder + "/list.m3u", atomically: true, encoding: .utf8)
        let files = shipped + documented + (try write(Self.goodConfigs, "schema-good"))
        try makeMedia(namedBy: documented + files.suffix(Self.goodConfigs.count))
        if !FileManager.default.fileExists(atPath: TestMedia.folder + "/media/a.mp4") {
            try FileManager.default.copyItem(atPath: TestMedia.folder + "/a.mp4", toPath: TestMedia.folder + "/media/a.mp4")
        }
        let problems = try schemaProblems(files)
        for file in files {
            #expect(problems[file] == [], "\(file): \(problems[file] ?? ["not checked"])")
            let checked = try checkConfig(file)
            #expect(checked.status == 0, "\(file): \(checked.errorText)")
        }
        print("schema: \(files.count) good configs valid for both (\(shipped.count) shipped, \(documented.count) from the docs)")
    }

    @Test func badConfigsAreRefusedByTheSchemaAndByCheckConfig() throws {
        let files = try write(Self.badConfigs, "schema-bad")
        // The files they name exist, so each is refused for its own fault, not for a missing clip.
        try makeMedia(namedBy: files)
        let problems = try schemaProblems(files)
        for (file, text) in zip(files, Self.badConfigs) {
            #expect(problems[file]?.isEmpty == false, "the schema accepts \(text)")
            let checked = try checkConfig(file)
            #expect(checked.status == 2 && !checked.errorText.contains("nothing in the playlist can be played"),
                    "--check-config accepts \(text): \(checked.text)")
        }
        // The one rule JSON Schema cannot state (it compares two fields): the reader alone has it,
        // and the schema's description says so.
        let backwards = try write([#"{"playlist": [{"uri": "a.mp4", "start": 5, "end": 1}]}"#], "schema-backwards")[0]
        try makeMedia(namedBy: [backwards])
        try TestConfig.check(backwards, .refusedOnlyByCheckConfig)
        let schema = try #require(try JSONParser.parse(String(contentsOfFile: Self.schema, encoding: .utf8))["description"]?.stringValue)
        #expect(schema.contains("One rule is checked only by marquee --check-config") && schema.contains("an item's end must be after its start"),
                "\(schema)")
        print("schema: \(files.count) bad configs refused by both")
    }

    /// --check-config probes the files: it lists each one that cannot be played, and refuses a
    /// config with nothing playable.
    /// What tests write through TestConfig is judged by both; a config marked wrongly is caught.
    @Test func testConfigsAreCheckedByBothJudgesAsTheyAreWritten() throws {
        #expect(throws: Never.self) { try TestConfig.write(#"{"playlist": [{"uri": "/nonexistent/a.mp4"}]}"#, named: "judged-valid.json") }
        #expect(throws: Never.self) { try TestConfig.write(#"{"playlist": [{"uri": 5}]}"#, named: "judged-bad.json", .refused) }
        // Marked wrongly: each is a Mismatch naming which judge disagrees.
        let cases: [(String, TestConfig.Expectation, String)] = [
            (#"{"playlist": [{"uri": "a.mp4"}], "speed": 2}"#, .valid, "the schema refuses a config the test calls valid"),
            (#"{"playlist": [{"uri": "a.mp4"}]}"#, .refused, "the schema accepts a config the test calls bad"),
            (#"{"playlist": [{"uri": "a.mp4", "start": 5, "end": 1}]}"#, .valid, "--check-config refuses a config the test calls valid"),
            (#"{"playlist": [{"uri": "a.mp4", "start": -1}]}"#, .refusedOnlyByCheckConfig, "the schema refuses it: not the rule only --check-config has"),
            (#"{"playlist": [{"uri": "\ud800\u0041.mp4"}]}"#, .valid, "the schema refuses"),
        ]
        for (i, (text, expectation, why)) in cases.enumerated() {
            let error = #expect(throws: TestConfig.Mismatch.self) { try TestConfig.write(text, named: "judged-\(i).json", expectation) }
            #expect(error?.description.contains(why) == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func checkConfigListsFilesThatCannotBePlayed() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let garbage = try TestMedia.garbage()
        let configs = try write([
            #"{"playlist": [{"uri": "/nonexistent/missing.mp4"}]}"#,
            #"{"playlist": [{"uri": "\#(garbage)"}]}"#,
            #"{"playlist": [{"uri": "/nonexistent/missing.mp4"}, {"uri": "\#(clip)"}]}"#,
        ], "check-files")
        let (onlyMissing, onlyGarbage, oneGood) = (configs[0], configs[1], configs[2])
        let missing = try checkConfig(onlyMissing)
        #expect(missing.status == 2)
        #expect(missing.errorText.contains("/nonexistent/missing.mp4: cannot be played:") && missing.errorText.contains("No such file or directory"),
                "\(missing.errorText)")
        #expect(missing.errorText.contains("nothing in the playlist can be played"))
        let unreadable = try checkConfig(onlyGarbage)
        #expect(unreadable.status == 2 && unreadable.errorText.contains("cannot be played"), "\(unreadable.errorText)")
        let partly = try checkConfig(oneGood)
        #expect(partly.status == 0, "\(partly.errorText)")
        #expect(partly.errorText.contains("missing.mp4: cannot be played") && !partly.errorText.contains(clip), "\(partly.errorText)")
        #expect(partly.text.contains("valid (2 items, 1 of 2 files cannot be played)"), "\(partly.text)")
    }
}
