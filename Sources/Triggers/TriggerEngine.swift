/// Where a press comes from: a key (evdev code), a GPIO line, an OSC address. Only inputs some
/// rule names are tracked, so the engine's memory is fixed by the config, not by what arrives.
public enum InputSource: Hashable, Sendable, CustomStringConvertible {
    case key(Int)
    case gpio(chip: String, line: Int)
    case osc(String)

    public var description: String {
        switch self {
        case .key(let code): "key \(code)"
        case .gpio(let chip, let line): "gpio \(chip):\(line)"
        case .osc(let address): "osc \(address)"
        }
    }
}

/// What a rule needs of its trigger's settings; the action it stands for is the caller's.
public struct TriggerRule: Sendable, Equatable {
    public enum Busy: String, Sendable, CaseIterable {
        /// Presses while a triggered item plays are ignored (locked out).
        case ignore
        /// One press waits and plays once the triggered item ends (later ones are ignored).
        case queue
        /// A press starts its target again at once.
        case restart
    }

    public var source: InputSource
    /// For OSC: the arguments the message must carry (as text); nil: any.
    public var arguments: [String]?
    /// Long press: fires once the input has been held this long (seconds); nil: on the press.
    public var hold: Double?
    /// Edges closer than this to the one before (seconds) are contact bounce.
    public var debounce: Double
    /// True when the action plays a triggered item (lock-out, re-arm and idle apply).
    public var plays: Bool
    public var busy: Busy
    /// After a triggered item ends, presses are ignored this long (seconds).
    public var rearm: Double
    /// With no press this long (seconds) while its item plays, back to the loop; nil: never.
    public var idle: Double?

    public init(source: InputSource, arguments: [String]? = nil, hold: Double? = nil, debounce: Double = 0.02,
                plays: Bool, busy: Busy = .ignore, rearm: Double = 0.5, idle: Double? = nil) {
        self.source = source
        self.arguments = arguments
        self.hold = hold
        self.debounce = debounce
        self.plays = plays
        self.busy = busy
        self.rearm = rearm
        self.idle = idle
    }
}

/// The trigger state machine: debounced, rate-limited presses in, what to do out. A value driven
/// by the caller's clock (seconds on any monotonic scale), so tests run it on a virtual one.
///
/// Phases: `armed` (the loop plays; a press fires), `playing` (a triggered item plays: presses
/// are ignored, queued or restart it as its rule says), `rearming` (it ended; presses are ignored
/// until the re-arm delay has passed).
public struct TriggerEngine: Sendable {
    public enum Phase: Sendable, Equatable {
        case armed
        case playing(rule: Int, lastInput: Double)
        case rearming(until: Double)
    }

    /// What the caller does.
    public enum Effect: Sendable, Equatable {
        /// Carry out rule `rule`'s action (for a playing rule: its item starts now).
        case fire(rule: Int)
        /// The triggered item of `rule` ended (or was left for the loop): the outputs go off.
        case ended(rule: Int)
        /// No press for the rule's idle time: go back to the loop now.
        case idleReturn(rule: Int)
        /// More presses than `pressLimit` a second came from `source`: the rest are dropped until a
        /// second passes without one too many (said once per flood).
        case floodStarted(InputSource)
        case floodEnded(InputSource, dropped: Int)
    }

    /// Counts, for health and tests.
    public struct Counters: Sendable, Equatable {
        public var presses = 0
        public var fired = 0
        /// Presses ignored while a triggered item played or re-armed.
        public var lockedOut = 0
        /// Presses dropped by the rate limit.
        public var dropped = 0
        /// Edges that were contact bounce.
        public var bounces = 0
        /// Events from inputs no rule names.
        public var unmatched = 0
    }

    /// Presses a second an input may give; more are dropped and counted.
    public static let pressLimit = 10

    /// One input's debounced state.
    struct Line: Sendable {
        var level = false
        var raw = false
        var lastEdge = -Double.infinity
        var downSince: Double?
        var longFired = false
        var debounce: Double
        var windowStart = -Double.infinity
        var windowPresses = 0
        var flooding = false
        var floodDropped = 0
    }

    public let rules: [TriggerRule]
    public private(set) var phase = Phase.armed
    public private(set) var counters = Counters()
    /// A press waiting for the triggered item to end (`busy: queue`).
    public private(set) var queued: Int?
    var lines: [InputSource: Line] = [:]
    /// The inputs in a fixed order, so that `advance` reports their effects the same way each run.
    let order: [InputSource]

    public init(rules: [TriggerRule]) {
        self.rules = rules
        var order: [InputSource] = []
        for rule in rules {
            if lines[rule.source] == nil { order.append(rule.source) }
            let debounce = max(rule.debounce, lines[rule.source]?.debounce ?? 0)
            lines[rule.source] = Line(debounce: debounce)
        }
        self.order = order
    }

    /// An edge of a held input (a key, a GPIO line): `pressed` is its new level.
    public mutating func edge(_ source: InputSource, pressed: Bool, at now: Double) -> [Effect] {
        guard var line = lines[source] else {
            counters.unmatched += 1
            return []
        }
        var effects = settle(&line, source, now)
        line.raw = pressed
        let quiet = now >= line.lastEdge + line.debounce
        line.lastEdge = now
        if !quiet { counters.bounces += 1 }
        if quiet && pressed != line.level {
            effects += change(&line, source, to: pressed, at: now, arguments: nil)
        }
        lines[source] = line
        return effects
    }

    /// The input went while held (its device unplugged, its chip gone): it is up again, and the
    /// press it was in fires nothing more (no long press, no short press on release).
    public mutating func lost(_ source: InputSource, at now: Double) -> [Effect] {
        guard var line = lines[source] else { return [] }
        line.level = false
        line.raw = false
        line.downSince = nil
        line.longFired = true
        line.lastEdge = now
        lines[source] = line
        return []
    }

    /// A momentary input (an OSC message): a press and its release at once.
    public mutating func pulse(_ source: InputSource, arguments: [String] = [], at now: Double) -> [Effect] {
        guard var line = lines[source] else {
            counters.unmatched += 1
            return []
        }
        var effects = settle(&line, source, now)
        effects += change(&line, source, to: true, at: now, arguments: arguments)
        effects += change(&line, source, to: false, at: now, arguments: arguments)
        lines[source] = line
        return effects
    }

    /// Time passes: bounces settle, long presses fire, idle triggered items end, floods end.
    public mutating func advance(to now: Double) -> [Effect] {
        var effects: [Effect] = []
        for source in order {
            guard var line = lines[source] else { continue }
            effects += settle(&line, source, now)
            if line.level, !line.longFired, let since = line.downSince {
                for (index, rule) in rules.enumerated() where rule.source == source {
                    if let hold = rule.hold, now >= since + hold {
                        line.longFired = true
                        effects += fire(index, at: now)
                        break
                    }
                }
            }
            if line.flooding, now >= line.windowStart + 1 {
                effects.append(.floodEnded(source, dropped: line.floodDropped))
                line.flooding = false
                line.floodDropped = 0
            }
            lines[source] = line
        }
        switch phase {
        case .playing(let rule, let lastInput):
            if let idle = rules[rule].idle, now >= lastInput + idle {
                effects.append(.idleReturn(rule: rule))
                effects += end(rule, at: now)
            }
        case .rearming(let until) where now >= until:
            phase = .armed
        default: break
        }
        return effects
    }

    // Times are compared as `now >= start + length`, the form `nextDeadline` gives them in, so
    // that advancing to a deadline always does what fell due then.

    /// The earliest time `advance` has something to do (a bounce settles, a long press is due, a
    /// flood's second ends, the idle or re-arm time is up); nil when nothing is pending. A caller
    /// waits until then, or until the next input, instead of ticking.
    public func nextDeadline() -> Double? {
        var deadlines: [Double] = []
        for source in order {
            guard let line = lines[source] else { continue }
            if line.raw != line.level { deadlines.append(line.lastEdge + line.debounce) }
            if line.level, !line.longFired, let since = line.downSince,
               let hold = rules.filter({ $0.source == source }).compactMap(\.hold).min() {
                deadlines.append(since + hold)
            }
            if line.flooding { deadlines.append(line.windowStart + 1) }
        }
        switch phase {
        case .playing(let rule, let lastInput): if let idle = rules[rule].idle { deadlines.append(lastInput + idle) }
        case .rearming(let until): deadlines.append(until)
        case .armed: break
        }
        return deadlines.min()
    }

    /// The triggered item of the playing rule ended (played out, or was skipped).
    public mutating func triggeredItemEnded(at now: Double) -> [Effect] {
        guard case .playing(let rule, _) = phase else { return [] }
        if let next = queued {
            queued = nil
            phase = .playing(rule: next, lastInput: now)
            counters.fired += 1
            return [.ended(rule: rule), .fire(rule: next)]
        }
        return end(rule, at: now)
    }

    /// Another node of the wall fired rule `index` (a wall cue): it plays here too, whatever the
    /// phase (the wall plays one film), with no debounce or rate limit (the node pressed had
    /// them); the item it interrupts ends. Re-arm and idle then run here as for a press.
    public mutating func cued(_ index: Int, at now: Double) -> [Effect] {
        guard rules.indices.contains(index), rules[index].plays else { return [] }
        var effects: [Effect] = []
        if case .playing(let rule, _) = phase { effects.append(.ended(rule: rule)) }
        queued = nil
        phase = .playing(rule: index, lastInput: now)
        counters.fired += 1
        return effects + [.fire(rule: index)]
    }

    // MARK: Steps

    mutating func end(_ rule: Int, at now: Double) -> [Effect] {
        queued = nil
        let rearm = rules[rule].rearm
        phase = rearm > 0 ? .rearming(until: now + rearm) : .armed
        return [.ended(rule: rule)]
    }

    /// A level that has stayed apart from the debounced one for the debounce time becomes it.
    mutating func settle(_ line: inout Line, _ source: InputSource, _ now: Double) -> [Effect] {
        guard line.raw != line.level, now >= line.lastEdge + line.debounce else { return [] }
        return change(&line, source, to: line.raw, at: line.lastEdge + line.debounce, arguments: nil)
    }

    /// The debounced level changes: a press (rate-limited) or a release.
    mutating func change(_ line: inout Line, _ source: InputSource, to pressed: Bool, at now: Double, arguments: [String]?) -> [Effect] {
        line.level = pressed
        if pressed {
            line.downSince = now
            line.longFired = false
            counters.presses += 1
            var effects: [Effect] = []
            if now >= line.windowStart + 1 {
                line.windowStart = now
                line.windowPresses = 0
            }
            line.windowPresses += 1
            if line.windowPresses > Self.pressLimit {
                counters.dropped += 1
                line.floodDropped += 1
                line.downSince = nil  // a dropped press is no long press either
                if !line.flooding {
                    line.flooding = true
                    effects.append(.floodStarted(source))
                }
                return effects
            }
            if case .playing(let rule, _) = phase { phase = .playing(rule: rule, lastInput: now) }
            // A press fires its rule now unless a long press shares the input: then on release.
            guard !hasLongRule(source) else { return effects }
            return effects + pressRules(source, arguments: arguments, at: now)
        }
        defer { line.downSince = nil }
        guard hasLongRule(source), !line.longFired, let since = line.downSince else { return [] }
        let held = now - since
        // Released before the shortest hold: the short press.
        if let shortest = rules.filter({ $0.source == source }).compactMap(\.hold).min(), held < shortest {
            return pressRules(source, arguments: arguments, at: now)
        }
        return []
    }

    func hasLongRule(_ source: InputSource) -> Bool {
        rules.contains { $0.source == source && $0.hold != nil }
    }

    mutating func pressRules(_ source: InputSource, arguments: [String]?, at now: Double) -> [Effect] {
        var effects: [Effect] = []
        for (index, rule) in rules.enumerated() where rule.source == source && rule.hold == nil {
            if let wanted = rule.arguments, wanted != (arguments ?? []) { continue }
            effects += fire(index, at: now)
            if case .fire = effects.last, rules[index].plays { break }  // one item plays per press
        }
        if effects.isEmpty, arguments != nil, !rules.contains(where: { $0.source == source && $0.arguments == nil }) {
            counters.unmatched += 1
        }
        return effects
    }

    /// Rule `index` was pressed: its action fires unless the phase locks it out.
    mutating func fire(_ index: Int, at now: Double) -> [Effect] {
        let rule = rules[index]
        guard rule.plays else {
            counters.fired += 1
            return [.fire(rule: index)]
        }
        switch phase {
        case .armed:
            break
        case .rearming(let until):
            guard now >= until else {
                counters.lockedOut += 1
                return []
            }
        case .playing(let playing, _):
            switch rules[playing].busy {
            case .ignore:
                counters.lockedOut += 1
                return []
            case .queue:
                if queued == nil { queued = index } else { counters.lockedOut += 1 }
                return []
            case .restart:
                phase = .playing(rule: index, lastInput: now)
                counters.fired += 1
                return [.ended(rule: playing), .fire(rule: index)]
            }
        }
        phase = .playing(rule: index, lastInput: now)
        counters.fired += 1
        return [.fire(rule: index)]
    }
}
