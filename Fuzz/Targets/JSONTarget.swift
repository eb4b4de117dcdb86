import Kiosk

/// The JSON parser on any bytes: it throws or returns a value, and a value survives encoding and
/// parsing again unchanged (but for numbers past Double's range: they parse as infinities, which
/// the encoder writes as null, JSON having no infinity).
public func fuzzJSON(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let value = try? JSONParser.parse(text) else { return }
    let encoded = value.encoded
    guard let again = try? JSONParser.parse(encoded) else {
        fatalError("the parser rejects its own encoding \(encoded) of \(text)")
    }
    guard again == finite(value) else { fatalError("\(text) changes in a round trip: \(encoded)") }
}

/// `value` with its non-finite numbers replaced by null.
private func finite(_ value: JSONValue) -> JSONValue {
    switch value {
    case .number(let n) where !n.isFinite: .null
    case .array(let items): .array(items.map(finite))
    case .object(let members): .object(members.map { ($0.key, finite($0.value)) })
    default: value
    }
}
