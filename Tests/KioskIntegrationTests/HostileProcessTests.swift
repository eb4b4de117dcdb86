import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// The built `marquee` given hostile configs and arguments: it exits 2 with the problem named
/// (the JSON path, or the option), never by a signal.
@Suite struct HostileProcessTests {
    func run(_ arguments: [String]) throws -> CommandResult {
        let binary = MarqueeProcessTests.binary.path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw MarqueeProcessTests.NotBuilt(description: "\(binary) is not built")
        }
        return try Command.run(binary, arguments)
    }

    /// A config file; hostile ones are bad, and refused by the schema as by the reader.
    func config(_ text: String, _ expectation: TestConfig.Expectation = .refused) throws -> String {
        try TestConfig.write(text, named: "hostile-\(UUID().uuidString).json", expectation)
    }

    @Test func checkConfigReportsHostileValuesWithTheirPaths() throws {
        let wall = #""wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "#
        let cases: [(String, String)] = [
            (#"{"playlist": [{"uri": "\ud800\u0041.mp4"}]}"#, #"syntax error at line 1, column 24: invalid surrogate pair"#),
            (#"{"playlist": [{"uri": "a.mp4"}], "display": {"rotation": 1e300}}"#, "display.rotation: 1e+300 is not a rotation"),
            (#"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "640x360@0.004"}}"#, #"display.mode: "640x360@0.004" is not a mode"#),
            (#"{"playlist": [{"uri": "a.mp4"}], \#(wall)"sync": {"mode": "clock", "epoch": "9999-12-31T23:59:59Z"}}}"#,
             #"wall.sync.epoch: "9999-12-31T23:59:59Z" is outside the years 1970 to 2199"#),
            (#"{"playlist": [{"uri": "a.mp4"}], \#(wall)"sync": {"mode": "clock", "epoch": "0001-01-01T00:00:00Z"}}}"#,
             #"wall.sync.epoch: "0001-01-01T00:00:00Z" is outside the years 1970 to 2199"#),
            (#"{"playlist": [{"uri": "a.mp4", "start": 1e300}]}"#, "playlist[0].start: 1e+300 is out of range"),
            (#"{"playlist": [{"uri": "a.mp4"}], "shuffle": 1e999}"#, "syntax error at line 1, column 45: number out of range"),
        ]
        for (text, expected) in cases {
            let result = try run(["--config", try config(text), "--check-config"])
            #expect(result.status == 2, "\(text): status \(result.status), \(result.errorText)")
            #expect(result.errorText.contains(expected), "\(text): \(result.errorText)")
        }
    }

    @Test func hostileCommandLineValuesAreRefusedByName() throws {
        let good = try config(#"{"playlist": [{"uri": "a.mp4"}]}"#, .valid)
        let cases: [([String], String)] = [
            (["--mode", "640x360@0.004"], "--mode 640x360@0.004: expected WxH or WxH@Hz"),
            (["--mode", "99999999999999999999x360"], "--mode 99999999999999999999x360: expected WxH or WxH@Hz"),
            (["--frames", "99999999999999999999999"], "--frames: 99999999999999999999999 is out of range"),
            (["--frames", "0"], "--frames: 0 is out of range"),
            (["--exit-after", "1e300"], "--exit-after: 1e+300 is out of range"),
            (["--exit-after", "nan"], "--exit-after: \"nan\" is not a number of seconds"),
            (["--output", "a\u{1B}[2Jb"], #"--output a\u001b[2Jb: expected auto, kms or headless"#),
        ]
        for (flags, expected) in cases {
            let result = try run(["--config", good, "--check-config"] + flags)
            #expect(result.status == 2, "\(flags): status \(result.status), \(result.errorText)")
            #expect(result.errorText.contains(expected), "\(flags): \(result.errorText)")
            #expect(!result.errorText.unicodeScalars.contains { $0.isControlCharacter && $0 != "\n" }, "\(flags)")
        }
    }

    /// The issue's socket lines against a playing marquee: each gets an error reply, the process
    /// goes on playing and answering.
    @Test func hostileSocketLinesLeaveAPlayingMarqueeRunning() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let config = try config(#"{"playlist": [{"uri": "\#(clip)"}], "loop": true}"#, .valid)
        let running = try MarqueeProcessTests.Running(config: config, exitAfter: 60)
        let client = try running.connect()
        let lines = [
            #"{"command":["observe_property",1e300,"pause"],"request_id":1}"#,
            #"{"command":["observe_property",-1e300,"pause"],"request_id":2}"#,
            #"{"command":["unobserve_property",1.5],"request_id":3}"#,
            #"{"command":["get_property","pause"],"request_id":1e300}"#,
            #"{"command":["get_property","pause"],"request_id":1.5}"#,
            #"{"command":["seek",1e300,"absolute"],"request_id":4}"#,
            #"{"command":["get_property","\ud800\u0041"],"request_id":5}"#,
            #"{"command":["get_property","pause"],"request_id":1e999}"#,
        ]
        for line in lines {
            #expect(client.send(line))
            // The reply, past the events the looping clip sends meanwhile (start-file, ...).
            var reply: JSONValue
            repeat {
                reply = try JSONParser.parse(try #require(client.readLine(), "no reply to \(line); log:\n\(running.log)"))
            } while reply["event"] != nil
            #expect(reply["error"] == "invalid parameter", "\(line) -> \(reply.encoded)")
        }
        #expect(running.process.end == nil)
        #expect(client.request(["get_property", "pid"], id: 9)?["data"]?.numberValue == Double(running.process.processIdentifier))
    }
}
