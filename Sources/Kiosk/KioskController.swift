import Foundation
import Playback

/// A request from the control socket (or a signal) to the playback threads.
public enum KioskCommand: Sendable {
    case next
    case previous
    case pause(Bool)
    /// Seek in the current item: to `seconds`, or by `seconds` when `relative`.
    case seek(seconds: Double, relative: Bool)
    case reload
    /// The picture of an output (nil: the first) as PNG.
    case screenshot(output: String?)
    case quit
}

/// What a command produced.
public enum KioskCommandResult: Sendable {
    case done
    case screenshot(png: Data, width: Int, height: Int, output: String)
    case failed(String)
}

/// Answers the control socket from `KioskStatus` and forwards commands to the playback threads
/// through `perform`, which must answer within `commandTimeout` seconds.
public final class KioskController: ControlHandler {
    public typealias Perform = @Sendable (KioskCommand) -> KioskCommandResult

    private let status: KioskStatus
    private let perform: Perform
    private let commandTimeout: Double

    public init(status: KioskStatus, commandTimeout: Double = 5, perform: @escaping Perform) {
        self.status = status
        self.perform = perform
        self.commandTimeout = commandTimeout
    }

    public let propertyNames = [
        "pid", "path", "playlist-pos", "playlist-count", "playlist", "time-pos", "duration", "pause",
        "hwdec-current", "hwdec-interop", "hwdec-fallback", "frame-drop-count", "vo-delayed-frame-count",
        "display-fps", "vsync-jitter", "outputs", "health", "wall-sync",
    ]

    public func property(_ name: String) throws(ControlError) -> JSONValue {
        let s = status.snapshot
        func number(_ v: Double?) throws(ControlError) -> JSONValue {
            guard let v else { throw .propertyUnavailable }
            return .number(v)
        }
        switch name {
        case "pid": return .number(Double(getpid()))
        case "path":
            guard let path = s.currentPath else { throw .propertyUnavailable }
            return .string(path)
        case "playlist-pos": return .number(Double(s.position ?? -1))
        case "playlist-count": return .number(Double(s.items.count))
        case "playlist":
            return .array(s.items.enumerated().map { index, item in
                var members: [(key: String, value: JSONValue)] = [("filename", .string(item.uri)), ("status", .string(item.state.rawValue))]
                if index == s.position { members.append(("current", true)) }
                if let error = item.error { members.append(("error", .string(error))) }
                if let conversion = s.conversions[item.path ?? item.uri] { members.append(("conversion", .string(conversion))) }
                return .object(members)
            })
        case "time-pos": return try number(s.timePos)
        case "duration": return try number(s.duration)
        case "pause": return .bool(s.paused)
        case "hwdec-current": return .string(s.hwdecCurrent)
        case "hwdec-interop": return .string(s.hwdecInterop)
        case "hwdec-fallback": return s.hwdecFallback.map { .string($0) } ?? .null
        case "frame-drop-count": return .number(Double(s.dropped))
        case "vo-delayed-frame-count": return .number(Double(s.delayed))
        case "display-fps": return .number(s.displayFPS)
        case "vsync-jitter": return .number(s.vsyncJitter)
        case "outputs":
            return .array(s.outputs.map { output in
                var members: [(key: String, value: JSONValue)] = [("name", .string(output.name)), ("mode", .string(output.mode)),
                                                                   ("connected", .bool(output.connected))]
                if let r = output.videoRect { members.append(("videoRect", .array(r.map { .number(Double($0)) }))) }
                if output.framesNotDrawn > 0 { members.append(("framesNotDrawn", .number(Double(output.framesNotDrawn)))) }
                if let error = output.syncErrorMs {
                    members += [("syncErrorMs", .number(error)), ("syncRepeated", .number(Double(output.syncRepeated))),
                                ("syncSkipped", .number(Double(output.syncSkipped))), ("syncRestarts", .number(Double(output.syncRestarts)))]
                }
                return .object(members)
            })
        case "wall-sync":
            var members: [(key: String, value: JSONValue)] = [("mode", .string(s.wallSync))]
            if let clock = s.clockQuality {
                var quality: [(key: String, value: JSONValue)] = [("source", .string(clock.source)), ("synchronized", .bool(clock.synchronized)),
                                                                   ("detail", .string(clock.detail))]
                if let offset = clock.offset { quality.append(("offsetMs", .number(offset * 1000))) }
                if let rms = clock.rmsOffset { quality.append(("rmsOffsetMs", .number(rms * 1000))) }
                if let stratum = clock.stratum { quality.append(("stratum", .number(Double(stratum)))) }
                if let reference = clock.reference { quality.append(("reference", .string(reference))) }
                members.append(("clock", .object(quality)))
            }
            return .object(members)
        case "health":
            let health = status.health()
            return ["status": .string(health.status), "reasons": .array(health.reasons.map { .string($0) })]
        default:
            throw .propertyNotFound
        }
    }

    public func setProperty(_ name: String, to value: JSONValue) throws(ControlError) {
        switch name {
        case "pause":
            guard let paused = value.boolValue else { throw .invalidParameter }
            _ = try execute(.pause(paused))
        case _ where propertyNames.contains(name):
            throw .invalidParameter  // read-only
        default:
            throw .propertyNotFound
        }
    }

    public func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue? {
        switch command {
        case "playlist-next": return try execute(.next)
        case "playlist-prev": return try execute(.previous)
        case "quit": return try execute(.quit)
        case "reload": return try execute(.reload)
        case "seek":
            guard let seconds = arguments.first?.numberValue, seconds.isFinite else { throw .invalidParameter }
            let mode = arguments.count > 1 ? arguments[1].stringValue : "relative"
            guard mode == "relative" || mode == "absolute" else { throw .invalidParameter }
            return try execute(.seek(seconds: seconds, relative: mode == "relative"))
        case "screenshot":
            guard arguments.count <= 1 else { throw .invalidParameter }
            if let first = arguments.first, first.stringValue == nil { throw .invalidParameter }
            return try execute(.screenshot(output: arguments.first?.stringValue))
        default:
            throw .invalidParameter
        }
    }

    /// Hands `command` to the playback threads and waits for their answer, at most `commandTimeout`.
    private func execute(_ command: KioskCommand) throws(ControlError) -> JSONValue? {
        let box = ResultBox()
        let perform = self.perform
        // A thread of its own: a command may block (a screenshot waits for the next vsync), and
        // blocked dispatch workers would starve other work.
        Thread.detachNewThread {
            box.set(perform(command))
        }
        guard let result = box.wait(timeout: commandTimeout) else {
            throw .commandFailed("no answer from the player within \(commandTimeout) s")
        }
        switch result {
        case .done: return nil
        case .failed(let why): throw .commandFailed(why)
        case .screenshot(let png, let width, let height, let output):
            return ["format": "png", "width": .number(Double(width)), "height": .number(Double(height)),
                    "output": .string(output), "data": .string(png.base64EncodedString())]
        }
    }
}

/// A one-shot result handed from one thread to another, with a timed wait.
private final class ResultBox: @unchecked Sendable {
    // @unchecked: `value` is guarded by `condition`.
    private let condition = NSCondition()
    private var value: KioskCommandResult?

    func set(_ result: KioskCommandResult) {
        condition.lock()
        value = result
        condition.broadcast()
        condition.unlock()
    }

    func wait(timeout: Double) -> KioskCommandResult? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            if !condition.wait(until: deadline) { break }
        }
        return value
    }
}
