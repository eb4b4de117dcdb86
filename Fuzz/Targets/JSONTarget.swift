import Kiosk

/// The JSON parser on any bytes: it throws or returns a value, and a value survives encoding and
/// parsing again unchanged.
public func fuzzJSON(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let value = try? JSONParser.parse(text) else { return }
    let encoded = value.encoded
    guard let again = try? JSONParser.parse(encoded) else {
        fatalError("the parser rejects its own encoding \(encoded) of \(text)")
    }
    guard again == value else { fatalError("\(text) changes in a round trip: \(encoded)") }
}
