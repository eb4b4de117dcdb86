import HTTPServer
@testable import Kiosk
import Testing

@Suite struct HTTPConfigTests {
    func problems(_ http: String) -> [String] {
        do {
            _ = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "http": \#(http)}"#, baseDirectory: "/etc/marquee")
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test func offByDefault() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/")
        #expect(config.http.listen == nil)
    }

    @Test func aListenerWithTokensAndLimits() throws {
        let config = try KioskConfig.parse(#"""
            {"playlist": [{"uri": "a.mp4"}], "http": {"listen": "[::1]:8443", "tokens": "tokens", "tls": {"certificate": "c.pem", "key": "/k.pem"},
             "allowedHosts": ["Screen1.Example"], "maxConnections": 4, "idleTimeout": 5, "uploads": {"directory": "/srv/media", "maxBytes": 1000}}}
            """#, baseDirectory: "/etc/marquee")
        #expect(config.http.listen == .inet(host: "::1", port: 8443))
        #expect(config.http.tokens == "/etc/marquee/tokens")
        #expect(config.http.tlsCertificate == "/etc/marquee/c.pem" && config.http.tlsKey == "/k.pem")
        #expect(config.http.allowedHosts == ["screen1.example"])
        #expect(config.http.limits.maxConnections == 4 && config.http.limits.idleTimeout == 5)
        #expect(config.http.uploadDirectory == "/srv/media" && config.http.maxUploadBytes == 1000)
        #expect(try HTTPListenAddress(parsing: "/run/marquee/http.sock") == .unix(path: "/run/marquee/http.sock"))
    }

    @Test func noDefaultSecret() {
        #expect(problems(#"{"listen": "127.0.0.1:8080"}"#) == ["http.tokens: missing: the HTTP API has no default secret; give a token file (docs/http.md)"])
    }

    @Test func badValuesAreNamedByTheirJSONPath() {
        let cases: [(String, String)] = [
            (#"{"listen": "localhost:8080", "tokens": "t"}"#, #"http.listen: "localhost" is not an IPv4 address"#),
            (#"{"listen": "127.0.0.1:70000", "tokens": "t"}"#, #"http.listen: "70000" is not a port"#),
            (#"{"listen": "[127.0.0.1]:80", "tokens": "t"}"#, #"http.listen: "127.0.0.1" is not an IPv6 address"#),
            (#"{"listen": "8080", "tokens": "t"}"#, #"http.listen: "8080" is neither address:port"#),
            (#"{"maxConnections": 0}"#, "http.maxConnections: 0"),
            (#"{"maxConnections": 1e300}"#, "http.maxConnections: 1e+300"),
            (#"{"requestsPerSecond": "fast"}"#, "http.requestsPerSecond: expected a number"),
            (#"{"tls": {"certificate": "c.pem"}}"#, "http.tls: give both certificate and key"),
            (#"{"allowedHosts": ["a b"]}"#, #"http.allowedHosts[0]: "a b" is not a host name"#),
            (#"{"uploads": {"folder": "/x"}}"#, "http.uploads.folder: unknown key"),
            (#"{"port": 80}"#, "http.port: unknown key"),
        ]
        for (http, expected) in cases {
            let found = problems(http)
            #expect(found.contains { $0.hasPrefix(expected) }, "\(http): \(found)")
        }
    }
}

@Suite struct MQTTConfigTests {
    @Test func aBrokerIdAndGroups() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "mqtt": {"broker": "broker.lan:1883", "id": "lobby-1", "groups": ["lobby", "floor2"], "statusInterval": 5}}"#,
                                           baseDirectory: "/")
        #expect(config.mqtt.brokerHost == "broker.lan" && config.mqtt.brokerPort == 1883)
        #expect(config.mqtt.id == "lobby-1" && config.mqtt.groups == ["lobby", "floor2"] && config.mqtt.statusInterval == 5)
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/").mqtt.brokerHost == nil)
    }

    @Test func aLoginAndTLSWithFilesBesideTheConfig() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "mqtt": {"broker": "broker.lan:8883", "username": "lobby-1", "passwordFile": "mqtt-password", "tls": {"ca": "/etc/ssl/fleet-ca.pem"}}}"#,
                                           baseDirectory: "/etc/marquee")
        #expect(config.mqtt.username == "lobby-1")
        #expect(config.mqtt.passwordFile == "/etc/marquee/mqtt-password")
        #expect(config.mqtt.tlsCA == "/etc/ssl/fleet-ca.pem")
        let anonymous = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "mqtt": {"broker": "broker.lan:1883"}}"#, baseDirectory: "/")
        #expect(anonymous.mqtt.username == nil && anonymous.mqtt.passwordFile == nil && anonymous.mqtt.tlsCA == nil)
    }

    @Test func topicLevelsCannotHoldWildcardsOrSlashes() {
        let cases: [(String, String)] = [
            (#"{"broker": "broker.lan"}"#, "mqtt.broker: \"broker.lan\" is not host:port"),
            (#"{"broker": "broker.lan:0"}"#, "mqtt.broker:"),
            (#"{"id": "a/b"}"#, "mqtt.id:"),
            (##"{"id": "#"}"##, "mqtt.id:"),
            (#"{"groups": ["lobby", "+"]}"#, "mqtt.groups[1]:"),
            (#"{"statusInterval": 0}"#, "mqtt.statusInterval:"),
            (#"{"password": "x"}"#, "mqtt.password: unknown key"),
            (#"{"passwordFile": "pw"}"#, "mqtt.passwordFile: a password needs mqtt.username"),
            (#"{"username": ""}"#, "mqtt.username:"),
            (#"{"username": "a\nb"}"#, "mqtt.username:"),
            (#"{"username": "u", "passwordFile": ""}"#, "mqtt.passwordFile: the file name is empty"),
            (#"{"tls": {}}"#, "mqtt.tls: give ca"),
            (#"{"tls": {"ca": "ca.pem", "insecure": true}}"#, "mqtt.tls.insecure: unknown key"),
        ]
        for (mqtt, expected) in cases {
            var found: [String] = []
            do { _ = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "mqtt": \#(mqtt)}"#, baseDirectory: "/") } catch { found = error.problems.map(\.description) }
            #expect(found.contains { $0.hasPrefix(expected) }, "\(mqtt): \(found)")
        }
    }
}
