import Foundation
import Inputs
import Playback
import Triggers

/// One entry of `triggers`: an input (`on`) and what it does (`do`).
///
/// ```json
/// {"on": {"key": "KEY_1"}, "do": {"play": "films/birds.mp4", "then": "resume"}, "busy": "ignore", "rearm": 2}
/// ```
public struct TriggerConfig: Sendable, Equatable {
    public enum Input: Sendable, Equatable {
        case key(Int)
        case gpio(GPIOLine)
        /// An OSC address and, when given, the arguments the message must carry (as text).
        case osc(address: String, arguments: [String]?)
    }

    public enum Action: Sendable, Equatable {
        /// Cut these items in now, then `then`.
        case play([KioskConfig.Item], then: QueuePlayer.CutInReturn)
        case next, previous, pause, toggle
        case display(on: Bool)
        /// Set a control-socket property (`volume`, `mute`, `pause`...).
        case set(property: String, value: JSONValue)
    }

    /// A lamp or a lighting cue: on while the trigger's item plays.
    public enum Signal: Sendable, Equatable {
        case gpio(GPIOLine)
        case osc(UDPEndpoint, address: String)
    }

    public var input: Input
    /// `on.hold`: a long press of this many seconds (nil: a press).
    public var hold: Double?
    /// `on.debounce`: seconds.
    public var debounce = 0.02
    public var action: Action
    public var busy = TriggerRule.Busy.ignore
    public var rearm = 0.5
    public var idle: Double?
    public var signal: Signal?
    /// `preroll`: the target's first frame is decoded ahead of the press (false: opened on the
    /// press, as a player started on it would; a target rarely played, or a comparison).
    public var preroll = true

    /// The rule the engine runs for this entry.
    public var rule: TriggerRule {
        let source: InputSource, arguments: [String]?
        switch input {
        case .key(let code): (source, arguments) = (.key(code), nil)
        case .gpio(let line): (source, arguments) = (.gpio(chip: line.chip, line: line.line), nil)
        case .osc(let address, let args): (source, arguments) = (.osc(address), args)
        }
        var plays = false
        if case .play = action { plays = true }
        return TriggerRule(source: source, arguments: arguments, hold: hold, debounce: debounce, plays: plays,
                           busy: busy, rearm: rearm, idle: idle)
    }
}

/// `inputs`: where trigger inputs are read. Nothing listens on the network unless `osc` says.
public struct InputSettings: Sendable, Equatable {
    /// `inputs.osc`: the UDP address OSC is received on; nil: off.
    public var osc: UDPEndpoint?
    /// `inputs.keys`: the event devices read for key triggers; nil: every one with keys.
    public var keyDevices: [String]?
    public init() {}
}

/// The longest hold, debounce, re-arm or idle time a trigger may give, in seconds (a day).
public let longestTriggerTime = 86_400.0

extension ConfigReader {
    mutating func readTriggers(_ value: JSONValue, baseDirectory: String) -> [TriggerConfig] {
        guard case .array(let entries) = value else {
            problem("triggers", "expected an array of {\"on\": ..., \"do\": ...}, found \(value.typeName)")
            return []
        }
        return entries.enumerated().compactMap { readTrigger($0.element, at: "triggers[\($0.offset)]", baseDirectory: baseDirectory) }
    }

    mutating func readTrigger(_ value: JSONValue, at path: String, baseDirectory: String) -> TriggerConfig? {
        guard let fields = members(value, at: path, allowed: ["on", "do", "busy", "rearm", "idle", "signal", "preroll"]) else { return nil }
        guard let onValue = value["on"] else {
            problem("\(path).on", "missing: the input, e.g. {\"key\": \"KEY_1\"}, {\"gpio\": {...}} or {\"osc\": \"/play\"}")
            return nil
        }
        guard let doValue = value["do"] else {
            problem("\(path).do", "missing: what the input does, e.g. {\"play\": \"film.mp4\"} or \"next\"")
            return nil
        }
        let before = problems.count
        let input = readTriggerInput(onValue, at: "\(path).on")
        let action = readTriggerAction(doValue, at: "\(path).do", baseDirectory: baseDirectory)
        guard let (input, hold, debounce) = input, let action else { return nil }
        var trigger = TriggerConfig(input: input, hold: hold, debounce: debounce, action: action)
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "busy": if let busy: TriggerRule.Busy = choice(v, at: field) { trigger.busy = busy }
            case "rearm": if let s = triggerSeconds(v, at: field) { trigger.rearm = s }
            case "idle": trigger.idle = triggerSeconds(v, at: field, minimum: 0.1)
            case "signal": trigger.signal = readSignal(v, at: field)
            case "preroll": if let b = bool(v, at: field) { trigger.preroll = b }
            default: break
            }
        }
        return problems.count == before ? trigger : nil
    }

    /// Seconds from `minimum` to `longestTriggerTime`.
    mutating func triggerSeconds(_ value: JSONValue, at path: String, minimum: Double = 0) -> Double? {
        guard case .number(let n) = value else {
            problem(path, "expected a number of seconds, found \(value.typeName)")
            return nil
        }
        do { return try checkedNumber(n, in: minimum...longestTriggerTime, field: path) } catch {
            problem(error)
            return nil
        }
    }

    mutating func readTriggerInput(_ value: JSONValue, at path: String) -> (TriggerConfig.Input, Double?, Double)? {
        guard let fields = members(value, at: path, allowed: ["key", "gpio", "osc", "args", "hold", "debounce"]) else { return nil }
        let kinds = fields.map(\.key).filter { ["key", "gpio", "osc"].contains($0) }
        guard kinds.count == 1 else {
            problem(path, kinds.isEmpty ? "missing: one of \"key\", \"gpio\", \"osc\"" : "give one of \"key\", \"gpio\", \"osc\", not \(kinds.joined(separator: " and "))")
            return nil
        }
        var input: TriggerConfig.Input?
        var hold: Double?, debounce = 0.02
        var arguments: [String]?
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "key": input = readKey(v, at: field).map { .key($0) }
            case "gpio": input = readGPIOLine(v, at: field, input: true).map { .gpio($0) }
            case "osc":
                guard let address = string(v, at: field) else { continue }
                guard address.hasPrefix("/"), address.count <= 256, !address.contains(where: { $0 == " " || $0 == "#" || $0.asciiValue.map { $0 < 32 } == true }) else {
                    problem(field, "\"\(Self.clipped(address))\" is not an OSC address: write e.g. \"/marquee/play\"")
                    continue
                }
                input = .osc(address: address, arguments: nil)
            case "args":
                guard case .array(let items) = v else {
                    problem(field, "expected an array of numbers, strings or booleans, found \(v.typeName)")
                    continue
                }
                var texts: [String] = []
                for (i, item) in items.enumerated() {
                    switch item {
                    case .number(let n): texts.append(OSCArgument.float(n).description)
                    case .string(let s): texts.append(s)
                    case .bool(let b): texts.append(b ? "true" : "false")
                    default: problem("\(field)[\(i)]", "expected a number, a string or a boolean, found \(item.typeName)")
                    }
                }
                arguments = texts
            case "hold": hold = triggerSeconds(v, at: field, minimum: 0.05)
            case "debounce": if let s = triggerSeconds(v, at: field) { debounce = min(s, 1) }
            default: break
            }
        }
        if let arguments {
            guard case .osc(let address, _) = input else {
                if input != nil { problem("\(path).args", "only an OSC input has arguments") }
                return nil
            }
            input = .osc(address: address, arguments: arguments)
        }
        guard let input else { return nil }
        return (input, hold, debounce)
    }

    /// A key by its kernel name (`KEY_1`, `BTN_0`) or code.
    mutating func readKey(_ value: JSONValue, at path: String) -> Int? {
        switch value {
        case .string(let name):
            guard let code = KeyCodes.code(named: name) else {
                problem(path, "\"\(Self.clipped(name))\" is not a key name: write the kernel's name, e.g. KEY_1, KEY_SPACE, BTN_0")
                return nil
            }
            return code
        case .number(let n):
            do { return try checkedInteger(n, in: 1...KeyCodes.largest, field: path) } catch {
                problem(error)
                return nil
            }
        default:
            problem(path, "expected a key name such as \"KEY_1\" or a key code, found \(value.typeName)")
            return nil
        }
    }

    /// `{"chip": "gpiochip0", "line": 17, "edge": "falling", "bias": "pull-up"}`: `edge` (inputs
    /// only) is the edge of a press: `falling` for a button to ground (the default), `rising`.
    mutating func readGPIOLine(_ value: JSONValue, at path: String, input: Bool) -> GPIOLine? {
        let allowed = input ? ["chip", "line", "edge", "bias"] : ["chip", "line", "activeLow"]
        guard let fields = members(value, at: path, allowed: allowed) else { return nil }
        guard case .string(let chip)? = value["chip"], !chip.isEmpty else {
            problem("\(path).chip", "missing: the GPIO chip, e.g. \"gpiochip0\"")
            return nil
        }
        guard let lineValue = value["line"] else {
            problem("\(path).line", "missing: the line's offset on its chip, e.g. 17")
            return nil
        }
        guard case .number(let n) = lineValue, let offset = try? checkedInteger(n, in: 0...4095, field: "\(path).line") else {
            problem("\(path).line", "\(Self.shown(lineValue)) is not a line offset (0 to 4095)")
            return nil
        }
        var line = GPIOLine(chip: chip, line: offset, activeLow: input)
        for (key, v) in fields {
            switch key {
            case "edge":
                guard let edge = string(v, at: "\(path).edge") else { continue }
                guard edge == "falling" || edge == "rising" else {
                    problem("\(path).edge", "\"\(Self.clipped(edge))\" is not one of \"falling\", \"rising\"")
                    continue
                }
                line.activeLow = edge == "falling"
            case "bias": if let bias: GPIOLine.Bias = choice(v, at: "\(path).bias") { line.bias = bias }
            case "activeLow": if let b = bool(v, at: "\(path).activeLow") { line.activeLow = b }
            default: break
            }
        }
        return line
    }

    mutating func readTriggerAction(_ value: JSONValue, at path: String, baseDirectory: String) -> TriggerConfig.Action? {
        let commands: [String: TriggerConfig.Action] = ["next": .next, "prev": .previous, "pause": .pause, "toggle": .toggle]
        if case .string(let name) = value {
            guard let action = commands[name] else {
                problem(path, "\"\(Self.clipped(name))\" is not one of \"next\", \"prev\", \"pause\", \"toggle\" (or an object: play, display, set)")
                return nil
            }
            return action
        }
        guard let fields = members(value, at: path, allowed: ["play", "then", "display", "set", "value"]) else { return nil }
        let kinds = fields.map(\.key).filter { ["play", "display", "set"].contains($0) }
        guard kinds.count == 1, let kind = kinds.first, let v = value[kind] else {
            problem(path, kinds.isEmpty ? "missing: one of \"play\", \"display\", \"set\"" : "give one of \"play\", \"display\", \"set\", not \(kinds.joined(separator: " and "))")
            return nil
        }
        switch kind {
        case "play":
            var uris: [(String, String)] = []
            switch v {
            case .string(let uri): uris = [(uri, "\(path).play")]
            case .array(let list) where !list.isEmpty:
                for (i, item) in list.enumerated() {
                    if let uri = string(item, at: "\(path).play[\(i)]") { uris.append((uri, "\(path).play[\(i)]")) }
                }
            default:
                problem("\(path).play", "expected a file or a non-empty array of files, found \(v.typeName)")
                return nil
            }
            var items: [KioskConfig.Item] = []
            for (uri, field) in uris {
                guard let file = Self.filePath(of: uri) else {
                    problem(field, "\"\(Self.clipped(uri))\" is not a file path or file:// URL")
                    continue
                }
                let path = KioskConfig.join(baseDirectory, file)
                if !FileManager.default.fileExists(atPath: path) { warning(field, "\(path) is not there (the trigger plays nothing until it is)") }
                items.append(KioskConfig.Item(uri: uri, path: path))
            }
            var then = QueuePlayer.CutInReturn.resume
            if let t = value["then"], let picked: QueuePlayer.CutInReturn = choice(t, at: "\(path).then") { then = picked }
            return items.count == uris.count ? .play(items, then: then) : nil
        case "display":
            guard case .string(let s) = v, s == "on" || s == "off" else {
                problem("\(path).display", "expected \"on\" or \"off\", found \(Self.shown(v))")
                return nil
            }
            return .display(on: s == "on")
        default:
            guard let property = string(v, at: "\(path).set") else { return nil }
            guard let newValue = value["value"] else {
                problem("\(path).value", "missing: the value to set \(Self.clipped(property)) to")
                return nil
            }
            return .set(property: property, value: newValue)
        }
    }

    /// `{"gpio": {"chip": ..., "line": ...}}` or `{"osc": {"to": "127.0.0.1:7000", "address": "/lamp"}}`.
    mutating func readSignal(_ value: JSONValue, at path: String) -> TriggerConfig.Signal? {
        guard let fields = members(value, at: path, allowed: ["gpio", "osc"]), fields.count == 1, let (key, v) = fields.first else {
            if case .object = value { problem(path, "give one of \"gpio\", \"osc\"") }
            return nil
        }
        if key == "gpio" { return readGPIOLine(v, at: "\(path).gpio", input: false).map { .gpio($0) } }
        guard members(v, at: "\(path).osc", allowed: ["to", "address"]) != nil else { return nil }
        guard case .string(let to)? = v["to"], let endpoint = UDPEndpoint(parsing: to) else {
            problem("\(path).osc.to", "expected an IPv4 address and port such as \"127.0.0.1:7000\"")
            return nil
        }
        guard case .string(let address)? = v["address"], address.hasPrefix("/") else {
            problem("\(path).osc.address", "expected an OSC address such as \"/lamp\"")
            return nil
        }
        return .osc(endpoint, address: address)
    }

    mutating func readInputs(_ value: JSONValue) -> InputSettings {
        var settings = InputSettings()
        guard let fields = members(value, at: "inputs", allowed: ["osc", "keys"]) else { return settings }
        for (key, v) in fields {
            let path = "inputs.\(key)"
            switch key {
            case "osc":
                guard let text = string(v, at: path) else { continue }
                guard let endpoint = UDPEndpoint(parsing: text) else {
                    problem(path, "\"\(Self.clipped(text))\" is not an IPv4 address and port: write e.g. \"127.0.0.1:9000\"")
                    continue
                }
                settings.osc = endpoint
            case "keys":
                guard case .array(let list) = v, !list.isEmpty else {
                    problem(path, "expected a non-empty array of device paths such as \"/dev/input/by-id/usb-keypad-event-kbd\"")
                    continue
                }
                var paths: [String] = []
                for (i, item) in list.enumerated() {
                    guard let p = string(item, at: "\(path)[\(i)]") else { continue }
                    guard p.hasPrefix("/") else {
                        problem("\(path)[\(i)]", "\"\(Self.clipped(p))\" is not an absolute path")
                        continue
                    }
                    paths.append(p)
                }
                settings.keyDevices = paths
            default: break
            }
        }
        return settings
    }
}
