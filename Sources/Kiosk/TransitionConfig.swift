import Playback

/// The longest transition a config may give, in seconds.
public let longestTransition = 10.0

/// The duration a crossfade or fade has when the config gives none, in seconds.
public let defaultTransitionDuration = 1.0

extension ConfigReader {
    /// `{"type": "cut"|"crossfade"|"fade", "duration": seconds}` at `path`: a duration above 0
    /// and at most `longestTransition` (default `defaultTransitionDuration`; a cut has none). A
    /// part longer than half its item is clamped when it plays (item lengths are known then).
    mutating func transition(_ value: JSONValue, at path: String) -> Transition? {
        guard let fields = members(value, at: path, allowed: ["type", "duration"]) else { return nil }
        guard let typeValue = value["type"] else {
            problem("\(path).type", "missing: one of \"cut\", \"crossfade\", \"fade\"")
            return nil
        }
        guard let kind: Transition.Kind = choice(typeValue, at: "\(path).type") else { return nil }
        var seconds = kind == .cut ? 0 : defaultTransitionDuration
        for (key, v) in fields where key == "duration" {
            let field = "\(path).duration"
            guard case .number(let n) = v else {
                problem(field, "expected a number of seconds, found \(v.typeName)")
                return nil
            }
            guard n.isFinite, n > 0, n <= longestTransition else {
                problem(field, "\(n) is not a transition's length: give seconds above 0, at most \(longestTransition.formatted(decimals: 0))")
                return nil
            }
            seconds = n
        }
        // n is in (0, 10]: far inside a 90 kHz timescale.
        return Transition(kind, duration: MediaTime(seconds: seconds, preferredTimescale: 90_000))
    }
}

extension KioskConfig {
    /// Whether any seam of the playlist, a schedule entry's or a wall region's is not a cut (an
    /// output that cannot blend then keeps to a path that can).
    public var hasTransitions: Bool {
        var items = playlist
        for entry in schedule?.entries ?? [] { items += entry.playlist }
        for region in wall?.regions ?? [] { items += region.playlist ?? [] }
        return transition.kind != .cut || items.contains { ($0.transition?.kind ?? .cut) != .cut }
    }
}

extension Transition {
    /// As the `playlist` property and the config write it.
    var jsonValue: JSONValue {
        kind == .cut ? .object([("type", .string("cut"))])
            : .object([("type", .string(kind.rawValue)), ("duration", .number(duration.seconds))])
    }
}
