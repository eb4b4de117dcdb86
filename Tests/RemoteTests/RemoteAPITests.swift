import Foundation
import HTTPServer
@testable import Kiosk
@testable import Remote
import Playback
import Synchronization
import Testing

/// The API's decisions, without a server: requests handed to `RemoteAPI.begin` over a real
/// `KioskController` whose player is a recording closure.
@Suite struct RemoteAPITests {
    final class Harness: @unchecked Sendable {
        let status = KioskStatus()
        final class Recorder: Sendable { let commands = Mutex<[KioskCommand]>([]) }
        let recorder = Recorder()
        var performed: [KioskCommand] { recorder.commands.withLock { $0 } }
        let api: RemoteAPI
        let folder: String

        init(healthz: Bool = false, rate: Double = 1000, uploads: Bool = false) throws {
            folder = NSTemporaryDirectory() + "remote-api-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            status.update {
                $0.items = [KioskStatus.Item(uri: "a.mp4", path: "/m/a.mp4"), KioskStatus.Item(uri: "b.mp4", path: "/m/b.mp4")]
                $0.position = 0
                $0.currentPath = "/m/a.mp4"
            }
            let recorder = self.recorder
            let controller = KioskController(status: status) { command in
                recorder.commands.withLock { $0.append(command) }
                return .done
            }
            var settings = HTTPSettings()
            settings.healthz = healthz
            settings.requestsPerSecond = rate
            if uploads { settings.uploadDirectory = folder }
            let tokens = try TokenStore(parsing: TokenStore.line(role: .view, token: "v", name: "viewer") + "\n"
                                        + TokenStore.line(role: .control, token: "c", name: "ops"))
            // The rate limiter's clock stands still: only the burst is allowed.
            api = RemoteAPI(.init(controller: controller, status: status, configPath: nil, settings: settings, tokens: tokens),
                            logger: Logger(level: .error, sink: { _ in }), clock: { 0 })
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }

        /// The response to `method path` with `token` and `body` (fed through the receiver).
        func ask(_ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: [String: String] = [:]) -> HTTPResponse {
            var fields = headers
            fields["host"] = fields["host"] ?? "127.0.0.1:8080"
            if let token { fields["authorization"] = "Bearer \(token)" }
            if let body { fields["content-length"] = "\(body.utf8.count)" }
            switch api.begin(HTTPRequest(method: method, path: path, headers: fields, client: "127.0.0.1")) {
            case .respond(let response): return response
            case .receive(let receiver):
                let bytes = Array((body ?? "").utf8)
                if let refused = bytes.withUnsafeBytes({ receiver.receive($0) }) { return refused }
                return receiver.finish()
            }
        }
    }

    static func text(_ r: HTTPResponse) -> String { String(decoding: r.bodyBytes ?? [], as: UTF8.self) }

    /// Every route: no token 401, a wrong token 401, a view token on a control route 403.
    @Test func everyEndpointNeedsATokenAndControlOnesAControlToken() throws {
        let h = try Harness(healthz: true, uploads: true)
        for route in RemoteAPI.routes where route.role != nil {
            let path = route.pattern.replacingOccurrences(of: "{name}", with: "x")
            #expect(h.ask(route.method, path).status == 401, "\(route.method) \(path)")
            #expect(h.ask(route.method, path, token: "guess").status == 401, "\(route.method) \(path)")
            if route.role == .control {
                let r = h.ask(route.method, path, token: "v", body: "{}")
                #expect(r.status == 403, "\(route.method) \(path): \(Self.text(r))")
            }
        }
        // Commands that change anything need control, whatever the route lets a view token send.
        let next = h.ask("POST", "/api/v1/command", token: "v", body: #"{"command":["playlist-next"]}"#)
        #expect(next.status == 403)
        #expect(h.performed.isEmpty, "nothing reached the player")
        let read = h.ask("POST", "/api/v1/command", token: "v", body: #"{"command":["get_property","playlist-pos"]}"#)
        #expect(read.status == 200 && Self.text(read).contains(#""data":0"#), "\(Self.text(read))")
        // The optional health check alone needs none.
        #expect(h.ask("GET", "/healthz").status == 200)
    }

    @Test func healthzIsOffUnlessTheConfigSaysSo() throws {
        #expect(try Harness().ask("GET", "/healthz").status == 404)
    }

    @Test func propertiesAndCommandsGoThroughTheSocketsCode() throws {
        let h = try Harness()
        let pos = h.ask("GET", "/api/v1/properties/playlist-count", token: "v")
        #expect(pos.status == 200 && Self.text(pos) == "{\"data\":2,\"error\":\"success\"}\n", "\(Self.text(pos))")
        let unknown = h.ask("GET", "/api/v1/properties/no-such", token: "v")
        #expect(unknown.status == 404 && Self.text(unknown).contains("property not found"))
        let set = h.ask("PUT", "/api/v1/properties/pause", token: "c", body: "true")
        #expect(set.status == 200, "\(Self.text(set))")
        let readOnly = h.ask("PUT", "/api/v1/properties/playlist-count", token: "c", body: "3")
        #expect(readOnly.status == 400)
        // `cycle` is the protocol's (ControlSession's), not the controller's: it works here too.
        let cycle = h.ask("POST", "/api/v1/command", token: "c", body: #"{"command":["playlist-play-index",1]}"#)
        #expect(cycle.status == 200, "\(Self.text(cycle))")
        let bad = h.ask("POST", "/api/v1/command", token: "c", body: #"{"command":["playlist-play-index",7]}"#)
        #expect(bad.status == 409 && Self.text(bad).contains("no playlist entry 7"), "\(Self.text(bad))")
        #expect(h.ask("POST", "/api/v1/command", token: "c", body: "{not json").status == 400)
        #expect(h.ask("POST", "/api/v1/command", token: "c", body: #"{"command":["observe_property",1,"pause"]}"#).status == 400)
        #expect(h.performed == [.pause(true), .play(index: 1)])
    }

    @Test func unknownPathsAndMethodsAreTold() throws {
        let h = try Harness()
        #expect(h.ask("GET", "/api/v2/status", token: "c").status == 404)
        #expect(h.ask("DELETE", "/api/v1/status", token: "c").status == 405)
        #expect(h.ask("GET", "/api/v1/properties/", token: "c").status == 404)
    }

    @Test func aRebindingHostOrACrossSitePostIsRefusedBeforeTheToken() throws {
        let h = try Harness()
        #expect(h.ask("GET", "/api/v1/status", token: "c", headers: ["host": "evil.example:8080"]).status == 403)
        let post = h.ask("POST", "/api/v1/command", token: "c", body: #"{"command":["playlist-next"]}"#, headers: ["origin": "http://evil.example"])
        #expect(post.status == 403)
        #expect(h.performed.isEmpty)
    }

    @Test func aClientOverItsRateGets429() throws {
        let h = try Harness(rate: 2)
        let statuses = (0..<6).map { _ in h.ask("GET", "/api/v1/health", token: "v").status }
        #expect(statuses.filter { $0 == 429 }.count == 2, "\(statuses)")
    }

    @Test func anOversizedJSONBodyIsRefusedByItsLength() throws {
        let h = try Harness()
        let r = h.ask("PUT", "/api/v1/properties/pause", token: "c", body: String(repeating: " ", count: 5 << 20) + "true")
        #expect(r.status == 413)
    }

    @Test func uploadsRefuseBadNamesAndLengthsAndKeepNoPartialFile() throws {
        let h = try Harness(uploads: true)
        #expect(h.ask("PUT", "/api/v1/media/..", token: "c", body: "x").status == 400)
        #expect(h.ask("PUT", "/api/v1/media/.x.mp4", token: "c", body: "x").status == 400)
        #expect(h.ask("PUT", "/api/v1/media/big.mp4", token: "c", headers: ["content-length": "\(2 << 30)"]).status == 413)
        let ok = h.ask("PUT", "/api/v1/media/clip.mp4", token: "c", body: "hello")
        #expect(ok.status == 201, "\(Self.text(ok))")
        #expect(try String(contentsOfFile: h.folder + "/clip.mp4", encoding: .utf8) == "hello")
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.folder) == ["clip.mp4"])
    }
}
