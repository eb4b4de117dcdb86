import Foundation
import Playback

/// A parsed JSON value that keeps the order of object members, so that errors can be reported in
/// the order a person wrote them, and syntax errors carry a line and column.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    /// A number that is a double in mpv's protocol (`duration`, `time-pos`): always written with a
    /// fraction, as mpv writes it (`1.000000`), so that clients read a float. The parser never makes one.
    case float(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.number(x), .number(y)), let (.float(x), .float(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The JSON type's name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number, .float: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }
}

/// A JSON syntax error with its position (1-based line and column).
public struct JSONSyntaxError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let line: Int
    public let column: Int
    public let message: String
    public var description: String { "line \(line), column \(column): \(message)" }
}

/// A strict JSON parser (RFC 8259) over UTF-8 bytes.
public struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < parser.bytes.count { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ message: String) -> JSONSyntaxError {
        var line = 1, column = 1
        for b in bytes[..<min(index, bytes.count)] {
            if b == 0x0A { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return JSONSyntaxError(line: line, column: column, message: message)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let b = current, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { index += 1 }
    }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let start = index
        for b in literal.utf8 {
            guard current == b else {
                index = start
                throw error("invalid literal, expected \(literal)")
            }
            index += 1
        }
        return value
    }

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < 256 else { throw error("nesting too deep") }
        guard let b = current else { throw error("unexpected end of input, expected a value") }
        switch b {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(b)))', expected a value")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name in double quotes") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after the member name") }
            index += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            if current == UInt8(ascii: ",") { index += 1; continue }
            if current == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw error("expected ',' or '}' in an object")
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            if current == UInt8(ascii: ",") { index += 1; continue }
            if current == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw error("expected ',' or ']' in an array")
        }
    }

    /// Four hex digits (exactly: no sign, no spaces), the value of a `\u` escape.
    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count, let value = hexValue(bytes[index..<index + 4].map(UInt32.init)) else {
            throw error("invalid \\u escape")
        }
        index += 4
        return value
    }

    /// The scalar of a `\u` escape whose `u` has just been read: one escape, or a UTF-16 surrogate
    /// pair of two. A surrogate that is not half of a pair is a syntax error (not U+FFFD): the text
    /// is not what its writer meant, and a config or a command must not be taken as something else.
    private mutating func parseUnicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let escapeStart = index - 2
        let unit = try parseHex4()
        func hex(_ v: UInt32) -> String {
            let digits = String(v, radix: 16)
            return "\\u" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
        switch unit {
        case 0xDC00..<0xE000:
            index = escapeStart
            throw error("invalid surrogate pair: \(hex(unit)) is a low surrogate without a high one")
        case 0xD800..<0xDC00:
            var low: UInt32?
            if current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") {
                index += 2
                low = try parseHex4()
            }
            guard let low, (0xDC00..<0xE000).contains(low) else {
                index = escapeStart
                throw error("invalid surrogate pair: \(hex(unit)) is not followed by a low surrogate")
            }
            // Both halves are in range, so this is at most 0x10FFFF.
            let scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            guard let s = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
            return s
        default:
            guard let s = Unicode.Scalar(unit) else { throw error("invalid \\u escape") }
            return s
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var out = [UInt8]()
        while true {
            guard let b = current else { throw error("unterminated string") }
            index += 1
            switch b {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let e = current else { throw error("unterminated string") }
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    out.append(contentsOf: Array(String(Character(try parseUnicodeEscape())).utf8))
                default:
                    index -= 1
                    throw error("invalid escape in a string")
                }
            case 0..<0x20:
                index -= 1
                throw error("control character in a string")
            default:
                out.append(b)
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            var n = 0
            while let b = p.current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) { p.index += 1; n += 1 }
            return n
        }
        if current == UInt8(ascii: "0") { index += 1 } else if digits(&self) == 0 { throw error("invalid number") }
        if current == UInt8(ascii: ".") {
            index += 1
            if digits(&self) == 0 { throw error("invalid number: digits expected after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            if digits(&self) == 0 { throw error("invalid number: digits expected in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text) else { throw error("invalid number") }
        // Past Double's range (1e999): refused here, so that every number a JSONValue holds is finite.
        guard value.isFinite else {
            index = start
            throw error("number out of range: \(text)")
        }
        return .number(value)
    }
}

extension JSONValue {
    /// Compact JSON text (one line), members in their order.
    public var encoded: String {
        var out = ""
        encode(into: &out)
        return out
    }

    private func encode(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n):
            if n.isFinite && n == n.rounded() && abs(n) < 1e15 {
                out += String(Int64(n))
            } else if n.isFinite {
                out += "\(n)"
            } else {
                out += "null"
            }
        case .float(let n):
            // mpv's "%f": six decimals (finite numbers only, as for .number).
            out += n.isFinite ? String(format: "%.6f", n) : "null"
        case .string(let s): out += JSONValue.quoted(s)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.encode(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                out += JSONValue.quoted(member.key) + ":"
                member.value.encode(into: &out)
            }
            out += "}"
        }
    }

    static func quoted(_ s: String) -> String { jsonStringLiteral(s) }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var numberValue: Double? {
        switch self {
        case .number(let n), .float(let n): n
        default: nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements.map { (key: $0.0, value: $0.1) }) }
    public init(nilLiteral: ()) { self = .null }
}

/// The value of hexadecimal digits given as character codes (at most 8), or nil if any is not
/// 0-9, a-f or A-F: no sign, no prefix, no space, as `UInt32(_:radix:)` would accept.
package func hexValue(_ codes: some Sequence<UInt32>) -> UInt32? {
    var value: UInt32 = 0
    for code in codes {
        let digit: UInt32
        switch code {
        case 0x30...0x39: digit = code - 0x30
        case 0x61...0x66: digit = code - 0x61 + 10
        case 0x41...0x46: digit = code - 0x41 + 10
        default: return nil
        }
        value = value << 4 | digit
    }
    return value
}
