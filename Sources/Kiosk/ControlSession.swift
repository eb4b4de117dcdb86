import Foundation
import Playback

/// One client's side of the control protocol, without the socket: it parses each request line,
/// answers the protocol's own commands (observe/unobserve, client_name, get_version) and malformed
/// lines at once, hands back the player's part (get/set_property, commands) as work for the caller
/// to run where it likes, and keeps what the client observes. `ControlServer` keeps one per
/// connection, runs the player's work on a worker and moves the bytes; anything with a
/// `ControlHandler` (a fuzzer, a test) can drive it directly. Used by one thread at a time.
public final class ControlSession {
    public let clientID: Int
    public let maxObserved: Int
    private let handler: any ControlHandler
    /// observe_property: id -> (name, last value sent: nil before the first event, .some(nil)
    /// after an event without data, for an unavailable or unknown property).
    private var observed: [Int: (name: String, last: JSONValue??)] = [:]

    public init(clientID: Int, handler: any ControlHandler, maxObserved: Int = 64) {
        self.clientID = clientID
        self.handler = handler
        self.maxObserved = maxObserved
    }

    /// The client's name in the log and in `client_name`.
    public var label: String { "client\(clientID)" }

    /// What a request line comes to.
    public enum Request {
        /// Answered on the spot: the reply line, newline included.
        case answered([UInt8])
        /// The player's part: `work` (which may block, e.g. a screenshot) gives the reply line.
        case player(work: @Sendable () -> [UInt8])
    }

    /// The request on one line (its bytes without the newline); nil for a blank line, and for a
    /// line in mpv's plain-text form (`set pause yes`, `seek 1 absolute`), which is run but, as in
    /// mpv, gets no reply (the work's reply line is then empty).
    public func request(_ bytes: [UInt8]) -> Request? {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return nil }
        // As mpv: a line that does not start with `{` is a command in input.conf's syntax.
        if !text.hasPrefix("{") { return plainTextRequest(text) }
        guard let request = try? JSONParser.parse(text), case .object = request else {
            return .answered(Self.replyLine(0, .failure(.invalidParameter)))
        }
        let requestID = request["request_id"] ?? 0
        // mpv's request_id is an int64: anything else is refused (and echoed, so the client can tell).
        guard case .number(let n) = requestID, (try? checkedInteger(n, in: Int64.min...Int64.max, field: "request_id")) != nil else {
            return .answered(Self.replyLine(requestID, .failure(.invalidParameter)))
        }
        let name: String
        var arguments: [JSONValue] = []
        switch request["command"] {
        case .array(let list)?:
            guard let first = list.first?.stringValue else { return .answered(Self.replyLine(requestID, .failure(.invalidParameter))) }
            name = first
            arguments = Array(list.dropFirst())
        case .object(let members)?:
            // Named arguments: {"command":{"name":"seek","target":10}}
            guard let first = members.first(where: { $0.key == "name" })?.value.stringValue else {
                return .answered(Self.replyLine(requestID, .failure(.invalidParameter)))
            }
            name = first
            arguments = members.filter { $0.key != "name" }.map(\.value)
        default:
            return .answered(Self.replyLine(requestID, .failure(.invalidParameter)))
        }
        if let answered = Result(catching: { () throws(ControlError) -> JSONValue?? in try executeHere(name, arguments) }).flatMapAnswered {
            return .answered(Self.replyLine(requestID, answered))
        }
        let handler = self.handler, words = arguments
        return .player {
            Self.replyLine(requestID, Result { () throws(ControlError) -> JSONValue? in try Self.execute(name, words, on: handler) })
        }
    }

    /// Commands in mpv's text form: run in order, no reply (mpv logs what it cannot run; so does
    /// nothing here but the reply: the caller sees only their effect).
    private func plainTextRequest(_ text: String) -> Request? {
        guard let commands = try? MPVCommandLine.parse(text), !commands.isEmpty else { return .answered([]) }
        var work: [@Sendable () -> Void] = []
        for words in commands {
            let name = words[0], arguments = words.dropFirst().map { JSONValue.string($0) }
            do {
                if try executeHere(name, arguments) != nil { continue }  // answered here
            } catch {
                continue  // refused here: it is the protocol's own command, not the player's
            }
            let handler = self.handler
            work.append { _ = try? Self.execute(name, arguments, on: handler) }
        }
        if work.isEmpty { return .answered([]) }
        let steps = work
        return .player {
            for step in steps { step() }
            return []
        }
    }

    /// What a request line sets outright, when a later line of the same client setting the same
    /// thing leaves nothing of it to see: `display-power` with a valid value (JSON or text form,
    /// `set_property`/`set`); nil for anything else (a value that would be refused, a relative
    /// change, a command whose result depends on state). `requestID` is nil for the text form,
    /// which gets no reply. Seeks and playlist steps are merged by the controller instead.
    public static func supersedingKey(_ bytes: [UInt8]) -> (key: String, requestID: JSONValue?, command: String)? {
        // Most lines are something else: parsed only when they could be one.
        guard bytes.count < 4096, bytes.firstRange(of: Array("display-power".utf8)) != nil else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        let words: [JSONValue]
        var requestID: JSONValue?
        if text.hasPrefix("{") {
            guard let request = try? JSONParser.parse(text), case .array(let list)? = request["command"] else { return nil }
            let id = request["request_id"] ?? 0
            guard case .number(let n) = id, (try? checkedInteger(n, in: Int64.min...Int64.max, field: "request_id")) != nil else { return nil }
            words = list
            requestID = id
        } else {
            guard let commands = try? MPVCommandLine.parse(text), commands.count == 1 else { return nil }
            words = commands[0].map { .string($0) }
        }
        guard words.count == 3, let name = words[0].stringValue, ["set_property", "set_property_string", "set"].contains(name),
              words[1].stringValue == "display-power" else { return nil }
        switch words[2] {
        case .string("on"), .string("off"), .string("yes"), .string("no"), .bool: return ("display-power", requestID, name)
        default: return nil
        }
    }

    /// The reply to a line that a later one superseded (`supersedingKey`): success, as mpv answers
    /// a seek it merged with the next; empty for the text form. Its effect was replaced before
    /// anyone could see it.
    public static func supersededReply(requestID: JSONValue?, command: String) -> [UInt8] {
        guard let requestID else { return [] }
        return replyLine(requestID, .success(command == "set" ? .null : nil))
    }

    /// The reply line to a request line with the player's part run here, on the caller's thread;
    /// nil for a blank line.
    public func reply(to bytes: [UInt8]) -> [UInt8]? {
        let line: [UInt8]? = switch request(bytes) {
        case nil: nil
        case .answered(let line)?: line
        case .player(let work)?: work()
        }
        return line?.isEmpty == true ? nil : line
    }

    /// The names of the properties the client observes.
    public var observedNames: Set<String> { Set(observed.values.map(\.name)) }

    /// `property-change` events, in id order, for the observed properties whose value in `values`
    /// differs from the last one sent (all of them the first time); each is then the last sent.
    /// A value of nil is an unavailable or unknown property: its event has no `data`, as mpv's.
    /// Names missing from `values` are not reported.
    public func propertyChanges(_ values: [String: JSONValue?]) -> [JSONValue] {
        var events: [JSONValue] = []
        for (id, entry) in observed.sorted(by: { $0.key < $1.key }) {
            guard let value = values[entry.name] else { continue }
            if let last = entry.last, last == value { continue }
            observed[id] = (entry.name, .some(value))
            var event: [(key: String, value: JSONValue)] = [("event", "property-change"), ("id", .number(Double(id))), ("name", .string(entry.name))]
            if let value { event.append(("data", value)) }
            events.append(.object(event))
        }
        return events
    }

    private static func replyLine(_ requestID: JSONValue, _ result: Result<JSONValue?, ControlError>) -> [UInt8] {
        var members: [(key: String, value: JSONValue)] = []
        switch result {
        case .success(let data):
            if let data { members.append(("data", data)) }
            members.append(("request_id", requestID))
            members.append(("error", "success"))
        case .failure(let error):
            members.append(("request_id", requestID))
            members.append(("error", .string(error.replyText)))
            if case .commandFailed(let detail) = error { members.append(("detail", .string(detail))) }
        }
        return Array(JSONValue.object(members).encoded.utf8) + [0x0A]
    }

    /// An `observe_property` id: a whole number in Int64's range (mpv's), else invalid parameter.
    private static func observerID(_ value: JSONValue) throws(ControlError) -> Int {
        guard case .number(let n) = value, let id = try? checkedInteger(n, in: Int.min...Int.max, field: "id") else {
            throw .invalidParameter
        }
        return id
    }

    /// The protocol's own commands, answered here; nil for those that go to the player.
    private func executeHere(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue?? {
        switch command {
        case "observe_property":
            guard arguments.count == 2, let property = arguments[1].stringValue else { throw .invalidParameter }
            let id = try Self.observerID(arguments[0])
            // As mpv: any name may be observed; one that is unknown or unavailable is reported
            // as a change without data.
            guard observed.count < maxObserved || observed[id] != nil else {
                throw .commandFailed("at most \(maxObserved) observed properties per client")
            }
            observed[id] = (property, nil)
            return .some(nil)
        case "unobserve_property":
            guard arguments.count == 1 else { throw .invalidParameter }
            observed[try Self.observerID(arguments[0])] = nil
            return .some(nil)
        case "client_name":
            return .some(.string(label))
        case "get_version":
            return .some(.number(Double(mpvClientAPIVersion)))
        default:
            return nil
        }
    }

    /// The player's commands (on a worker, in the server).
    private static func execute(_ command: String, _ arguments: [JSONValue], on handler: any ControlHandler) throws(ControlError) -> JSONValue? {
        switch command {
        case "get_property":
            guard arguments.count == 1, let property = arguments[0].stringValue else { throw .invalidParameter }
            return try handler.property(property)
        case "set_property", "set_property_string", "set":
            guard arguments.count == 2, let property = arguments[0].stringValue else { throw .invalidParameter }
            try handler.setProperty(property, to: arguments[1])
            return command == "set" ? .null : nil
        case "get_property_string":
            // As mpv: the value as text; an unknown or unavailable property is null, not an error.
            guard arguments.count == 1, let property = arguments[0].stringValue else { throw .invalidParameter }
            return (try? handler.property(property)).map { .string(mpvText(of: $0)) } ?? .null
        case "cycle":
            // A flag flips; a number steps by 1 (`down`: -1).
            guard (1...2).contains(arguments.count), let property = arguments[0].stringValue else { throw .invalidParameter }
            let direction = arguments.count == 2 ? arguments[1].stringValue : "up"
            guard direction == "up" || direction == "down" else { throw .invalidParameter }
            try step(property, by: direction == "down" ? -1 : 1, on: handler, flipFlags: true)
            return .null
        case "add":
            guard (1...2).contains(arguments.count), let property = arguments[0].stringValue else { throw .invalidParameter }
            let amount = arguments.count == 2 ? try mpvNumber(arguments[1]) : 1
            try step(property, by: amount, on: handler, flipFlags: false)
            return .null
        default:
            // Commands answer `data: null` unless they return something, as mpv's.
            return try handler.run(command, arguments) ?? .null
        }
    }

    /// `cycle`/`add` on a property: a number moves by `amount`; a flag flips (`cycle` only).
    private static func step(_ property: String, by amount: Double, on handler: any ControlHandler, flipFlags: Bool) throws(ControlError) {
        switch try handler.property(property) {
        case .bool(let flag) where flipFlags: try handler.setProperty(property, to: .bool(!flag))
        case .number(let n): try handler.setProperty(property, to: .number(n + amount))
        case .float(let n): try handler.setProperty(property, to: .float(n + amount))
        default: throw .propertyError
        }
    }
}

/// A command argument as a number, converted as mpv converts a string argument (`seek "1"`).
public func mpvNumber(_ value: JSONValue) throws(ControlError) -> Double {
    switch value {
    case .number(let n), .float(let n): return n
    case .string(let text):
        guard let n = Double(text.trimmingCharacters(in: .whitespaces)), n.isFinite else { throw .invalidParameter }
        return n
    default: throw .invalidParameter
    }
}

/// A property value as mpv's `get_property_string` gives it: flags as yes/no, doubles with six
/// decimals, lists and maps as JSON.
public func mpvText(of value: JSONValue) -> String {
    switch value {
    case .bool(let b): b ? "yes" : "no"
    case .string(let s): s
    case .null: ""
    default: value.encoded
    }
}

private extension Result where Success == JSONValue??, Failure == ControlError {
    /// An answer given on the spot (a value or an error); nil when the request goes to the player.
    var flatMapAnswered: Result<JSONValue?, ControlError>? {
        switch self {
        case .success(.some(let value)): .success(value)
        case .success(.none): nil
        case .failure(let error): .failure(error)
        }
    }
}
