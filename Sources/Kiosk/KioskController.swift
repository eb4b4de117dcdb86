import Foundation
import Playback

/// A request from the control socket (or a signal) to the playback threads.
public enum KioskCommand: Sendable, Equatable {
    case next
    case previous
    /// `steps` items on (back when negative) from the current one: coalesced `next`s and `previous`es.
    case skip(steps: Int)
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
/// through `perform`, which must answer within `commandTimeout` seconds (a screenshot, which also
/// encodes a PNG, within 35 s: a 4K one takes seconds on a small, busy machine).
///
/// Seeks and playlist steps are coalesced as mpv's play loop does: each is answered at once and
/// queued; a queued one is merged with newer ones (steps add up, relative seeks add up, an
/// absolute seek replaces the seek before it, a step drops the seek before it), and the queue is
/// handed to the player: the first request after a quiet second at once, later ones once the burst
/// ends (`NavigationQueue.quiet`), at most every `navigationInterval` and at least every
/// `NavigationQueue.hold` seconds. A burst of 200 `playlist-next`s thus reaches the player as one
/// or two steps and opens two or three decoders, not 200.
public final class KioskController: ControlHandler, @unchecked Sendable {
    // @unchecked: `navigation` is guarded by `navigationLock`; the rest is immutable.
    public typealias Perform = @Sendable (KioskCommand) -> KioskCommandResult

    private let status: KioskStatus
    private let perform: Perform
    private let commandTimeout: Double
    private let navigationInterval: Double
    private let navigationLock = NSLock()
    private var navigation = NavigationQueue()
    private let applying = NSLock()

    public init(status: KioskStatus, commandTimeout: Double = 5, navigationInterval: Double = 0.25, perform: @escaping Perform) {
        self.status = status
        self.perform = perform
        self.commandTimeout = commandTimeout
        self.navigationInterval = navigationInterval
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
        case "playlist-next": return navigate(.skip(steps: 1))
        case "playlist-prev": return navigate(.skip(steps: -1))
        case "quit": return try execute(.quit)
        case "reload": return try execute(.reload)
        case "seek":
            guard let seconds = arguments.first?.numberValue,
                  (try? checkedNumber(seconds, in: -longestTimeInSeconds...longestTimeInSeconds, field: "seek")) != nil else {
                throw .invalidParameter
            }
            let mode = arguments.count > 1 ? arguments[1].stringValue : "relative"
            guard mode == "relative" || mode == "absolute" else { throw .invalidParameter }
            return navigate(.seek(seconds: seconds, relative: mode == "relative"))
        case "screenshot":
            guard arguments.count <= 1 else { throw .invalidParameter }
            if let first = arguments.first, first.stringValue == nil { throw .invalidParameter }
            // The read-back waits up to 4 s for the output, the PNG up to 30 s for its thread.
            return try execute(.screenshot(output: arguments.first?.stringValue), timeout: max(commandTimeout, 35))
        default:
            throw .invalidParameter
        }
    }

    /// Queues a seek or a playlist step (merged with the queued ones) and answers at once.
    private func navigate(_ command: KioskCommand) -> JSONValue? {
        let start = navigationLock.withLock { () -> Bool in
            navigation.add(command)
            navigation.lastAdded = .now
            defer { navigation.scheduled = true }
            return !navigation.scheduled
        }
        if start {
            // A thread of its own, as for every command: the player may keep it a moment.
            let thread = Thread { [self] in
                while true {
                    let wait = navigationLock.withLock { navigation.wait(now: .now, interval: navigationInterval) }
                    if wait <= 0 { break }
                    Thread.sleep(forTimeInterval: min(wait, 0.05))
                }
                applyNavigation()
            }
            thread.name = "marquee-navigation"
            thread.start()
        }
        return nil
    }

    /// Hands what is queued to the player (on a marquee-navigation thread).
    private func applyNavigation() {
        // One hand-over at a time, even when the player takes longer than `hold` over one (but
        // not held up for good by one that never returns).
        let exclusive = applying.lock(before: Date(timeIntervalSinceNow: commandTimeout))
        defer { if exclusive { applying.unlock() } }
        let commands = navigationLock.withLock { () -> [KioskCommand] in
            defer {
                navigation = NavigationQueue()
                navigation.lastApplied = .now
            }
            return navigation.commands
        }
        // Requests that come while the player takes these start the next hand-over.
        for command in commands {
            _ = perform(command)
        }
        navigationLock.withLock { navigation.lastApplied = .now }
    }

    /// Hands `command` to the playback threads and waits for their answer, at most `timeout`
    /// seconds (`commandTimeout` unless given).
    private func execute(_ command: KioskCommand, timeout: Double? = nil) throws(ControlError) -> JSONValue? {
        let commandTimeout = timeout ?? self.commandTimeout
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

/// Seeks and playlist steps not yet handed to the player, merged.
struct NavigationQueue {
    /// Items to step (negative: back).
    var steps = 0
    /// A seek in the item that plays once `steps` are taken.
    var seek: (seconds: Double, relative: Bool)?
    var scheduled = false
    var lastApplied: ContinuousClock.Instant?
    var lastAdded: ContinuousClock.Instant?

    /// A burst ends once nothing has come for this long (seconds)...
    static let quiet = 0.1
    /// ...or this long after the last hand-over, which is also how long the player must have been
    /// left alone for a request to go to it at once.
    static let hold = 1.0

    /// Seconds to wait before handing the queue over: none for the first request after a quiet
    /// second; else until `interval` after the last hand-over and the burst has ended (`quiet`),
    /// but no more than `hold` after the last hand-over.
    func wait(now: ContinuousClock.Instant, interval: Double) -> Double {
        guard let applied = lastApplied else { return 0 }
        let sinceApplied = (now - applied).seconds
        if sinceApplied >= Self.hold { return 0 }
        let sinceAdded = lastAdded.map { (now - $0).seconds } ?? .infinity
        return min(max(interval - sinceApplied, Self.quiet - sinceAdded), Self.hold - sinceApplied)
    }

    mutating func add(_ command: KioskCommand) {
        switch command {
        case .skip(let n):
            // Far more steps than any playlist has are as good as that many modulo its length;
            // the sum never overflows.
            steps = max(-1_000_000, min(1_000_000, steps + n))
            seek = nil  // a seek in the item left behind no longer matters
        case .next: add(.skip(steps: 1))
        case .previous: add(.skip(steps: -1))
        case .seek(let seconds, relative: true):
            if let queued = seek {
                // Clamped as one seek is: a long burst adds up to no more than the longest time.
                seek = (max(-longestTimeInSeconds, min(longestTimeInSeconds, queued.seconds + seconds)), queued.relative)
            } else {
                seek = (seconds, true)
            }
        case .seek(let seconds, relative: false):
            seek = (seconds, false)
        default:
            break
        }
    }

    /// What to hand to the player, in order.
    var commands: [KioskCommand] {
        var list: [KioskCommand] = []
        if steps != 0 { list.append(.skip(steps: steps)) }
        if let seek, seek.seconds.isFinite { list.append(.seek(seconds: seek.seconds, relative: seek.relative)) }
        return list
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
