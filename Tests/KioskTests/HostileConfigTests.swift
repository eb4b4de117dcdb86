import Foundation
@testable import Kiosk
import Playback
import Testing

/// Hostile values from a config: each is reported with its JSON path, none stops the process.
@Suite struct HostileConfigTests {
    static let hugeString = "\"" + String(repeating: "9", count: 100_000) + "\""
    /// Numbers at and past every edge a conversion has: Double's, Int64's, UInt64's, zero's.
    static let hostileNumbers = ["1e300", "-1e300", "1e-300", "0", "-0", "9223372036854775807", "9223372036854775808",
                                 "-9223372036854775809", "18446744073709551616", "-1", "1.5", "0.5", "1e15", hugeString,
                                 "null", "true", "[]"]

    /// Every numeric field of the config, with the values of `hostileNumbers` it accepts; `@@` marks the value.
    static let numericFields: [(path: String, template: String, accepted: Set<String>)] = [
        ("display.rotation", #"{"playlist": [{"uri": "a.mp4"}], "display": {"rotation": @@}}"#, ["0", "-0"]),
        ("playlist[0].start", #"{"playlist": [{"uri": "a.mp4", "start": @@}]}"#, ["1e-300", "0", "-0", "1.5", "0.5"]),
        ("playlist[0].end", #"{"playlist": [{"uri": "a.mp4", "end": @@}]}"#, ["1e-300", "0", "-0", "1.5", "0.5"]),
        ("playlist[0].duration", #"{"playlist": [{"uri": "a.png", "duration": @@}]}"#, ["1.5", "0.5"]),
        ("wall.canvas.width", wall(canvas: #"{"width": @@, "height": 100}"#), []),
        ("wall.canvas.height", wall(canvas: #"{"width": 100, "height": @@}"#), []),
        ("wall.regions[0].x", wall(region: #"{"x": @@, "y": 0, "width": 10, "height": 10}"#), ["0", "-0"]),
        ("wall.regions[0].height", wall(region: #"{"x": 0, "y": 0, "width": 10, "height": @@}"#), []),
        ("wall.outputs[0].y", wall(output: #"{"name": "a", "x": 0, "y": @@, "width": 10, "height": 10}"#), ["0", "-0"]),
        ("wall.outputs[0].width", wall(output: #"{"name": "a", "x": 0, "y": 0, "width": @@, "height": 10}"#), []),
        ("wall.outputs[0].rotation",
         wall(output: #"{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10, "rotation": @@}"#), ["0", "-0"]),
    ]

    static func wall(canvas: String = #"{"width": 100, "height": 100}"#,
                     region: String = #"{"x": 0, "y": 0, "width": 10, "height": 10}"#,
                     output: String = #"{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}"#) -> String {
        #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": \#(canvas), "regions": [\#(region)], "outputs": [\#(output)]}}"#
    }

    @Test(arguments: numericFields.map(\.path))
    func everyNumericFieldReportsHostileValuesWithItsPath(_ path: String) throws {
        let field = try #require(Self.numericFields.first { $0.path == path })
        for value in Self.hostileNumbers {
            let found = problems(field.template.replacingOccurrences(of: "@@", with: value))
            let shown = value.count > 40 ? "a \(value.count)-character string" : value
            let mine = found.filter { $0.hasPrefix(path + ":") }
            if field.accepted.contains(value) {
                #expect(mine.isEmpty, "\(path) = \(shown) should be accepted: \(found)")
            } else {
                #expect(mine.count == 1, "\(path) = \(shown) should be reported once at \(path): \(found)")
            }
            // Reports are short even for a huge value.
            #expect(found.allSatisfy { $0.count < 400 }, "\(path) = \(shown): \(found.map { $0.prefix(100) })")
        }
    }

    @Test func hostileRotationNamesItsPath() {
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"rotation": 1e300}}"#) == [
            "display.rotation: 1e+300 is not a rotation: write 0, 90, 180 or 270 (degrees clockwise)",
        ])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"rotation": 45}}"#) == [
            "display.rotation: 45 is not a rotation: write 0, 90, 180 or 270 (degrees clockwise)",
        ])
    }

    @Test func timesPastWhatAClockCanHoldAreReported() {
        #expect(problems(#"{"playlist": [{"uri": "a.mp4", "start": 1e300}]}"#) == [
            "playlist[0].start: 1e+300 is out of range (0 to 1000000000)",
        ])
        #expect(problems(#"{"playlist": [{"uri": "a.png", "duration": 1e-300}]}"#) == [
            "playlist[0].duration: 1e-300 is out of range (0.001 to 1000000000)",
        ])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4", "start": -2}]}"#) == [
            "playlist[0].start: -2.0 is negative: times are seconds from the start of the item",
        ])
    }

    @Test(arguments: ["640x360@0.004", "640x360@1e300", "640x360@-60", "640x360@nan", "640x360@inf", "640x360@0.0000001",
                      "640x360@0.0005", "640x360@1000.5", "640x360@", "640x-360", "0x0", "99999999999999999999x360",
                      "640x99999999999999999999@60", "640x360@99999999999999999999", "640x360@1.99999999999999999999",
                      "x", "@", "", "640x360@60@60"])
    func hostileModesAreReportedAtTheirPath(_ mode: String) {
        let found = problems(#"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "\#(mode)"}}"#)
        #expect(found.count == 1 && found[0].hasPrefix("display.mode: \"\(mode)\" is not a mode"), "\(mode): \(found)")
        #expect(DisplayMode(parsing: mode) == nil, "\(mode)")
    }

    @Test(arguments: ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2262-04-12T00:00:00Z", "1677-09-21T00:00:00Z",
                      "2200-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2026-01-01T00:00:00.9999999999999999999999999999Z junk"])
    func epochsOutsideTheClocksYearsAreReported(_ epoch: String) {
        let text = #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "sync": {"mode": "clock", "epoch": "\#(epoch)"}}}"#
        let found = problems(text)
        #expect(found.count == 1 && found[0].hasPrefix("wall.sync.epoch: \"\(epoch)\""), "\(epoch): \(found)")
    }

    @Test func epochsInsideTheYearsAreTaken() throws {
        for epoch in ["1970-01-01T00:00:00Z", "2199-12-31T23:59:59.999999999Z", "2026-01-01T00:00:00.99999999999999999999Z"] {
            let text = #"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "a", "x": 0, "y": 0, "width": 10, "height": 10}], "sync": {"mode": "clock", "epoch": "\#(epoch)"}}}"#
            #expect(problems(text).isEmpty, "\(epoch)")
        }
    }

    @Test func hostileFileModesAreReported() {
        for mode in ["77777777777777777777777777", "-1", "1000", "0o777", ""] {
            let found = problems(#"{"playlist": [{"uri": "a.mp4"}], "control": {"mode": "\#(mode)"}}"#)
            #expect(found == ["control.mode: \"\(mode)\" is not an octal file mode such as \"0660\""], "\(mode): \(found)")
        }
    }

    @Test func aBrokenSurrogateInAConfigIsASyntaxError() {
        let found = problems(#"{"playlist": [{"uri": "\ud800\u0041.mp4"}]}"#)
        #expect(found == [#"syntax error at line 1, column 24: invalid surrogate pair: \ud800 is not followed by a low surrogate"#])
    }
}

/// Text from a config in its problems: short, and without raw control characters.
@Suite struct HostileConfigTextTests {
    @Test func problemsEscapeControlCharactersAndClipLongValues() {
        do {
            _ = try KioskConfig.parse(#"{"playlist": [{"uri": "http://\u001b[2J"}], "display": {"background": "\#(String(repeating: "x", count: 5000))"}, "k\u009b": 1}"#,
                                      source: "a\u{1B}.json", baseDirectory: "/media")
            Issue.record("the config was taken")
        } catch {
            let text = error.description
            // One problem a line; no other control character.
            #expect(text.split(separator: "\n").count == 3)
            #expect(!text.unicodeScalars.contains { $0.isControlCharacter && $0 != "\n" }, "\(text.debugDescription)")
            #expect(text.contains(#"a\u001b.json: playlist[0].uri: "http://\u001b[2J": the host has characters a host name cannot have"#), "\(text.debugDescription)")
            #expect(text.contains(#"a\u001b.json: k\u009b: unknown key"#), "\(text.debugDescription)")
            #expect(text.count < 1000, "\(text.count) characters")
        }
    }
}
