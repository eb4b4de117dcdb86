import Foundation
import HTTPServer
@testable import Kiosk
@testable import Remote
@testable import RemoteTests
import Testing
import TestSupport

/// The HTTP API of a running `marquee` (headless, real clock, traced) on 127.0.0.1, an ephemeral
/// port: the OpenAPI document against its answers, metrics through Prometheus' parser, and the
/// attacks of issue 30 while it plays.
@Suite(.serialized) struct RemoteProcessTests {
    struct NotBuilt: Error, CustomStringConvertible { let description: String }

    /// A marquee with `http` on.
    final class Player: @unchecked Sendable {
        // @unchecked: `captured` is guarded by `lock`.
        let process = Process()
        let folder: String
        let trace: String
        let uploads: String
        let configPath: String
        private let output = Pipe()
        private var captured = Data()
        private let lock = NSLock()
        private(set) var port: UInt16 = 0
        static let viewToken = "view-\(UUID().uuidString)"
        static let controlToken = "control-\(UUID().uuidString)"

        /// `folderPlaylist`: the playlist is the upload folder, which starts with the clip as a.mp4.
        /// `clipSeconds`: the clip's length (it loops).
        init(seconds: Double = 60, http extra: String = "", folderPlaylist: Bool = false, clipSeconds: Double = 1) throws {
            let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marquee")
            guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw NotBuilt(description: "\(binary.path) is not built") }
            folder = TestMedia.folder + "/remote-\(UUID().uuidString.prefix(8))"
            uploads = folder + "/uploads"
            try FileManager.default.createDirectory(atPath: uploads, withIntermediateDirectories: true)
            trace = folder + "/trace.jsonl"
            let clip = try TestMedia.clip(seconds: clipSeconds, fps: 30)
            try (TokenStore.line(role: .view, token: Self.viewToken, name: "viewer") + "\n"
                 + TokenStore.line(role: .control, token: Self.controlToken, name: "ops") + "\n").write(toFile: folder + "/tokens", atomically: true, encoding: .utf8)
            configPath = folder + "/marquee.json"
            var playlist = #"[{"uri": "\#(clip)"}]"#
            if folderPlaylist {
                try FileManager.default.copyItem(atPath: clip, toPath: uploads + "/a.mp4")
                playlist = #"{"directory": "uploads"}"#
            }
            try #"""
                {"playlist": \#(playlist), "loop": true,
                 "http": {"listen": "127.0.0.1:0", "tokens": "tokens", "healthz": true, "maxConnectionsPerClient": 8, "idleTimeout": 3,
                          "requestsPerSecond": 1000, "dashboard": "\#(Command.repository)/dashboard", "uploads": {"directory": "uploads", "maxBytes": 1000000, "minFreeBytes": 0}\#(extra)}}
                """#.write(toFile: configPath, atomically: true, encoding: .utf8)
            process.executableURL = binary
            process.arguments = ["--config", configPath, "--output", "headless", "--mode", "320x180@60", "--clock", "real",
                                 "--exit-after", "\(seconds)", "--trace", trace, "--socket", "none"]
            process.standardOutput = output
            process.standardError = output
            output.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                self?.lock.withLock { self?.captured.append(data) }
            }
            try process.run()
            let deadline = Date(timeIntervalSinceNow: 20)
            while port == 0 && Date() < deadline && process.end == nil {
                if let line = log.split(separator: "\n").first(where: { $0.contains("msg=\"http API ready\"") }),
                   let field = line.split(separator: " ").first(where: { $0.hasPrefix("port=") }) {
                    port = UInt16(field.dropFirst(5)) ?? 0
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            guard port != 0 else { throw NotBuilt(description: "no http API; log:\n\(log)") }
        }

        var log: String { lock.withLock { String(decoding: captured, as: UTF8.self) } }

        func ask(_ method: String, _ path: String, token: String? = Player.controlToken, body: [UInt8]? = nil,
                 headers: [String: String] = [:], source: String? = nil, timeout: Double = 20) -> RawReply? {
            var fields = headers
            if let token { fields["Authorization"] = "Bearer \(token)" }
            return RawHTTP.request(port: port, source: source, method, path, headers: fields, body: body, timeout: timeout)
        }

        func json(_ path: String) throws -> JSONValue {
            let reply = try #require(ask("GET", path), "GET \(path)")
            return try JSONParser.parse(reply.text)
        }

        /// Waits until the player has shown `seconds` of its item (time-pos, asked over HTTP).
        func waitForPlaying(_ seconds: Double = 0.3, timeout: Double = 15) -> Bool {
            waitFor(timeout) {
                guard let reply = ask("GET", "/api/v1/properties/time-pos", token: Player.viewToken), reply.status == 200,
                      let t = (try? JSONParser.parse(reply.text))?["data"]?.numberValue else { return false }
                return t >= seconds
            }
        }

        /// The trace's frame lines (the trace is written in blocks: whole only once the player stopped).
        func frames() throws -> [[String: Any]] {
            // The last line may be half written.
            try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["type"] as? String == "frame" }
        }

        /// Waits until `condition` holds (at most `timeout` s).
        func waitFor(_ timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline {
                if try condition() { return true }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }

        func stop() -> Int32 {
            if process.end == nil { process.interrupt() }
            return process.waitForEnd(timeout: 10)?.status ?? SIGKILL
        }

        deinit { if process.end == nil { process.terminate() } }
    }

    // MARK: OpenAPI

    /// A JSON value against an OpenAPI schema (the parts docs/openapi.json uses: $ref, type,
    /// nullable, required, properties, items, enum); the problems found.
    static func validate(_ value: Any, _ schema: [String: Any], _ document: [String: Any], at path: String = "$") -> [String] {
        if let ref = schema["$ref"] as? String {
            var target: Any = document
            for part in ref.dropFirst(2).split(separator: "/") { target = (target as? [String: Any])?[String(part)] as Any }
            return validate(value, target as? [String: Any] ?? [:], document, at: path)
        }
        if value is NSNull { return schema["nullable"] as? Bool == true || schema["type"] == nil ? [] : ["\(path): null"] }
        var problems: [String] = []
        switch schema["type"] as? String {
        case "object"?:
            guard let object = value as? [String: Any] else { return ["\(path): not an object"] }
            for key in schema["required"] as? [String] ?? [] where object[key] == nil { problems.append("\(path).\(key): missing") }
            for (key, sub) in schema["properties"] as? [String: [String: Any]] ?? [:] {
                if let v = object[key] { problems += validate(v, sub, document, at: "\(path).\(key)") }
            }
        case "array"?:
            guard let array = value as? [Any] else { return ["\(path): not an array"] }
            if let items = schema["items"] as? [String: Any] {
                for (i, v) in array.enumerated() { problems += validate(v, items, document, at: "\(path)[\(i)]") }
            }
        case "string"?: if !(value is String) { problems.append("\(path): not a string") }
        case "boolean"?: if (value as? NSNumber).map({ String(cString: $0.objCType) != "c" }) ?? true { problems.append("\(path): not a boolean") }
        case "integer"?: if (value as? NSNumber).map({ $0.doubleValue != $0.doubleValue.rounded() }) ?? true { problems.append("\(path): not an integer") }
        case "number"?: if !(value is NSNumber) { problems.append("\(path): not a number") }
        default: break
        }
        if let choices = schema["enum"] as? [String], let s = value as? String, !choices.contains(s) { problems.append("\(path): \(s) not in enum") }
        return problems
    }

    /// Every operation of docs/openapi.json is one the server routes (and the other way round);
    /// each answers, with a control token, a status the document lists, with a body its schema
    /// takes; each but /healthz answers 401 without a token, as documented.
    @Test func theOpenAPIDocumentDescribesTheServersRealAnswers() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Command.repository + "/docs/openapi.json"))) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, ops in ops.keys.map { "\($0.uppercased()) \(path)" } })
        let routed = Set(RemoteAPI.routes.map { "\($0.method) \($0.pattern)" })
        #expect(documented == routed, "documented only: \(documented.subtracting(routed)); routed only: \(routed.subtracting(documented))")

        let player = try Player()
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        let currentConfig = try String(contentsOfFile: player.configPath, encoding: .utf8)
        var checked = 0
        for (path, operations) in paths.sorted(by: { $0.key < $1.key }) {
            for (method, raw) in operations {
                let operation = try #require(raw as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                var concrete = path
                var query: [String] = []
                for parameter in operation["parameters"] as? [[String: Any]] ?? [] {
                    let name = try #require(parameter["name"] as? String), example = "\(try #require(parameter["example"], "\(path): \(name) has no example"))"
                    if parameter["in"] as? String == "query" { query.append("\(name)=\(example)") } else { concrete = concrete.replacingOccurrences(of: "{\(name)}", with: example) }
                }
                if !query.isEmpty { concrete += "?" + query.joined(separator: "&") }
                var body: [UInt8]?
                if let content = (operation["requestBody"] as? [String: Any])?["content"] as? [String: [String: Any]] {
                    if let example = content["application/json"]?["example"] {
                        body = Array(try JSONSerialization.data(withJSONObject: example, options: .fragmentsAllowed))
                    } else if path == "/api/v1/config" {
                        body = Array(currentConfig.utf8)
                    } else {
                        body = Array("not really a clip".utf8)
                    }
                }
                let label = "\(method.uppercased()) \(concrete)"
                let reply = try #require(player.ask(method.uppercased(), concrete, body: body, timeout: path.hasSuffix("/events") ? 2 : 40), "\(label)")
                let documentedStatus = responses[String(reply.status)] as? [String: Any]
                #expect(documentedStatus != nil, "\(label): \(reply.status) is not documented: \(reply.text.prefix(200))")
                var response = documentedStatus ?? [:]
                if let ref = response["$ref"] as? String {
                    response = ((document["components"] as? [String: Any])?["responses"] as? [String: Any])?[String(ref.split(separator: "/").last!)] as? [String: Any] ?? [:]
                }
                let content = response["content"] as? [String: [String: Any]] ?? [:]
                let type = reply.headers["content-type"]?.split(separator: ";").first.map(String.init) ?? ""
                #expect(content.isEmpty || content[type] != nil, "\(label): content type \(type), documented \(content.keys)")
                if type == "application/json", let schema = content[type]?["schema"] as? [String: Any] {
                    let value = try JSONSerialization.jsonObject(with: Data(reply.body), options: .fragmentsAllowed)
                    let problems = Self.validate(value, schema, document)
                    #expect(problems.isEmpty, "\(label): \(problems) in \(reply.text.prefix(300))")
                }
                if type == "image/png" { #expect(reply.body.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(label): not a PNG") }
                if type == "text/event-stream" { #expect(reply.text.hasPrefix(": marquee events"), "\(label): \(reply.text.prefix(100))") }
                // Without a token: 401, documented (the health check alone is open).
                let anonymous = try #require(player.ask(method.uppercased(), concrete, token: nil, body: body), "\(label) without a token")
                if operation["x-role"] as? String == "none" {
                    #expect(anonymous.status == 200, "\(label) without a token: \(anonymous.status)")
                } else {
                    #expect(anonymous.status == 401 && responses["401"] != nil, "\(label) without a token: \(anonymous.status)")
                }
                checked += 1
            }
        }
        #expect(checked == routed.count)

        // A screenshot scaled down to a thumbnail: the PNG's header says its size; a bad width is refused.
        let thumbnail = try #require(player.ask("GET", "/api/v1/outputs/headless-0/screenshot?width=32", timeout: 40))
        let png = thumbnail.body
        #expect(thumbnail.status == 200 && png.count > 24, "\(thumbnail.status): \(thumbnail.text.prefix(200))")
        if png.count > 24 {
            let width = png[16..<20].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == 32, "the thumbnail is \(width) pixels wide")
        }
        let refused = try #require(player.ask("GET", "/api/v1/outputs/headless-0/screenshot?width=wide"))
        #expect(refused.status == 400 && refused.text.contains("width"), "\(refused.status): \(refused.text)")
        #expect(player.process.end == nil, "log:\n\(player.log)")
    }

    // MARK: Metrics

    /// /metrics is read by Prometheus' own Python parser; its counters never go down between
    /// scrapes, and while paused the frames shown are the trace's frames.
    @Test func metricsParseWithPrometheusParserAndMatchTheTrace() throws {
        // Debian's python3 (make test installs python3-prometheus-client for it), not another on PATH.
        let probe = try Command.run("/usr/bin/python3", ["-c", "import prometheus_client.parser"])
        try #require(probe.status == 0, "python3-prometheus-client is missing (make test installs it): \(probe.errorText)")
        let player = try Player()
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        func scrape() throws -> [String: Double] {
            let reply = try #require(player.ask("GET", "/metrics", token: Player.viewToken))
            #expect(reply.status == 200)
            let parser = """
            import sys, json
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(sys.stdin.read()):
                for s in family.samples:
                    key = s.name + ''.join('{%s=%s}' % kv for kv in sorted(s.labels.items()))
                    out[key] = s.value
            print(json.dumps(out))
            """
            let input = folderFile(player, "metrics.txt", reply.body)
            let parsed = try Command.run("sh", ["-c", "/usr/bin/python3 -c \"$0\" < \"$1\"", parser, input])
            try #require(parsed.status == 0, "the parser refused /metrics: \(parsed.errorText)\n\(reply.text)")
            return try #require(try JSONSerialization.jsonObject(with: parsed.output) as? [String: Double])
        }
        let first = try scrape()
        #expect(first["marquee_up"] == 1)
        let health = try player.json("/api/v1/health")["status"]?.stringValue ?? "?"
        #expect(first.filter { $0.key.hasPrefix("marquee_health{") }.values.reduce(0, +) == 1)
        #expect(first["marquee_health{state=\(health)}"] == 1 || health == "stalled", "\(health): \(first)")
        #expect((first["marquee_frames_shown_total"] ?? 0) > 0)
        #expect(player.ask("PUT", "/api/v1/properties/pause", body: Array("true".utf8))?.status == 200)
        // Paused: the count stands still (two scrapes 0.5 s apart agree).
        var shown = -1.0
        let settled = try player.waitFor(5) {
            let before = try scrape()["marquee_frames_shown_total"] ?? -1
            Thread.sleep(forTimeInterval: 0.5)
            shown = try scrape()["marquee_frames_shown_total"] ?? -2
            return before == shown
        }
        #expect(settled)
        let second = try scrape()
        for (key, value) in first where key.hasSuffix("_total") || key.contains("_total{") {
            #expect((second[key] ?? -1) >= value, "\(key) went from \(value) to \(second[key] ?? -1)")
        }
        #expect(second["marquee_paused"] == 1)
        #expect((second["marquee_uptime_seconds"] ?? 0) > (first["marquee_uptime_seconds"] ?? 0))
        // The trace, whole once the player has stopped, has as many frames as were counted.
        _ = player.stop()
        let traced = try player.frames().count
        #expect(Double(traced) == shown, "frames shown: metrics \(shown), trace \(traced)")
    }

    /// The event stream carries the socket's events: the 1 s clip's loop gives an end-file and a
    /// start-file each second, and a seek its seek event, each a JSON `data:` message.
    @Test func theEventStreamCarriesTheSocketsEvents() throws {
        let player = try Player()
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        let stream = try #require(RawConnection(port: player.port))
        stream.send("GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Player.viewToken)\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(player.ask("POST", "/api/v1/command", body: Array(#"{"command":["seek",0.2,"absolute"]}"#.utf8))?.status == 200)
        let reply = try #require(RawReply(stream.readAll(timeout: 2.5)))
        #expect(reply.status == 200 && reply.headers["content-type"] == "text/event-stream")
        let events = reply.text.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap { try? JSONParser.parse(String($0.dropFirst(6))) }
        let names = events.compactMap { $0["event"]?.stringValue }
        #expect(names.contains("start-file") && names.contains("end-file") && names.contains("seek"), "\(names)")
        #expect(events.count == reply.text.split(separator: "\n").filter { $0.hasPrefix("data: ") }.count, "every message is JSON")
    }

    /// A token file holding a token instead of its hash is refused by --check-config with the key,
    /// the file and the line; a player started with it plays on without the API and says why.
    @Test func aBadTokenFileIsNamedAndPlaybackGoesOnWithoutTheAPI() throws {
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marquee").path
        let folder = TestMedia.folder + "/badtokens-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "# ops\ncontrol my-secret-token ops\n".write(toFile: folder + "/tokens", atomically: true, encoding: .utf8)
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let config = folder + "/marquee.json"
        try #"{"playlist": [{"uri": "\#(clip)"}], "http": {"listen": "127.0.0.1:0", "tokens": "tokens"}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let check = try Command.run(binary, ["--config", config, "--check-config"], timeout: 60)
        #expect(check.status == 2)
        #expect(check.errorText.contains("http.tokens: \(folder)/tokens: line 2: the token must be given as sha256:"), "\(check.errorText)")
        let run = try Command.run(binary, ["--config", config, "--output", "headless", "--mode", "320x180@60", "--clock", "virtual",
                                           "--exit-after", "2", "--socket", "none"], mergeErrors: true, timeout: 60)
        #expect(run.status == 0)
        #expect(run.text.contains("msg=\"no HTTP API\"") && run.text.contains("line 2"), "\(run.text.suffix(2000))")
    }

    // MARK: Config and uploads

    /// A broken config put over HTTP is refused with its JSON paths; the file and what plays stay
    /// as they were. A valid one replaces the file and is reloaded.
    @Test func aBadConfigIsRefusedWithItsPathsAndTheOldKeepsPlaying() throws {
        let player = try Player()
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        let before = try String(contentsOfFile: player.configPath, encoding: .utf8)
        let bad = Array(#"{"playlist": [{"uri": "a.mp4", "start": -1}], "display": {"rotation": 45}}"#.utf8)
        let refused = try #require(player.ask("PUT", "/api/v1/config", body: bad))
        #expect(refused.status == 422)
        let problems = try JSONParser.parse(refused.text)["problems"]
        let paths: [String] = { if case .array(let list)? = problems { return list.compactMap { $0["path"]?.stringValue } } else { return [] } }()
        #expect(paths.contains("playlist[0].start") && paths.contains("display.rotation"), "\(refused.text)")
        #expect(try String(contentsOfFile: player.configPath, encoding: .utf8) == before)
        #expect(try player.json("/api/v1/config")["playlist"] == JSONParser.parse(before)["playlist"])
        #expect(player.waitForPlaying(0.5), "still playing")
        // A valid one: two entries now.
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let good = before.replacingOccurrences(of: #""playlist": [{"uri": "\#(clip)"}]"#, with: #""playlist": [{"uri": "\#(clip)"}, {"uri": "\#(clip)"}]"#)
        #expect(good != before)
        let accepted = try #require(player.ask("PUT", "/api/v1/config", body: Array(good.utf8)))
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(player.waitFor(5) { (try? player.json("/api/v1/properties/playlist-count")["data"]?.numberValue) == 2 })
    }

    /// An upload into a folder playlist plays once whole; its temporary file never shows in the
    /// playlist.
    @Test func anUploadedClipPlays() throws {
        let player = try Player(http: "")
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let folderConfig = #"{"playlist": {"directory": "uploads"}, "http": \#(try player.json("/api/v1/config")["http"]!.encoded)}"#
        // The folder first holds one clip; the config switches to it.
        try FileManager.default.copyItem(atPath: clip, toPath: player.uploads + "/a.mp4")
        #expect(player.ask("PUT", "/api/v1/config", body: Array(folderConfig.utf8))?.status == 200)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: clip)))
        let stored = try #require(player.ask("PUT", "/api/v1/media/b.mp4", body: bytes))
        #expect(stored.status == 201, "\(stored.text)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: player.uploads).sorted() == ["a.mp4", "b.mp4"])
        // Read again at the next loop pass.
        let playing = player.waitFor(10) {
            guard let list = try? player.json("/api/v1/playlist")["data"], case .array(let entries) = list else { return false }
            return entries.contains { $0["filename"]?.stringValue?.hasSuffix("b.mp4") == true && $0["status"]?.stringValue != "failed" }
                && (try? player.json("/api/v1/properties/filename")["data"]?.stringValue) == "b.mp4"
        }
        #expect(playing, "log:\n\(player.log)")
    }

    func folderFile(_ player: Player, _ name: String, _ bytes: [UInt8]) -> String {
        let path = player.folder + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }
}
