import Diagnostics
import Foundation
import HTTPServer
import Kiosk
import Synchronization
import SystemCalls

/// The HTTP API (`/api/v1`, `/metrics`, `/healthz`) over the same controller as the control
/// socket: properties and commands go through a `ControlSession`, exactly as a socket client's
/// request lines do. Every request is rate-limited per client, checked for its Host and Origin,
/// then for its token and role, before anything else reads it.
public final class RemoteAPI: HTTPHandler, @unchecked Sendable {
    // @unchecked: the mutable parts are Mutexes; the rest is set in init.
    public struct Context: Sendable {
        public var controller: any ControlHandler
        public var status: KioskStatus
        /// The config file `GET`/`PUT /api/v1/config` read and replace; nil: none (embedded default).
        public var configPath: String?
        public var settings: HTTPSettings
        public var tokens: TokenStore
        public init(controller: any ControlHandler, status: KioskStatus, configPath: String?, settings: HTTPSettings, tokens: TokenStore) {
            self.controller = controller
            self.status = status
            self.configPath = configPath
            self.settings = settings
            self.tokens = tokens
        }
    }

    let context: Context
    let logger: Logger
    let guardrail: RequestGuard
    let events = EventHub()
    let uploads: UploadPolicy?
    private let limiter: Mutex<RateLimiter>
    let counters = Mutex(MetricsCounters())
    private let nextClient = Atomic<Int>(1)
    /// Seconds on the monotonic clock (the rate limiter's time).
    private let clock: @Sendable () -> Double

    public init(_ context: Context, logger: Logger, clock: @escaping @Sendable () -> Double = RemoteAPI.monotonicSeconds) {
        self.context = context
        self.logger = logger
        self.clock = clock
        guardrail = RequestGuard(allowedHosts: context.settings.allowedHosts)
        limiter = Mutex(RateLimiter(rate: context.settings.requestsPerSecond))
        uploads = context.settings.uploadDirectory.map {
            UploadPolicy(directory: $0, maxBytes: context.settings.maxUploadBytes, minFreeBytes: context.settings.minFreeBytes)
        }
    }

    /// An event of the player, for `/api/v1/events` and the metrics.
    public func broadcast(_ event: JSONValue) {
        counters.withLock { $0.observe(event: event) }
        events.broadcast(event)
    }

    /// A new picture was shown.
    public func pictureShown() {
        counters.withLock { $0.picturesShown += 1 }
    }

    /// Health, sampled (stalls are counted as health turns stalled).
    public func sampleHealth() {
        let health = context.status.health().status
        counters.withLock { $0.observe(health: health) }
    }

    // MARK: Routing

    /// The routes: method, path pattern (`{name}` one segment), the role it needs (nil: none).
    static let routes: [(method: String, pattern: String, role: Role?)] = [
        ("GET", "/healthz", nil),
        ("GET", "/", nil),
        ("GET", "/ui/{name}", nil),
        ("GET", "/metrics", .view),
        ("GET", "/api/v1/status", .view),
        ("GET", "/api/v1/health", .view),
        ("GET", "/api/v1/properties", .view),
        ("GET", "/api/v1/properties/{name}", .view),
        ("PUT", "/api/v1/properties/{name}", .control),
        ("POST", "/api/v1/command", .view),  // the command decides: get_property is view, the rest control
        ("GET", "/api/v1/playlist", .view),
        ("GET", "/api/v1/schedule", .view),
        ("GET", "/api/v1/outputs", .view),
        ("GET", "/api/v1/outputs/{name}/screenshot", .view),
        ("GET", "/api/v1/events", .view),
        ("GET", "/api/v1/config", .control),
        ("PUT", "/api/v1/config", .control),
        ("PUT", "/api/v1/media/{name}", .control),
    ]

    /// The route `method path` matches, with its `{name}`; nil for none (and whether the path is
    /// known under another method).
    static func route(_ method: String, _ path: String) -> (index: Int, name: String?)?? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var pathKnown = false
        for (index, route) in routes.enumerated() {
            let pattern = route.pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard pattern.count == segments.count else { continue }
            var name: String?
            var matches = true
            for (p, s) in zip(pattern, segments) {
                if p == "{name}" { if s.isEmpty { matches = false } else { name = String(s) } } else if p != s { matches = false }
            }
            guard matches else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") { return .some((index, name)) }
            pathKnown = true
        }
        return pathKnown ? .some(nil) : nil
    }

    public func begin(_ request: HTTPRequest) -> HTTPDecision {
        let decision = decide(request)
        if case .respond(let response) = decision { count(response.status) }
        return decision
    }

    private func count(_ status: Int) {
        let key = "\(min(5, max(2, status / 100)))xx"
        counters.withLock { $0.requests[key, default: 0] += 1 }
    }

    private func decide(_ request: HTTPRequest) -> HTTPDecision {
        let now = clock()
        guard limiter.withLock({ $0.allow(request.client, now: now) }) else {
            return .respond(error(429, "too many requests from \(request.client) (http.requestsPerSecond: \(context.settings.requestsPerSecond))",
                                  headers: [("Retry-After", "1")]))
        }
        if let refusal = guardrail.refusal(request) {
            logger.warning("http: request refused", ["method": request.method, "path": String(request.path.prefix(128)), "client": request.client, "reason": refusal])
            return .respond(error(403, refusal))
        }
        guard let found = Self.route(request.method, request.path) else { return .respond(error(404, "no such endpoint: \(request.path.prefix(128))")) }
        guard let (index, name) = found else {
            return .respond(error(405, "\(request.method) is not allowed on \(request.path.prefix(128))"))
        }
        let route = Self.routes[index]
        if route.pattern == "/healthz" && !context.settings.healthz {
            return .respond(error(404, "/healthz is off (http.healthz)"))
        }
        var role: Role?
        if let needed = route.role {
            guard let entry = context.tokens.authenticate(authorization: request[header: "authorization"]) else {
                return .respond(error(401, "a bearer token is needed (Authorization: Bearer TOKEN)", headers: [("WWW-Authenticate", "Bearer")]))
            }
            guard entry.role >= needed else {
                return .respond(error(403, "the \(entry.role.rawValue) token \"\(entry.name)\" may not \(request.method) \(route.pattern); it needs a \(needed.rawValue) token"))
            }
            role = entry.role
        }
        switch (route.method, route.pattern) {
        case (_, "/"):
            return .respond(dashboardFile("index.html"))
        case (_, "/ui/{name}"):
            return .respond(dashboardFile(name ?? ""))
        case (_, "/healthz"):
            let health = context.status.health().status
            return .respond(.text(Self.healthy(health) ? 200 : 503, health))
        case (_, "/metrics"):
            return .respond(metrics())
        case (_, "/api/v1/status"):
            return .respond(json(200, status()))
        case (_, "/api/v1/health"):
            let health = context.status.health()
            return .respond(json(Self.healthy(health.status) ? 200 : 503,
                                 ["status": .string(health.status), "reasons": .array(health.reasons.map { .string($0) })]))
        case (_, "/api/v1/properties"):
            return .respond(json(200, .array(context.controller.propertyNames.map { .string($0) })))
        case ("GET", "/api/v1/properties/{name}"):
            return .respond(command(["get_property", .string(name ?? "")]))
        case ("PUT", "/api/v1/properties/{name}"):
            return body(request) { [self] value in command(["set_property", .string(name ?? ""), value]) }
        case (_, "/api/v1/command"):
            return body(request) { [self] value in
                guard case .array(let words)? = value["command"], let first = words.first?.stringValue else {
                    return error(400, "expected {\"command\": [NAME, ARGUMENTS...]}")
                }
                if ["observe_property", "unobserve_property"].contains(first) {
                    return error(400, "\(first) is for the socket; GET /api/v1/events streams events")
                }
                if !Self.viewCommands.contains(first) && role != .control {
                    return error(403, "\(first) needs a control token")
                }
                return command(words)
            }
        case (_, "/api/v1/playlist"):
            return .respond(command(["get_property", "playlist"]))
        case (_, "/api/v1/schedule"):
            return .respond(command(["get_property", "schedule"]))
        case (_, "/api/v1/outputs"):
            return .respond(command(["get_property", "outputs"]))
        case (_, "/api/v1/outputs/{name}/screenshot"):
            var width: Int?
            if let text = request.query["width"] {
                guard let n = Int(text), (16...7680).contains(n) else {
                    return .respond(error(400, "width: \"\(text.prefix(32))\" is not a whole number of pixels from 16 to 7680"))
                }
                width = n
            }
            return .respond(screenshot(output: name ?? "", maxWidth: width))
        case (_, "/api/v1/events"):
            guard let stream = events.subscribe() else { return .respond(error(503, "at most \(events.maxClients) event streams at once")) }
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")], body: .stream(stream)))
        case ("GET", "/api/v1/config"):
            return .respond(readConfig())
        case ("PUT", "/api/v1/config"):
            return rawBody(request) { [self] bytes in putConfig(bytes) }
        case (_, "/api/v1/media/{name}"):
            return upload(request, name: name ?? "")
        default:
            return .respond(error(404, "no such endpoint"))
        }
    }

    /// Commands a `view` token may send: they only read.
    static let viewCommands: Set<String> = ["get_property", "get_property_string", "get_version", "client_name"]

    /// 200 for states that are not failures (an uptime monitor's "up").
    static func healthy(_ status: String) -> Bool { ["ok", "degraded", "off"].contains(status) }

    // MARK: Answers

    func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", Array((value.encoded + "\n").utf8),
                     headers: [("Cache-Control", "no-store")] + headers)
    }

    func error(_ status: Int, _ message: String, headers: [(String, String)] = [], extra: [(key: String, value: JSONValue)] = []) -> HTTPResponse {
        json(status, .object([("error", .string(message))] + extra), headers: headers)
    }

    /// A JSON body handed to `handle` once parsed.
    private func body(_ request: HTTPRequest, _ handle: @escaping (JSONValue) -> HTTPResponse) -> HTTPDecision {
        rawBody(request) { [self] bytes in
            do {
                return handle(try JSONParser.parse(String(decoding: bytes, as: UTF8.self)))
            } catch {
                return self.error(400, "the body is not JSON: \(error)")
            }
        }
    }

    /// A body of at most `http.maxBodyBytes`, handed to `handle` once whole.
    private func rawBody(_ request: HTTPRequest, _ handle: @escaping ([UInt8]) -> HTTPResponse) -> HTTPDecision {
        let limit = context.settings.maxBodyBytes
        if let length = request[header: "content-length"].flatMap({ Int($0) }), length > limit {
            return .respond(error(413, "the request body (\(length) bytes) is over http.maxBodyBytes (\(limit))"))
        }
        return .receive(BufferedBody(limit: limit) { [self] bytes in
            let response = handle(bytes)
            count(response.status)
            return response
        })
    }

    /// Runs `words` as a control-socket request through a `ControlSession`: the socket's own code.
    func command(_ words: [JSONValue]) -> HTTPResponse {
        let session = ControlSession(clientID: nextClient.add(1, ordering: .relaxed).oldValue, handler: context.controller)
        let line = Array(JSONValue.object([("command", .array(words))]).encoded.utf8)
        guard let reply = session.reply(to: line), let value = try? JSONParser.parse(String(decoding: reply, as: UTF8.self)) else {
            return error(500, "no reply")
        }
        let status: Int = switch value["error"]?.stringValue {
        case "success": 200
        case ControlError.propertyNotFound.replyText: 404
        case ControlError.propertyUnavailable.replyText: 409
        case ControlError.commandFailed("").replyText: 409
        default: 400
        }
        var members: [(key: String, value: JSONValue)] = []
        if case .object(let fields) = value { members = fields.filter { $0.key != "request_id" } }
        return json(status, .object(members))
    }

    private func status() -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        for name in ["path", "playlist-pos", "playlist-count", "pause", "time-pos", "duration", "display-power", "health", "outputs", "schedule"] {
            members.append((name, (try? context.controller.property(name)) ?? .null))
        }
        return .object(members)
    }

    private func screenshot(output: String, maxWidth: Int?) -> HTTPResponse {
        // The PNG as the player made it, where the handler offers it (no base64 and JSON of
        // megabytes on the way); else through the socket's command.
        do {
            if let png = try context.controller.screenshotPNG(output: output, maxWidth: maxWidth) {
                return HTTPResponse(status: 200, contentType: "image/png", Array(png), headers: [("Cache-Control", "no-store")])
            }
        } catch {
            // As the socket's reply would say it (`command`).
            var members: [(key: String, value: JSONValue)] = [("error", .string(error.replyText))]
            if case .commandFailed(let detail) = error { members.append(("detail", .string(detail))) }
            return json(members.count == 2 ? 409 : 400, .object(members))
        }
        let reply = command(["screenshot", .string(output)])
        guard reply.status == 200, let bytes = reply.bodyBytes, let value = try? JSONParser.parse(String(decoding: bytes, as: UTF8.self)),
              let base64 = value["data"]?["data"]?.stringValue, let png = Data(base64Encoded: base64) else {
            return reply.status == 200 ? error(500, "the screenshot came back without a picture") : reply
        }
        return HTTPResponse(status: 200, contentType: "image/png", Array(png), headers: [("Cache-Control", "no-store")])
    }

    private func metrics() -> HTTPResponse {
        let snapshot = context.status.snapshot
        let health = context.status.health().status
        var delay: Double?
        if case .float(let d)? = try? context.controller.property("audio-delay") { delay = d }
        if case .number(let d)? = try? context.controller.property("audio-delay") { delay = d }
        let text = counters.withLock { metricsText(snapshot, health: health, counters: &$0, audioDelay: delay) }
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", Array(text.utf8))
    }

    /// The dashboard's content types, by extension: nothing else is served.
    static let dashboardTypes = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                                 "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png"]

    /// A file of `http.dashboard`: plain names only, known types only; a page may load only this
    /// server's scripts and styles, and may not be framed by another site.
    private func dashboardFile(_ name: String) -> HTTPResponse {
        guard let folder = context.settings.dashboard else { return error(404, "no dashboard (http.dashboard)") }
        let type = Self.dashboardTypes[(name as NSString).pathExtension.lowercased()]
        guard UploadPolicy.nameProblem(name) == nil, let type, let bytes = try? RegularFile.read(folder + "/" + name, limit: 4 << 20) else {
            return error(404, "no dashboard file \(name.prefix(64))")
        }
        return HTTPResponse(status: 200, contentType: type, bytes, headers: [
            ("Content-Security-Policy", "default-src 'self'; img-src 'self' blob:; frame-ancestors 'none'"),
            ("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache"),
        ])
    }

    private func readConfig() -> HTTPResponse {
        guard let path = context.configPath else { return error(409, "started with the embedded default config: there is no file") }
        do {
            return HTTPResponse(status: 200, contentType: "application/json", try RegularFile.read(path, limit: largestConfigFile))
        } catch {
            return self.error(500, "cannot read \(path): \(error.reason)")
        }
    }

    /// Validates the new config as a reload would; only a valid one replaces the file (atomically)
    /// and is reloaded. A bad one is refused with its problems' JSON paths; the old keeps playing.
    private func putConfig(_ bytes: [UInt8]) -> HTTPResponse {
        guard let path = context.configPath else { return error(409, "started with the embedded default config: there is no file to replace") }
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            _ = try KioskConfig.parse(text, source: "PUT /api/v1/config", baseDirectory: (path as NSString).deletingLastPathComponent)
        } catch {
            let problems: [JSONValue] = error.problems.map { ["path": .string($0.path), "message": .string($0.message)] }
            return self.error(422, "the config is refused; the old one keeps playing", extra: [("problems", .array(problems))])
        }
        let temporary = "\(path).upload-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: [.posixPermissions: 0o640]) else {
            return error(500, "cannot write next to \(path) (is its folder writable? see docs/http.md)")
        }
        guard rename(temporary, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary)
            return error(500, "cannot replace \(path): \(why)")
        }
        logger.info("http: config replaced; reloading", ["config": path])
        let reload = command(["reload"])
        return reload.status == 200 ? json(200, ["reloaded": true]) : reload
    }

    private func upload(_ request: HTTPRequest, name: String) -> HTTPDecision {
        guard let uploads else { return .respond(error(409, "uploads are off: set http.uploads.directory")) }
        switch uploads.begin(name: name, declaredLength: request[header: "content-length"]) {
        case .failure(let refused):
            logger.warning("http: upload refused", ["client": request.client, "reason": refused.message])
            return .respond(error(refused.status, refused.message))
        case .success(let receiver):
            receiver.respond = { [self] result in
                let response: HTTPResponse
                switch result {
                case .success(let stored):
                    logger.info("http: upload stored", ["file": stored.name, "bytes": "\(stored.bytes)"])
                    response = json(201, ["name": .string(stored.name), "bytes": .number(Double(stored.bytes))])
                case .failure(let refused):
                    logger.warning("http: upload refused", ["client": request.client, "reason": refused.message])
                    response = error(refused.status, refused.message)
                }
                count(response.status)
                return response
            }
            return .receive(receiver)
        }
    }
}

extension RemoteAPI {
    private static let origin = ContinuousClock.now
    /// Seconds since the first use, on the monotonic clock.
    public static let monotonicSeconds: @Sendable () -> Double = { (ContinuousClock.now - origin).seconds }
}
