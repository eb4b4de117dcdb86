import Foundation
import Synchronization
import Playback
import SystemCalls

/// A request from the control socket (or a signal) to the playback threads.
public enum KioskCommand: Sendable, Equatable {
    case next
    case previous
    /// `steps` items on (back when negative) from the current one: coalesced `next`s and `previous`es.
    case skip(steps: Int)
    case pause(Bool)
    /// Seek in the current item: to `seconds`, or by `seconds` when `relative`.
    case seek(seconds: Double, relative: Bool)
    /// Play the playlist's item at this position now (`playlist-play-index`, `set playlist-pos`).
    case play(index: Int)
    /// `loadfile`/`loadlist`: these files (as given: relative to the working folder) become the
    /// playlist and play now, or join its end (`append`).
    case load(uris: [String], append: Bool)
    /// `loadlist`: the M3U file at `path` (a regular file: checked before) is read and loaded on a
    /// thread of its own, the reply given at once (a list of any length never holds the request up).
    case loadList(path: String, append: Bool)
    case reload
    /// The picture of an output (nil: the first) as PNG.
    case screenshot(output: String?, maxWidth: Int? = nil)
    /// `set_property display-power`: the output into standby (false) or awake (true).
    case displayPower(Bool)
    case quit
}

/// What a command produced.
public enum KioskCommandResult: Sendable {
    case done
    case screenshot(png: Data, width: Int, height: Int, output: String)
    /// `load`: the playlist entry id of the first file loaded.
    case loaded(entryID: Int)
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
public final class KioskController: ControlHandler, Sendable {
    public typealias Perform = @Sendable (KioskCommand) -> KioskCommandResult

    private let status: KioskStatus
    private let perform: Perform
    private let commandTimeout: Double
    private let navigationInterval: Double
    private let navigation = Mutex(NavigationQueue())
    /// Whether a hand-over to the player is in progress (one at a time).
    private let applying = Monitor(false)
    /// The threads commands run on: at most 4, with at most 32 commands waiting for one (more are
    /// refused), so the thread count has a bound whatever a client sends.
    let commands = ThreadPool(name: "marquee-command", limit: 4, maxWaiting: 32)
    /// The sound's properties (KioskController+Audio.swift); nil: none (they are unavailable).
    let audio: (any AudioControls)?

    public init(status: KioskStatus, commandTimeout: Double = 5, navigationInterval: Double = 0.25, audio: (any AudioControls)? = nil,
                perform: @escaping Perform) {
        self.audio = audio
        self.status = status
        self.perform = perform
        self.commandTimeout = commandTimeout
        self.navigationInterval = navigationInterval
    }

    public let propertyNames = [
        "pid", "path", "filename", "playlist-pos", "playlist-count", "playlist", "time-pos", "duration", "pause",
        "idle-active", "eof-reached", "hwdec-current", "hwdec-interop", "hwdec-fallback", "frame-drop-count",
        "decoder-frame-drop-count", "cadence-frame-drop-count",
        "vo-delayed-frame-count", "display-fps", "vsync-jitter", "property-list", "command-list",
        "outputs", "health", "wall-sync", "schedule", "display-power", "overlays", "volume", "mute", "audio-device", "audio-delay", "current-ao",
        "live-lag",
    ]

    /// The commands `run` takes, with their arguments as mpv's `command-list` describes them
    /// (name, type, optional).
    static let commands: [(name: String, arguments: [(String, String, Bool)])] = [
        ("playlist-next", [("flags", "Choice", true)]),
        ("playlist-prev", [("flags", "Choice", true)]),
        ("playlist-play-index", [("index", "Choice", false)]),
        ("loadfile", [("url", "String", false), ("flags", "Choice", true), ("options", "Key/value list", true)]),
        ("loadlist", [("url", "String", false), ("flags", "Choice", true)]),
        ("seek", [("target", "Time", false), ("flags", "Flags", true), ("legacy", "Choice", true)]),
        ("set", [("name", "String", false), ("value", "String", false)]),
        ("cycle", [("name", "String", false), ("value", "Choice", true)]),
        ("add", [("name", "String", false), ("value", "Double", true)]),
        ("screenshot", [("output", "String", true)]),
        ("reload", []),
        ("quit", [("code", "Integer", true)]),
    ]

    public func property(_ name: String) throws(ControlError) -> JSONValue {
        if let value = try audioProperty(name) { return value }
        let s = status.snapshot
        func number(_ v: Double?) throws(ControlError) -> JSONValue {
            guard let v else { throw .propertyUnavailable }
            return .float(v)
        }
        /// The file playing, as the playlist gives it (mpv's `path` is what was played, not
        /// resolved); the resolved path while a reloaded playlist waits for the item boundary (the
        /// entry at the position is then another file).
        var currentURI: String? {
            guard let path = s.currentPath else { return nil }
            guard let position = s.position, s.items.indices.contains(position), s.items[position].path == path else { return path }
            return s.items[position].uri
        }
        if name.hasPrefix("playlist/") { return try playlistSubProperty(String(name.dropFirst("playlist/".count)), s) }
        switch name {
        case "pid": return .number(Double(getpid()))
        case "path":
            guard let path = currentURI else { throw .propertyUnavailable }
            return .string(path)
        case "filename":
            guard let path = currentURI else { throw .propertyUnavailable }
            return .string((path as NSString).lastPathComponent)
        case "playlist-pos": return .number(Double(s.position ?? -1))
        case "playlist-count": return .number(Double(s.items.count))
        case "playlist": return .array(s.items.indices.map { playlistEntry($0, s) })
        case "idle-active": return .bool(s.position == nil)
        case "eof-reached":
            // mpv: false while a file plays (Marquee never holds at an item's end), unavailable idle.
            guard s.position != nil else { throw .propertyUnavailable }
            return false
        case "time-pos": return try number(s.timePos)
        case "duration": return try number(s.duration)
        case "pause": return .bool(s.paused)
        case "hwdec-current": return .string(s.hwdecCurrent)
        case "hwdec-interop": return .string(s.hwdecInterop)
        case "hwdec-fallback": return s.hwdecFallback.map { .string($0) } ?? .null
        case "frame-drop-count": return .number(Double(s.dropped))
        case "decoder-frame-drop-count": return .number(Double(s.decoderDropped))
        case "cadence-frame-drop-count": return .number(Double(s.cadenceDropped))
        case "vo-delayed-frame-count": return .number(Double(s.delayed))
        case "display-fps": return .float(s.displayFPS)
        case "vsync-jitter": return .float(s.vsyncJitter)
        case "live-lag":
            // Of the current item only: unavailable while it is not a live source.
            // Keyed by the URL as played; the current entry's `uri` is that, its `path` a file's.
            let uri = s.position.flatMap { s.items.indices.contains($0) ? s.items[$0].uri : nil }
            guard s.currentPath != nil, let lag = uri.flatMap({ s.liveLag[$0] }) else { throw .propertyUnavailable }
            return .float((lag * 1000).rounded() / 1000)
        case "property-list": return .array(propertyNames.map { .string($0) })
        case "command-list":
            return .array(Self.commands.map { command in
                ["name": .string(command.name),
                 "args": .array(command.arguments.map { ["name": .string($0.0), "type": .string($0.1), "optional": .bool($0.2)] }),
                 "vararg": false]
            })
        case "outputs":
            return .array(s.outputs.map { output in
                var members: [(key: String, value: JSONValue)] = [("name", .string(output.name)), ("mode", .string(output.mode)),
                                                                   ("connected", .bool(output.connected))]
                if let r = output.videoRect { members.append(("videoRect", .array(r.map { .number(Double($0)) }))) }
                if output.framesNotDrawn > 0 { members.append(("framesNotDrawn", .number(Double(output.framesNotDrawn)))) }
                if let scanout = output.scanout {
                    members += [("scanout", .string(scanout)), ("scanoutReason", .string(output.scanoutReason ?? ""))]
                }
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
        case "display-power": return .string(s.displayOff == nil ? "on" : "off")
        case "overlays":
            return .array(s.overlays.map { overlay in
                var members: [(key: String, value: JSONValue)] = [("kind", .string(overlay.kind)), ("content", .string(overlay.content)),
                                                                   ("visible", .bool(overlay.visible))]
                if let r = overlay.rect { members.append(("rect", .array(r.map { .number(Double($0)) }))) }
                if let problem = overlay.problem { members.append(("problem", .string(problem))) }
                return .object(members)
            })
        case "schedule":
            guard let schedule = s.schedule else { throw .propertyUnavailable }
            var members: [(key: String, value: JSONValue)] = [("entry", schedule.entry.map { .number(Double($0)) } ?? .null),
                                                               ("name", .string(schedule.name)), ("display", .string(schedule.display))]
            if let next = schedule.next { members.append(("next", .string(next))) }
            return .object(members)
        case "health":
            let health = status.health()
            return ["status": .string(health.status), "reasons": .array(health.reasons.map { .string($0) })]
        default:
            throw .propertyNotFound
        }
    }

    /// `playlist/N/filename|id|current|playing` and `playlist/count`, as mpv's.
    private func playlistSubProperty(_ sub: String, _ s: KioskStatus.Snapshot) throws(ControlError) -> JSONValue {
        if sub == "count" { return .number(Double(s.items.count)) }
        let parts = sub.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = Int(parts[0]), s.items.indices.contains(index) else { throw .propertyNotFound }
        let entry = playlistEntry(index, s)
        guard parts.count <= 2 else { throw .propertyNotFound }
        guard parts.count == 2 else { return entry }
        if let value = entry[String(parts[1])] { return value }
        // Fields only the current entry has: unavailable on the others, as mpv's.
        if parts[1] == "current" || parts[1] == "playing" { throw .propertyUnavailable }
        throw .propertyNotFound
    }

    /// An entry of `playlist`: mpv's fields (filename, current, playing, id), then Marquee's
    /// (status, error, conversion).
    private func playlistEntry(_ index: Int, _ s: KioskStatus.Snapshot) -> JSONValue {
        let item = s.items[index]
        var members: [(key: String, value: JSONValue)] = [("filename", .string(item.uri))]
        if index == s.position && (s.currentPath == nil || item.path == s.currentPath) { members += [("current", true), ("playing", true)] }
        members.append(("id", .number(Double(s.entryID(at: index) ?? index + 1))))
        members.append(("status", .string(item.state.rawValue)))
        if let error = item.error { members.append(("error", .string(error))) }
        if let conversion = s.conversions[item.path ?? item.uri] { members.append(("conversion", .string(conversion))) }
        if let transition = item.transition { members.append(("transition", transition.jsonValue)) }
        return .object(members)
    }

    /// Sets a property; a string value is converted as mpv converts it (`"yes"` for a flag, `"2"`
    /// for a number), as the text form's `set pause yes` sends it.
    public func setProperty(_ name: String, to value: JSONValue) throws(ControlError) {
        if try setAudioProperty(name, to: value) { return }
        switch name {
        case "pause":
            let paused: Bool
            switch value {
            case .bool(let b): paused = b
            case .string("yes"): paused = true
            case .string("no"): paused = false
            case .string: throw .propertyFormat
            default: throw .propertyError
            }
            _ = try execute(.pause(paused))
        case "display-power":
            let on: Bool
            switch value {
            case .string("on"), .string("yes"), .bool(true): on = true
            case .string("off"), .string("no"), .bool(false): on = false
            case .string: throw .propertyFormat
            default: throw .propertyError
            }
            _ = try execute(.displayPower(on))
        case "playlist-pos":
            let count = status.snapshot.items.count
            // mpv takes -1 (stop, go idle) and positions past the end (the same); a kiosk does
            // not go idle on request: those are refused.
            guard let n = try? mpvNumber(value), let index = try? checkedInteger(n, in: 0...max(0, count - 1), field: "playlist-pos"),
                  count > 0 else {
                throw .propertyError
            }
            _ = try execute(.play(index: index))
        case _ where propertyNames.contains(name) || name.hasPrefix("playlist/"):
            throw .propertyError  // read-only, as mpv answers for one
        default:
            throw .propertyNotFound
        }
    }

    public func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue? {
        switch command {
        case "playlist-next", "playlist-prev":
            guard arguments.count <= 1 else { throw .invalidParameter }
            if let flag = arguments.first, flag.stringValue != "weak" && flag.stringValue != "force" { throw .invalidParameter }
            return navigate(.skip(steps: command == "playlist-next" ? 1 : -1))
        case "playlist-play-index":
            guard arguments.count == 1 else { throw .invalidParameter }
            let s = status.snapshot
            if arguments[0].stringValue == "current" {
                guard let position = s.position else { throw .commandFailed("nothing is playing") }
                return try execute(.play(index: position))
            }
            guard let n = try? mpvNumber(arguments[0]), let index = try? checkedInteger(n, in: -1...Int(Int32.max), field: "index") else {
                throw .invalidParameter
            }
            // mpv stops (goes idle) for -1, `none` or a position past the end; a kiosk refuses.
            guard s.items.indices.contains(index) else { throw .commandFailed("no playlist entry \(index) (\(s.items.count) entries)") }
            return try execute(.play(index: index))
        case "loadfile", "loadlist":
            guard (1...3).contains(arguments.count), let url = arguments[0].stringValue, !url.isEmpty else { throw .invalidParameter }
            let flag = arguments.count > 1 ? arguments[1].stringValue : "replace"
            guard let flag, ["replace", "append", "append-play"].contains(flag) else { throw .invalidParameter }
            if command == "loadlist" {
                // What can be told at once is: the file is there and is a regular file. Its entries
                // are read and loaded off this thread (a million lines take seconds).
                do {
                    _ = try RegularFile.open(url)
                } catch {
                    throw .commandFailed("the M3U file \(url) \(error.reason)")
                }
                return try execute(.loadList(path: url, append: flag != "replace"))
            }
            return try execute(.load(uris: [url], append: flag != "replace"))
        case "quit": return try execute(.quit)
        case "reload": return try execute(.reload)
        case "seek":
            guard (1...3).contains(arguments.count) else { throw .invalidParameter }
            let target = try mpvNumber(arguments[0])
            // Flags as mpv's: relative (default), absolute, absolute-percent, relative-percent,
            // joined with exact/keyframes by `+` (Marquee always seeks exactly).
            var mode = "relative"
            if arguments.count > 1 {
                guard let flags = arguments[1].stringValue else { throw .invalidParameter }
                for flag in flags.split(separator: "+") {
                    switch flag {
                    case "relative", "absolute", "absolute-percent", "relative-percent": mode = String(flag)
                    case "exact", "keyframes": break
                    default: throw .invalidParameter
                    }
                }
            }
            if arguments.count > 2 {
                guard ["exact", "keyframes", "default-precise"].contains(arguments[2].stringValue ?? "") else { throw .invalidParameter }
            }
            var seconds = target
            if mode.hasSuffix("percent") {
                guard let duration = status.snapshot.duration else { throw .commandFailed("the item's duration is unknown") }
                seconds = target / 100 * duration
            }
            guard (try? checkedNumber(seconds, in: -longestTimeInSeconds...longestTimeInSeconds, field: "seek")) != nil else {
                throw .invalidParameter
            }
            return navigate(.seek(seconds: seconds, relative: mode.hasPrefix("relative")))
        case "screenshot":
            guard arguments.count <= 1 else { throw .invalidParameter }
            if let first = arguments.first, first.stringValue == nil { throw .invalidParameter }
            // The read-back waits up to 4 s for the output, the PNG up to 30 s for its thread.
            return try execute(.screenshot(output: arguments.first?.stringValue), timeout: max(commandTimeout, 35))
        default:
            throw .invalidParameter
        }
    }

    public func screenshotPNG(output: String?, maxWidth: Int?) throws(ControlError) -> Data? {
        switch try result(of: .screenshot(output: output, maxWidth: maxWidth), timeout: max(commandTimeout, 35)) {
        case .screenshot(let png, _, _, _): return png
        case .failed(let why): throw .commandFailed(why)
        default: throw .commandFailed("the player answered the screenshot with no picture")
        }
    }

    /// Queues a seek or a playlist step (merged with the queued ones) and answers at once.
    private func navigate(_ command: KioskCommand) -> JSONValue? {
        let start = navigation.withLock { navigation -> Bool in
            navigation.add(command)
            navigation.lastAdded = .now
            defer { navigation.scheduled = true }
            return !navigation.scheduled
        }
        if start {
            // On the command pool, as every command: the player may keep it a moment.
            commands.run { [self] in
                while true {
                    let wait = navigation.withLock { $0.wait(now: .now, interval: navigationInterval) }
                    if wait <= 0 { break }
                    Thread.sleep(forTimeInterval: min(wait, 0.05))
                }
                applyNavigation()
            }
        }
        return nil
    }

    /// Hands what is queued to the player (on a marquee-navigation thread).
    private func applyNavigation() {
        // One hand-over at a time, even when the player takes longer than `hold` over one (but
        // not held up for good by one that never returns).
        let exclusive = applying.wait(until: { !$0 }, timeout: commandTimeout) { busy, timedOut in
            if !timedOut { busy = true }
            return !timedOut
        }
        defer { if exclusive { applying.update { $0 = false } } }
        let commands = navigation.withLock { navigation -> [KioskCommand] in
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
        navigation.withLock { $0.lastApplied = .now }
    }

    /// Hands `command` to the playback threads and waits for their answer, at most `timeout`
    /// seconds (`commandTimeout` unless given).
    private func execute(_ command: KioskCommand, timeout: Double? = nil) throws(ControlError) -> JSONValue? {
        switch try result(of: command, timeout: timeout) {
        case .done: return nil
        case .loaded(let id): return ["playlist_entry_id": .number(Double(id))]
        case .failed(let why): throw .commandFailed(why)
        case .screenshot(let png, let width, let height, let output):
            return ["format": "png", "width": .number(Double(width)), "height": .number(Double(height)),
                    "output": .string(output), "data": .string(png.base64EncodedString())]
        }
    }
}

extension KioskController {
    /// Runs `command` on the player and waits for its result.
    fileprivate func result(of command: KioskCommand, timeout: Double?) throws(ControlError) -> KioskCommandResult {
        let commandTimeout = timeout ?? self.commandTimeout
        let answer = Latch<KioskCommandResult>()
        let perform = self.perform
        // On a bounded pool: a command may block (a screenshot waits for the next vsync), and one
        // that never returns must not let a stream of requests start threads without limit.
        guard commands.tryRun({ answer.set(perform(command)) }) else {
            throw .commandFailed("the player is busy: \(commands.maxWaiting ?? 0) commands wait for it; try again later")
        }
        guard let result = answer.wait(timeout: commandTimeout) else {
            throw .commandFailed("no answer from the player within \(commandTimeout) s")
        }
        return result
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
