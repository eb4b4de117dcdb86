/// A rational time value, `value / timescale` seconds, plus flags for the
/// non-numeric times (invalid, indefinite, positive and negative infinity).
///
/// Arithmetic never traps: when an exact result cannot be represented, the
/// result is rounded into a smaller timescale (and flagged `hasBeenRounded`),
/// and if even a timescale of 1 is too fine, it becomes an infinity.
///
/// Equality, hashing and ordering compare the represented time, not the
/// representation: `1/2 == 2/4`, and `hasBeenRounded` is ignored. The order is
/// `-infinity < every numeric time < indefinite < +infinity < invalid`, and
/// all invalid times are equal to each other.
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numerator of the time in seconds; ignored by non-numeric times.
    public var value: Int64
    /// The number of units per second; a numeric time needs a timescale > 0.
    public var timescale: Int32
    /// What kind of time this is, and whether it has been rounded.
    public var flags: Flags

    /// The flags of a `MediaTime`.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Set on every valid time; a time without it is invalid.
        public static let valid = Flags(rawValue: 1 << 0)
        /// The time is the result of an inexact conversion or computation.
        public static let hasBeenRounded = Flags(rawValue: 1 << 1)
        /// The time is +infinity; `value` and `timescale` are ignored.
        public static let positiveInfinity = Flags(rawValue: 1 << 2)
        /// The time is -infinity; `value` and `timescale` are ignored.
        public static let negativeInfinity = Flags(rawValue: 1 << 3)
        /// The time is unknown (e.g. the duration of a live stream); `value` and `timescale` are ignored.
        public static let indefinite = Flags(rawValue: 1 << 4)

        /// The flags that make a valid time non-numeric.
        static let special: Flags = [.positiveInfinity, .negativeInfinity, .indefinite]
    }

    /// How a value is rounded when it is converted to another timescale.
    public enum RoundingMethod: Sendable, Hashable, CaseIterable {
        /// To the nearest value; halfway cases away from zero. The default.
        case roundHalfAwayFromZero
        /// Truncate.
        case roundTowardZero
        /// Up in magnitude.
        case roundAwayFromZero
        /// Floor.
        case roundTowardNegativeInfinity
        /// Ceiling.
        case roundTowardPositiveInfinity
    }

    /// The largest timescale; results needing a finer one are rounded into it.
    public static let maxTimescale: Int32 = .max

    // MARK: - Initializers

    /// An invalid time (all fields zero).
    public init() {
        value = 0
        timescale = 0
        flags = []
    }

    /// The time `value / timescale` seconds; invalid unless `timescale > 0`.
    public init(value: Int64, timescale: Int32) {
        if timescale > 0 {
            self.init(value: value, timescale: timescale, flags: .valid)
        } else {
            self.init()
        }
    }

    private init(value: Int64, timescale: Int32, flags: Flags) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
    }

    /// The time nearest to `seconds` in `preferredTimescale` (halfway cases away
    /// from zero), flagged `hasBeenRounded` when it does not convert back to
    /// `seconds` exactly.
    ///
    /// If the value would overflow, the timescale is halved until it fits; if
    /// it does not fit even with a timescale of 1, the result is an infinity.
    /// NaN, or a `preferredTimescale <= 0`, gives an invalid time; infinite
    /// seconds give the matching infinity.
    public init(seconds: Double, preferredTimescale: Int32) {
        guard preferredTimescale > 0, !seconds.isNaN else {
            self.init()
            return
        }
        guard seconds.isFinite else {
            self = seconds > 0 ? .positiveInfinity : .negativeInfinity
            return
        }
        var timescale = preferredTimescale
        while timescale > 0 {
            let scaled = (seconds * Double(timescale)).rounded(.toNearestOrAwayFromZero)
            if let value = Int64(exactly: scaled) {
                self.init(value: value, timescale: timescale, flags: .valid)
                if self.seconds != seconds { flags.insert(.hasBeenRounded) }
                return
            }
            timescale /= 2
        }
        self = seconds > 0 ? .positiveInfinity : .negativeInfinity
        flags.insert(.hasBeenRounded)
    }

    // MARK: - Constants

    /// Zero seconds (`0/1`).
    public static let zero = MediaTime(value: 0, timescale: 1)
    /// An invalid time, the same as `MediaTime()`.
    public static let invalid = MediaTime()
    /// An unknown time, ordered after every numeric time and before +infinity.
    public static let indefinite = MediaTime(value: 0, timescale: 0, flags: [.valid, .indefinite])
    /// Positive infinity, ordered after every valid time.
    public static let positiveInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity])
    /// Negative infinity, ordered before every other time.
    public static let negativeInfinity = MediaTime(value: 0, timescale: 0, flags: [.valid, .negativeInfinity])

    // MARK: - Classification

    /// The kinds of time, declared in their sort order.
    private enum Kind: Int, Comparable {
        case negativeInfinity, numeric, indefinite, positiveInfinity, invalid

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The kind of this time. A time without `.valid`, with contradictory special
    /// flags, or numeric with a timescale <= 0 is invalid.
    private var kind: Kind {
        guard flags.contains(.valid) else { return .invalid }
        switch flags.intersection(Flags.special) {
        case []: return timescale > 0 ? .numeric : .invalid
        case .positiveInfinity: return .positiveInfinity
        case .negativeInfinity: return .negativeInfinity
        case .indefinite: return .indefinite
        default: return .invalid
        }
    }

    /// Whether this is a valid time (numeric, indefinite or infinite).
    public var isValid: Bool { kind != .invalid }
    /// Whether this is a valid time that is neither indefinite nor infinite.
    public var isNumeric: Bool { kind == .numeric }
    /// Whether this is the indefinite time.
    public var isIndefinite: Bool { kind == .indefinite }
    /// Whether this is +infinity.
    public var isPositiveInfinity: Bool { kind == .positiveInfinity }
    /// Whether this is -infinity.
    public var isNegativeInfinity: Bool { kind == .negativeInfinity }
    /// Whether this time is the result of an inexact conversion or computation.
    public var hasBeenRounded: Bool { flags.contains(.hasBeenRounded) }

    /// The time in seconds: NaN for invalid and indefinite times, ±infinity for the infinities.
    public var seconds: Double {
        switch kind {
        case .numeric: Double(value) / Double(timescale)
        case .positiveInfinity: .infinity
        case .negativeInfinity: -.infinity
        case .indefinite, .invalid: .nan
        }
    }

    // MARK: - Conversion

    /// This time expressed in `timescale`, rounded with `rounding` (and flagged
    /// `hasBeenRounded` if inexact). Non-numeric times are returned unchanged;
    /// a `timescale <= 0` gives an invalid time; a value that overflows gives
    /// the infinity of its sign.
    public func convertScale(_ timescale: Int32, rounding: RoundingMethod = .roundHalfAwayFromZero) -> MediaTime {
        guard isNumeric else { return self }
        guard timescale > 0 else { return .invalid }
        if timescale == self.timescale { return self }
        return Self.fit(Int128(value), over: Int128(self.timescale), timescale: timescale,
                        rounding: rounding, rounded: hasBeenRounded, mayReduceTimescale: false)
    }

    // MARK: - Arithmetic

    /// The sum. Equal timescales are kept; otherwise the result uses the least
    /// common multiple of the timescales, capped at `maxTimescale` (rounding).
    /// Overflow halves the timescale, then gives an infinity.
    ///
    /// Invalid operands, and +infinity + -infinity, give invalid; an infinite
    /// operand gives that infinity; otherwise an indefinite operand gives
    /// indefinite. A rounded operand gives a rounded result.
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, subtracting: false)
    }

    /// The difference, with the same rules as `+` (+infinity - +infinity is invalid).
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, subtracting: true)
    }

    /// The negated time: the infinities swap, indefinite and invalid stay as they are.
    public static prefix func - (time: MediaTime) -> MediaTime {
        switch time.kind {
        case .numeric:
            if time.value != .min {
                return MediaTime(value: -time.value, timescale: time.timescale, flags: time.flags)
            }
            return fit(-Int128(time.value), over: Int128(time.timescale), timescale: time.timescale,
                       rounding: .roundHalfAwayFromZero, rounded: time.hasBeenRounded, mayReduceTimescale: true)
        case .positiveInfinity: return MediaTime(value: 0, timescale: 0, flags: time.flags.swappingInfinities)
        case .negativeInfinity: return MediaTime(value: 0, timescale: 0, flags: time.flags.swappingInfinities)
        case .indefinite, .invalid: return time
        }
    }

    /// The time multiplied by an integer, exactly when it fits; otherwise the
    /// timescale is halved (rounding), then the result is an infinity.
    /// Invalid and indefinite stay as they are; an infinity times a positive
    /// (negative) number is the same (opposite) infinity, times zero is invalid.
    public static func * (lhs: MediaTime, rhs: Int64) -> MediaTime {
        switch lhs.kind {
        case .numeric:
            return fit(Int128(lhs.value) * Int128(rhs), over: Int128(lhs.timescale), timescale: lhs.timescale,
                       rounding: .roundHalfAwayFromZero, rounded: lhs.hasBeenRounded, mayReduceTimescale: true)
        case .positiveInfinity, .negativeInfinity:
            if rhs == 0 { return .invalid }
            return rhs > 0 ? lhs : -lhs
        case .indefinite, .invalid:
            return lhs
        }
    }

    /// The time multiplied by an integer; see `*(MediaTime, Int64)`.
    public static func * (lhs: Int64, rhs: MediaTime) -> MediaTime { rhs * lhs }

    /// Adds `rhs` to `lhs`.
    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }
    /// Subtracts `rhs` from `lhs`.
    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }
    /// Multiplies `lhs` by `rhs`.
    public static func *= (lhs: inout MediaTime, rhs: Int64) { lhs = lhs * rhs }

    private static func combine(_ lhs: MediaTime, _ rhs: MediaTime, subtracting: Bool) -> MediaTime {
        var rhsKind = rhs.kind
        if subtracting {
            if rhsKind == .positiveInfinity { rhsKind = .negativeInfinity }
            else if rhsKind == .negativeInfinity { rhsKind = .positiveInfinity }
        }
        let roundedFlag: Flags = lhs.hasBeenRounded || rhs.hasBeenRounded ? .hasBeenRounded : []
        func special(_ time: MediaTime) -> MediaTime {
            MediaTime(value: 0, timescale: 0, flags: time.flags.union(roundedFlag))
        }
        switch (lhs.kind, rhsKind) {
        case (.invalid, _), (_, .invalid),
             (.positiveInfinity, .negativeInfinity), (.negativeInfinity, .positiveInfinity):
            return .invalid
        case (.positiveInfinity, _), (_, .positiveInfinity):
            return special(.positiveInfinity)
        case (.negativeInfinity, _), (_, .negativeInfinity):
            return special(.negativeInfinity)
        case (.indefinite, _), (_, .indefinite):
            return special(.indefinite)
        case (.numeric, .numeric):
            break
        }

        let sign: Int128 = subtracting ? -1 : 1
        let numerator, denominator: Int128
        let timescale: Int32
        if lhs.timescale == rhs.timescale {
            numerator = Int128(lhs.value) + sign * Int128(rhs.value)
            denominator = Int128(lhs.timescale)
            timescale = lhs.timescale
        } else {
            let a = Int64(lhs.timescale), b = Int64(rhs.timescale)
            let lcm = a / Int64(gcd(UInt64(a), UInt64(b))) * b   // < 2^62, cannot overflow
            numerator = Int128(lhs.value) * Int128(lcm / a) + sign * Int128(rhs.value) * Int128(lcm / b)
            denominator = Int128(lcm)
            timescale = Int32(exactly: lcm) ?? maxTimescale
        }
        return fit(numerator, over: denominator, timescale: timescale, rounding: .roundHalfAwayFromZero,
                   rounded: !roundedFlag.isEmpty, mayReduceTimescale: true)
    }

    /// The time `numerator / denominator` seconds expressed in `timescale`
    /// (halved while the value overflows, if allowed), or an infinity.
    /// Requires `denominator` in 1 ..< 2^64 and `timescale > 0`.
    private static func fit(_ numerator: Int128, over denominator: Int128, timescale: Int32,
                            rounding: RoundingMethod, rounded: Bool, mayReduceTimescale: Bool) -> MediaTime {
        // numerator * t / denominator == whole * t + remainder * t / denominator, where
        // whole and remainder share the sign of numerator, so rounding the second term
        // rounds the sum; and no intermediate product can overflow 128 bits.
        let (whole, remainder) = numerator.quotientAndRemainder(dividingBy: denominator)
        if let whole = Int64(exactly: whole) {
            var t = timescale
            while t > 0 {
                let fraction = remainder * Int128(t)
                let scaled = Int128(whole) * Int128(t) + divide(fraction, by: denominator, rounding: rounding)
                if let value = Int64(exactly: scaled) {
                    let inexact = rounded || !fraction.isMultiple(of: denominator)
                    return MediaTime(value: value, timescale: t, flags: inexact ? [.valid, .hasBeenRounded] : .valid)
                }
                guard mayReduceTimescale else { break }
                t /= 2
            }
        }
        var infinity: MediaTime = numerator > 0 ? .positiveInfinity : .negativeInfinity
        infinity.flags.insert(.hasBeenRounded)
        return infinity
    }

    /// `x / d` rounded with `rounding`; `d > 0`.
    private static func divide(_ x: Int128, by d: Int128, rounding: RoundingMethod) -> Int128 {
        let (q, r) = x.quotientAndRemainder(dividingBy: d)
        guard r != 0 else { return q }
        let away: Int128 = x < 0 ? -1 : 1      // one step away from zero
        switch rounding {
        case .roundTowardZero: return q
        case .roundAwayFromZero: return q + away
        case .roundHalfAwayFromZero: return r.magnitude * 2 >= d.magnitude ? q + away : q
        case .roundTowardNegativeInfinity: return x < 0 ? q - 1 : q
        case .roundTowardPositiveInfinity: return x > 0 ? q + 1 : q
        }
    }

    private static func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }

    // MARK: - Equatable, Hashable, Comparable

    /// Whether both are the same time (`1/2 == 2/4`); `hasBeenRounded` is ignored.
    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        compare(lhs, rhs) == 0
    }

    /// Whether `lhs` sorts before `rhs`: -infinity < numeric < indefinite < +infinity < invalid.
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Hashes the kind and, for numeric times, the value in lowest terms.
    public func hash(into hasher: inout Hasher) {
        let kind = self.kind
        hasher.combine(kind.rawValue)
        guard kind == .numeric else { return }
        let divisor = Self.gcd(value.magnitude, UInt64(timescale))   // >= 1, <= timescale
        hasher.combine(value / Int64(divisor))
        hasher.combine(Int64(timescale) / Int64(divisor))
    }

    /// -1, 0 or 1; exact for all numeric times.
    private static func compare(_ lhs: MediaTime, _ rhs: MediaTime) -> Int {
        let (lk, rk) = (lhs.kind, rhs.kind)
        if lk != rk { return lk < rk ? -1 : 1 }
        guard lk == .numeric else { return 0 }
        let l: Int128, r: Int128
        if lhs.timescale == rhs.timescale {
            (l, r) = (Int128(lhs.value), Int128(rhs.value))
        } else {
            l = Int128(lhs.value) * Int128(rhs.timescale)
            r = Int128(rhs.value) * Int128(lhs.timescale)
        }
        return l < r ? -1 : (l == r ? 0 : 1)
    }

    // MARK: - CustomStringConvertible

    /// `{value/timescale = seconds}` with seconds to 3 decimals (and `, rounded`
    /// when flagged), or `{INVALID}`, `{INDEFINITE}`, `{+INFINITY}`, `{-INFINITY}`.
    public var description: String {
        switch kind {
        case .invalid: return "{INVALID}"
        case .indefinite: return "{INDEFINITE}"
        case .positiveInfinity: return "{+INFINITY}"
        case .negativeInfinity: return "{-INFINITY}"
        case .numeric:
            let millis = Self.divide(Int128(value) * 1000, by: Int128(timescale), rounding: .roundHalfAwayFromZero)
            let fraction = String(millis.magnitude % 1000)
            let decimal = "\(value < 0 ? "-" : "")\(millis.magnitude / 1000)."
                + String(repeating: "0", count: 3 - fraction.count) + fraction
            return "{\(value)/\(timescale) = \(decimal)\(hasBeenRounded ? ", rounded" : "")}"
        }
    }
}

private extension MediaTime.Flags {
    /// These flags with +infinity and -infinity exchanged.
    var swappingInfinities: MediaTime.Flags {
        var flags = subtracting([.positiveInfinity, .negativeInfinity])
        if contains(.positiveInfinity) { flags.insert(.negativeInfinity) }
        if contains(.negativeInfinity) { flags.insert(.positiveInfinity) }
        return flags
    }
}
