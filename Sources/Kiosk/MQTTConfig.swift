import Foundation
import Playback

/// `mqtt`: fleet control over an MQTT broker (docs/http.md). Off unless `broker` is given.
public struct MQTTSettings: Sendable, Equatable {
    /// `mqtt.broker`: `host:port` (a name or an address); nil: no MQTT.
    public var brokerHost: String?
    public var brokerPort = 1883
    /// `mqtt.id`: this player's name in its topics (default: the host name).
    public var id: String?
    /// `mqtt.groups`: the groups whose command topics it takes.
    public var groups: [String] = []
    /// `mqtt.prefix`: the first level of every topic.
    public var prefix = "marquee"
    /// `mqtt.statusInterval`: seconds between status messages (also sent after each command).
    public var statusInterval = 10.0
    /// `mqtt.username`: the name the player logs in with; nil: anonymous.
    public var username: String?
    /// `mqtt.passwordFile`: the file whose first line is the password (read when the client starts,
    /// never logged); nil: no password.
    public var passwordFile: String?
    /// `mqtt.tls.ca`: the PEM certificate(s) the broker's certificate must chain to; given: TLS to
    /// the broker (its name or address checked against its certificate); nil: plain TCP.
    public var tlsCA: String?

    public init() {}

    /// Topic levels are plain names: letters, digits, `_`, `-`, `.` (no wildcards, no `/`).
    public static func nameProblem(_ name: String) -> String? {
        if name.isEmpty || name.utf8.count > 64 { return "expected 1 to 64 characters" }
        let ok = name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "_-.".unicodeScalars.contains($0) }
        return ok ? nil : "\"\(name.prefix(64))\" may have only letters, digits, '_', '-' and '.' (no '/', '+' or '#')"
    }
}

extension ConfigReader {
    mutating func readMQTT(_ value: JSONValue, baseDirectory: String) -> MQTTSettings {
        var settings = MQTTSettings()
        guard let fields = members(value, at: "mqtt", allowed: ["broker", "id", "groups", "prefix", "statusInterval", "username",
                                                                "passwordFile", "tls"]) else { return settings }
        for (field, v) in fields {
            let path = "mqtt.\(field)"
            switch field {
            case "username":
                guard let s = string(v, at: path) else { continue }
                if s.isEmpty || s.utf8.count > 256 || s.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                    problem(path, "expected 1 to 256 characters, no control characters")
                } else {
                    settings.username = s
                }
            case "passwordFile":
                settings.passwordFile = fileName(v, at: path, baseDirectory: baseDirectory)
            case "tls":
                guard let tls = members(v, at: path, allowed: ["ca"]) else { continue }
                for (_, entry) in tls { settings.tlsCA = fileName(entry, at: "\(path).ca", baseDirectory: baseDirectory) }
                if tls.isEmpty { problem(path, "give ca: the certificate authority's PEM file") }
            case "broker":
                guard let s = string(v, at: path) else { continue }
                guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (1...65535).contains(port),
                      !s[..<colon].isEmpty, !s[..<colon].contains(where: { $0 == "/" || $0 == " " }) else {
                    problem(path, "\"\(Self.clipped(s))\" is not host:port (e.g. broker.example:1883 or 127.0.0.1:1883)")
                    continue
                }
                settings.brokerHost = String(s[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                settings.brokerPort = port
            case "id", "prefix":
                guard let s = string(v, at: path) else { continue }
                if let why = MQTTSettings.nameProblem(s) { problem(path, why); continue }
                if field == "id" { settings.id = s } else { settings.prefix = s }
            case "groups":
                guard case .array(let list) = v else {
                    problem(path, "expected a list of group names, found \(v.typeName)")
                    continue
                }
                for (i, entry) in list.enumerated() {
                    guard let s = string(entry, at: "\(path)[\(i)]") else { continue }
                    if let why = MQTTSettings.nameProblem(s) { problem("\(path)[\(i)]", why) } else { settings.groups.append(s) }
                }
            default:
                guard case .number(let n) = v else {
                    problem(path, "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do { settings.statusInterval = try checkedNumber(n, in: 0.5...3600, field: path) } catch { problem(error) }
            }
        }
        if settings.passwordFile != nil && settings.username == nil {
            problem("mqtt.passwordFile", "a password needs mqtt.username")
        }
        return settings
    }
}
