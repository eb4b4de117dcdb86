import Foundation
@testable import Kiosk
import Playback
import Testing

/// Hostile numbers on the control socket: mpv's error reply, and the server goes on serving.
@Suite struct HostileControlInputTests {
    let logger = Logger(level: .error, sink: { _ in })

    // JSON numbers are Doubles here: 9223372036854775807 reads as 2^63 (past Int64), and
    // -9223372036854775809 as -2^63 (Int64.min, a good id).
    static let hostileIDs = ["1e300", "-1e300", "1e-300", "1.5", "9223372036854775808", "9223372036854775807", "-9.3e18",
                             "18446744073709551616", "1e308", "\"7\"", "null", "[]", "{}", "true"]

    @Test func hostileNumbersGetInvalidParameterAndTheServerGoesOn() throws {
        let path = "/tmp/marquee-hostile-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
        let server = try ControlServer(path: path, handler: FakeHandler(), logger: logger)
        defer { server.stop() }
        let client = try #require(UnixSocketClient.connect(path: path, timeout: 2))
        var lines: [String] = []
        for id in Self.hostileIDs {
            lines.append(#"{"command":["observe_property",\#(id),"pause"],"request_id":1}"#)
            lines.append(#"{"command":["unobserve_property",\#(id)],"request_id":1}"#)
        }
        for line in lines {
            #expect(client.send(line))
            let reply = try #require(client.readLine(), "no reply to \(line)")
            let value = try JSONParser.parse(reply)
            #expect(value["error"] == "invalid parameter", "\(line) -> \(reply)")
            #expect(value["request_id"] == 1, "\(line) -> \(reply)")
        }
        // Ids at the edges of Int64 (as Doubles hold them) are ids like any other.
        for id in ["9223372036854774784", "-9223372036854775808", "0", "-0"] {
            #expect(client.send(#"{"command":["observe_property",\#(id),"pause"],"request_id":2}"#))
            #expect(try JSONParser.parse(try #require(client.readLine()))["error"] == "success", "\(id)")
        }
        // The server still answers.
        let reply = try #require(client.request(["get_property", "pause"], id: 9))
        #expect(reply["error"] == "success")
    }

    @Test func hostileRequestIDsGetInvalidParameterAndTheServerGoesOn() throws {
        let path = "/tmp/marquee-hostile-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
        let server = try ControlServer(path: path, handler: FakeHandler(), logger: logger)
        defer { server.stop() }
        let client = try #require(UnixSocketClient.connect(path: path, timeout: 2))
        for id in ["1e300", "-1e300", "1e-300", "1.5", "9223372036854775808", "9223372036854775807", "-9.3e18", "1e999", "\"x\"", "[1]"] {
            #expect(client.send(#"{"command":["get_property","pause"],"request_id":\#(id)}"#))
            let reply = try #require(client.readLine(), "no reply to request_id \(id)")
            let value = try JSONParser.parse(reply)
            #expect(value["error"] == "invalid parameter", "request_id \(id) -> \(reply)")
            #expect(value["data"] == nil, "request_id \(id) -> \(reply)")
        }
        for id in ["9223372036854774784", "-9223372036854775808", "0", "7"] {
            #expect(client.send(#"{"command":["get_property","pause"],"request_id":\#(id)}"#))
            let value = try JSONParser.parse(try #require(client.readLine()))
            #expect(value["error"] == "success", "request_id \(id)")
            #expect(value["request_id"] == (try JSONParser.parse(id)), "request_id \(id)")
        }
        #expect(client.request(["get_property", "pause"], id: 3)?["error"] == "success")
    }

    @Test func hostileSeekTargetsAreInvalidParameters() {
        let controller = KioskController(status: KioskStatus()) { _ in .done }
        // A numeric string is converted as mpv converts it ("10" is 10 s); others are refused.
        for seconds: JSONValue in [1e300, -1e300, 1e15, -1e15, "ten", "1e300", "nan", nil] {
            #expect(throws: ControlError.invalidParameter, "\(seconds)") { try controller.run("seek", [seconds, "absolute"]) }
        }
        for seconds: JSONValue in [0, -0.0, 1.5, -30, 86400, "10", " -2.5"] {
            #expect(throws: Never.self, "\(seconds)") { try controller.run("seek", [seconds]) }
        }
    }
}

/// Hostile environment values (systemd's, or set by hand): read without a trap.
@Suite struct HostileEnvironmentTests {
    @Test func watchdogIntervalsFromAnyTextAreReadOrIgnored() {
        let ignored = ["0", "-1", "-9223372036854775808", "9223372036854775808", "99999999999999999999999", "1e300",
                       "1.5", "", " 30000000", "0x10", "nan"]
        for text in ignored {
            #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": text]).watchdogInterval == nil, "\(text)")
        }
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "30000000"]).watchdogInterval == .seconds(15))
        let longest = ServiceNotifier(environment: ["WATCHDOG_USEC": "9223372036854775807"])
        #expect(longest.watchdogInterval == .microseconds(Int64.max / 2))
        longest.watchdogPing()  // no NOTIFY_SOCKET: nothing is sent, and nothing traps
    }

    @Test func socketFoldersFromAnyTextGiveAPath() {
        for runtime in [":::", "", ":", String(repeating: "/a", count: 10_000)] {
            let path = defaultControlSocketPath(environment: ["RUNTIME_DIRECTORY": runtime, "XDG_RUNTIME_DIR": "/run/user/1"])
            #expect(path.hasSuffix("marquee.sock"), "\(runtime.prefix(10))")
        }
    }
}
