import Foundation

/// A number from outside the process (a config file, the control socket, the command line, the
/// environment) that does not fit where it was meant to go: `field` names it (a JSON path such as
/// `display.rotation`, or an option such as `--frames`), `reason` says what is wrong.
///
/// Every such number goes through `checkedInteger` or `checkedNumber` before any conversion or
/// arithmetic, so that a hostile value is reported instead of trapping.
public struct NumberOutOfRange: LocalizedError, Equatable, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let field: String
    public let reason: String
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }
    public var description: String { field.isEmpty ? reason : "\(field): \(reason)" }
}

/// A number as a person wrote it: `90`, `1.5`, `1e+300`.
public func shownNumber(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value > 0 ? "infinity" : "-infinity" }
    if value == value.rounded(), let whole = Int64(exactly: value), whole.magnitude < 1_000_000_000_000_000 { return "\(whole)" }
    return "\(value)"
}

/// `value` as a `T` when it is a whole number within `range`; otherwise an error naming `field`.
/// Never traps: NaN, infinities, fractions and values beyond `T` are all reported.
public func checkedInteger<T: FixedWidthInteger>(_ value: Double, in range: ClosedRange<T>,
                                                 field: String) throws(NumberOutOfRange) -> T {
    guard value.isFinite, value == value.rounded() else {
        throw NumberOutOfRange(field: field, reason: "\(shownNumber(value)) is not a whole number")
    }
    // Compared as Double first: T(exactly:) of a value beyond T gives nil, but says nothing of range.
    guard value >= Double(range.lowerBound), value <= Double(range.upperBound), let whole = T(exactly: value),
          range.contains(whole) else {
        throw NumberOutOfRange(field: field, reason: "\(shownNumber(value)) is out of range (\(range.lowerBound) to \(range.upperBound))")
    }
    return whole
}

/// `text` (decimal digits, an optional sign) as a `T` within `range`; otherwise an error naming `field`.
public func checkedInteger<T: FixedWidthInteger>(parsing text: String, in range: ClosedRange<T>,
                                                 field: String) throws(NumberOutOfRange) -> T {
    guard let whole = T(text, radix: 10) else {
        let digits = text.drop { $0 == "-" || $0 == "+" }
        let isNumber = !digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
        throw NumberOutOfRange(field: field, reason: isNumber ? "\(text) is out of range (\(range.lowerBound) to \(range.upperBound))"
                                                              : "\"\(text)\" is not a whole number")
    }
    guard range.contains(whole) else {
        throw NumberOutOfRange(field: field, reason: "\(whole) is out of range (\(range.lowerBound) to \(range.upperBound))")
    }
    return whole
}

/// `value` when it is a finite number within `range`; otherwise an error naming `field`.
public func checkedNumber(_ value: Double, in range: ClosedRange<Double>, field: String) throws(NumberOutOfRange) -> Double {
    guard value.isFinite else { throw NumberOutOfRange(field: field, reason: "\(shownNumber(value)) is not a finite number") }
    guard range.contains(value) else {
        throw NumberOutOfRange(field: field, reason: "\(shownNumber(value)) is out of range (\(shownNumber(range.lowerBound)) to \(shownNumber(range.upperBound)))")
    }
    return value
}

extension FixedWidthInteger {
    /// The value of this type nearest to `value` (NaN gives zero): for results computed from values
    /// already checked, where a clamp is the right answer and a trap never is.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Self.max) {
            self = Self.max
        } else if value <= Double(Self.min) {
            self = Self.min
        } else {
            self.init(value)
        }
    }
}
