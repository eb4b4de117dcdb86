import CMosquitto
import Diagnostics
import Foundation
import Kiosk
import Synchronization

/// A libmosquitto call that failed, with its code's text.
public struct MQTTError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let code: Int32
    public var description: String { "\(call) failed (\(code): \(String(cString: mosquitto_strerror(code))))" }
}

/// `mqtt.passwordFile` could not be used: the file and why.
public struct MQTTPasswordFileError: Error, CustomStringConvertible, Sendable {
    public let file: String
    public let reason: String
    public var description: String { "mqtt.passwordFile \(file): \(reason)" }
}

/// The player on an MQTT broker. Topics under `prefix/id/`: `online` (retained `online`, and
/// `offline` as the last will or at stop), `status` (retained JSON: health, what plays, pause,
/// every `statusInterval` and after each command), `reply` (each command's answer). Commands come
/// on `prefix/id/command`, `prefix/group/G/command` for each group, and `prefix/all/command`:
/// `{"command": [...], "request_id": N}`, run through a `ControlSession` (the socket's code) with
/// the control role's authority: who may publish there is the broker's ACL's to say.
///
/// libmosquitto's thread does the network and reconnects by itself (1 s, backing off to 5 s); the
/// **marquee-mqtt** thread runs commands and publishes status, so neither a slow command nor a dead
/// broker touches playback. Owns the `mosquitto` handle: `stop` disconnects and frees it.
public final class FleetClient: @unchecked Sendable {
    // @unchecked: `handle` is set in init and freed once in `stop` (after libmosquitto's thread
    // ended); the queue and flags are in `work`.
    public let settings: MQTTSettings
    public let id: String
    private let handler: any ControlHandler
    private let status: KioskStatus
    private let logger: Logger
    private var handle: OpaquePointer?
    /// Whether marquee-mqtt was started (set once, in init).
    private var serving = false
    private let work = Monitor(Work())
    private let ended = Latch<Void>()
    private let nextClient = Atomic<Int>(1)

    struct Work {
        var commands: [[UInt8]] = []
        var running = true
        var statusDue = true
        var connected = false
    }

    /// At most this many commands wait; more are dropped (and logged).
    public static let maxWaiting = 64

    private var base: String { "\(settings.prefix)/\(id)" }

    public init(settings: MQTTSettings, controller: any ControlHandler, status: KioskStatus, logger: Logger) throws {
        guard let host = settings.brokerHost else { throw MQTTError(call: "mqtt.broker", code: MOSQ_ERR_INVAL.rawValue) }
        let password = try settings.passwordFile.map(Self.password(from:))
        self.settings = settings
        self.handler = controller
        self.status = status
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        let hostName = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        id = settings.id ?? (MQTTSettings.nameProblem(hostName) == nil ? hostName : "marquee")
        self.logger = logger.with(["mqtt": "\(host):\(settings.brokerPort)", "id": id])
        mosquitto_lib_init()
        guard let made = mosquitto_new("marquee-\(id)", true, Unmanaged.passUnretained(self).toOpaque()) else {
            throw MQTTError(call: "mosquitto_new", code: MOSQ_ERR_NOMEM.rawValue)
        }
        handle = made
        mosquitto_connect_callback_set(made, onConnect)
        mosquitto_disconnect_callback_set(made, onDisconnect)
        mosquitto_message_callback_set(made, onMessage)
        try check("mosquitto_will_set(\(base)/online)") { mosquitto_will_set(made, "\(base)/online", 7, "offline", 1, true) }
        try check("mosquitto_reconnect_delay_set") { mosquitto_reconnect_delay_set(made, 1, 5, true) }
        if let username = settings.username {
            try check("mosquitto_username_pw_set") { mosquitto_username_pw_set(made, username, password) }
        }
        if let ca = settings.tlsCA {
            // Checks the broker's certificate against `ca` and the broker's name (libmosquitto's default).
            try check("mosquitto_tls_set(\(ca))") { mosquitto_tls_set(made, ca, nil, nil, nil, nil) }
        }
        // An unreachable broker is not an error here: libmosquitto's thread keeps trying.
        let connect = mosquitto_connect_async(made, host, Int32(settings.brokerPort), 30)
        if connect != MOSQ_ERR_SUCCESS.rawValue {
            self.logger.warning("mqtt: broker not reachable yet; retrying", ["error": MQTTError(call: "mosquitto_connect_async", code: connect).description])
        }
        try check("mosquitto_loop_start") { mosquitto_loop_start(made) }
        startThread(named: "marquee-mqtt") { [self] in serve() }
        serving = true
    }

    /// The first line of `file` (at most 4 KiB), without its line end.
    static func password(from file: String) throws(MQTTPasswordFileError) -> String {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw MQTTPasswordFileError(file: file, reason: "cannot be opened (\(String(cString: strerror(errno))))")
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: 4097) ?? Data() } catch {
            throw MQTTPasswordFileError(file: file, reason: "cannot be read (\(error.localizedDescription))")
        }
        let line = data.prefix { $0 != 0x0A && $0 != 0x0D }
        guard line.count <= 4096 else { throw MQTTPasswordFileError(file: file, reason: "the first line is longer than 4096 bytes") }
        guard !line.isEmpty else { throw MQTTPasswordFileError(file: file, reason: "the first line is empty: no password") }
        guard let text = String(data: line, encoding: .utf8), !text.contains("\0") else {
            throw MQTTPasswordFileError(file: file, reason: "the password is not UTF-8 text")
        }
        return text
    }

    private func check(_ call: String, _ body: () -> Int32) throws {
        let code = body()
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            if let handle { mosquitto_destroy(handle) }
            handle = nil
            throw MQTTError(call: call, code: code)
        }
    }

    /// Publishes `offline`, disconnects, and frees the handle.
    public func stop() {
        work.update { $0.running = false }
        if serving, ended.wait(timeout: 5) == nil { logger.warning("mqtt: the marquee-mqtt thread did not end within 5 s") }
        guard let handle else { return }
        mosquitto_publish(handle, nil, "\(base)/online", 7, "offline", 1, true)
        mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
        mosquitto_destroy(handle)
        self.handle = nil
    }

    deinit { stop() }

    // MARK: libmosquitto's thread

    fileprivate func connected(_ code: Int32) {
        guard code == 0, let handle else {
            logger.warning("mqtt: the broker refused the connection", ["code": "\(code)", "reason": String(cString: mosquitto_connack_string(code))])
            return
        }
        var topics = ["\(base)/command", "\(settings.prefix)/all/command"]
        topics += settings.groups.map { "\(settings.prefix)/group/\($0)/command" }
        for topic in topics { mosquitto_subscribe(handle, nil, topic, 1) }
        mosquitto_publish(handle, nil, "\(base)/online", 6, "online", 1, true)
        logger.info("mqtt: connected", ["topics": topics.joined(separator: " ")])
        work.update {
            $0.connected = true
            $0.statusDue = true
        }
    }

    fileprivate func disconnected(_ code: Int32) {
        work.update { $0.connected = false }
        if code != 0 { logger.warning("mqtt: connection lost; reconnecting", ["code": "\(code)"]) }
    }

    fileprivate func received(_ payload: [UInt8]) {
        let dropped = work.update { w -> Bool in
            guard w.commands.count < Self.maxWaiting else { return true }
            w.commands.append(payload)
            return false
        }
        if dropped { logger.warning("mqtt: command dropped: \(Self.maxWaiting) wait already") }
    }

    // MARK: marquee-mqtt

    private func serve() {
        defer { ended.set(()) }
        var lastStatus = ContinuousClock.now - .seconds(3600)
        while true {
            let interval = settings.statusInterval
            let (running, commands, statusDue) = work.wait(until: { !$0.running || !$0.commands.isEmpty || ($0.statusDue && $0.connected) },
                                                           timeout: max(0.05, interval - (ContinuousClock.now - lastStatus).seconds)) { w, _ in
                defer {
                    w.commands = []
                    w.statusDue = false
                }
                return (w.running, w.commands, w.statusDue)
            }
            guard running else { return }
            for payload in commands { run(payload) }
            if statusDue || !commands.isEmpty || (ContinuousClock.now - lastStatus).seconds >= interval {
                publishStatus()
                lastStatus = .now
            }
        }
    }

    private func run(_ payload: [UInt8]) {
        guard let handle else { return }
        let session = ControlSession(clientID: nextClient.add(1, ordering: .relaxed).oldValue, handler: handler)
        let text = String(decoding: payload, as: UTF8.self)
        // Only the JSON form: one request a message.
        guard text.trimmingCharacters(in: .whitespaces).hasPrefix("{"), let reply = session.reply(to: Array(text.utf8)) else {
            let refusal = #"{"error":"expected {\"command\": [NAME, ARGUMENTS...]}"}"#
            mosquitto_publish(handle, nil, "\(base)/reply", Int32(refusal.utf8.count), refusal, 1, false)
            return
        }
        let line = reply.last == 0x0A ? Array(reply.dropLast()) : reply
        line.withUnsafeBytes { mosquitto_publish(handle, nil, "\(base)/reply", Int32($0.count), $0.baseAddress, 1, false) }
    }

    private func publishStatus() {
        guard let handle else { return }
        var members: [(key: String, value: JSONValue)] = [("id", .string(id))]
        for name in ["health", "path", "playlist-pos", "playlist-count", "pause", "display-power"] {
            members.append((name, (try? handler.property(name)) ?? .null))
        }
        let frames = status.snapshot
        members.append(("dropped", .number(Double(frames.dropped))))
        let text = JSONValue.object(members).encoded
        mosquitto_publish(handle, nil, "\(base)/status", Int32(text.utf8.count), text, 1, true)
    }
}

private let onConnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void = { _, context, code in
    guard let context else { return }
    Unmanaged<FleetClient>.fromOpaque(context).takeUnretainedValue().connected(code)
}

private let onDisconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void = { _, context, code in
    guard let context else { return }
    Unmanaged<FleetClient>.fromOpaque(context).takeUnretainedValue().disconnected(code)
}

private let onMessage: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?) -> Void = { _, context, message in
    guard let context, let message, message.pointee.payloadlen >= 0, message.pointee.payloadlen <= 64 * 1024 else { return }
    let bytes = message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(message.pointee.payloadlen))) } ?? []
    Unmanaged<FleetClient>.fromOpaque(context).takeUnretainedValue().received(bytes)
}
