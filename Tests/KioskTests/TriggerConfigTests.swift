import Foundation
import Inputs
@testable import Kiosk
import Playback
import Testing
import Triggers

/// `triggers` and `inputs`: read into rules, and refused with JSON paths.
@Suite struct TriggerConfigTests {
    @Test func triggersAreReadIntoRules() throws {
        let config = try KioskConfig.parse(#"""
            {"playlist": [{"uri": "attract.mp4"}],
             "triggers": [
               {"on": {"gpio": {"chip": "gpiochip0", "line": 17, "bias": "pull-up"}, "debounce": 0.03},
                "do": {"play": "birds.mp4"}, "rearm": 2, "signal": {"gpio": {"chip": "gpiochip0", "line": 27}}},
               {"on": {"key": "KEY_3"}, "do": {"play": ["a.mp4", "b.mp4"], "then": "restart"}, "busy": "restart", "idle": 300},
               {"on": {"key": 4, "hold": 5}, "do": {"display": "off"}},
               {"on": {"osc": "/museum/lights", "args": [1, "x", true]}, "do": {"set": "volume", "value": 40},
                "signal": {"osc": {"to": "127.0.0.1:7000", "address": "/lamp"}}},
               {"on": {"key": "BTN_0"}, "do": "toggle", "preroll": false}
             ],
             "inputs": {"osc": "127.0.0.1:9000", "keys": ["/dev/input/by-id/keypad"]}}
            """#, baseDirectory: "/show")
        let t = config.triggers
        #expect(t.count == 5)
        #expect(t[0].input == .gpio(GPIOLine(chip: "gpiochip0", line: 17, bias: .pullUp, activeLow: true)))
        #expect(t[0].action == .play([KioskConfig.Item(uri: "birds.mp4", path: "/show/birds.mp4")], then: .resume))
        #expect(t[0].rule == TriggerRule(source: .gpio(chip: "gpiochip0", line: 17), debounce: 0.03, plays: true, rearm: 2))
        #expect(t[0].signal == .gpio(GPIOLine(chip: "gpiochip0", line: 27)))
        #expect(t[1].input == .key(4) && t[1].busy == .restart && t[1].idle == 300)
        if case .play(let items, let then) = t[1].action { #expect(items.map(\.path) == ["/show/a.mp4", "/show/b.mp4"] && then == .restart) }
        else { Issue.record("not a play: \(t[1].action)") }
        #expect(t[2].input == .key(4) && t[2].hold == 5 && t[2].action == .display(on: false) && !t[2].rule.plays)
        #expect(t[3].input == .osc(address: "/museum/lights", arguments: ["1", "x", "true"]))
        #expect(t[3].action == .set(property: "volume", value: .number(40)))
        #expect(t[3].signal == .osc(UDPEndpoint(parsing: "127.0.0.1:7000")!, address: "/lamp"))
        #expect(t[4].input == .key(0x100) && t[4].action == .toggle && !t[4].preroll && t[0].preroll)
        #expect(config.inputs.osc == UDPEndpoint(parsing: "127.0.0.1:9000"))
        #expect(config.inputs.keyDevices == ["/dev/input/by-id/keypad"])
        // Missing targets are warnings: the player starts, the trigger plays nothing until they are there.
        #expect(config.warnings.map(\.path) == ["triggers[0].do.play", "triggers[1].do.play[0]", "triggers[1].do.play[1]"])
    }

    @Test func nothingListensUnlessConfigured() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "triggers": [{"on": {"osc": "/go"}, "do": "next"}]}"#, baseDirectory: "/")
        #expect(config.inputs.osc == nil)
    }

    @Test func badTriggersNameTheirPath() {
        let cases: [(String, [String])] = [
            (#""triggers": {}"#, ["triggers"]),
            (#""triggers": [{"do": "next"}]"#, ["triggers[0].on"]),
            (#""triggers": [{"on": {"key": "KEY_1"}}]"#, ["triggers[0].do"]),
            (#""triggers": [{"on": {"key": "KEY_NOPE"}, "do": "next"}]"#, ["triggers[0].on.key"]),
            (#""triggers": [{"on": {"key": 1e300}, "do": "next"}]"#, ["triggers[0].on.key"]),
            (#""triggers": [{"on": {"key": -3}, "do": "next"}]"#, ["triggers[0].on.key"]),
            (#""triggers": [{"on": {"key": "KEY_1", "osc": "/a"}, "do": "next"}]"#, ["triggers[0].on"]),
            (#""triggers": [{"on": {}, "do": "next"}]"#, ["triggers[0].on"]),
            (#""triggers": [{"on": {"osc": "play"}, "do": "next"}]"#, ["triggers[0].on.osc"]),
            (#""triggers": [{"on": {"key": "KEY_1", "args": [1]}, "do": "next"}]"#, ["triggers[0].on.args"]),
            (#""triggers": [{"on": {"osc": "/a", "args": [{}]}, "do": "next"}]"#, ["triggers[0].on.args[0]"]),
            (#""triggers": [{"on": {"gpio": {"chip": "gpiochip0"}}, "do": "next"}]"#, ["triggers[0].on.gpio.line"]),
            (#""triggers": [{"on": {"gpio": {"chip": "gpiochip0", "line": 5000}}, "do": "next"}]"#, ["triggers[0].on.gpio.line"]),
            (#""triggers": [{"on": {"gpio": {"chip": "gpiochip0", "line": 1, "edge": "both"}}, "do": "next"}]"#, ["triggers[0].on.gpio.edge"]),
            (#""triggers": [{"on": {"gpio": {"chip": "gpiochip0", "line": 1, "bias": "up"}}, "do": "next"}]"#, ["triggers[0].on.gpio.bias"]),
            (#""triggers": [{"on": {"key": "KEY_1", "hold": 0}, "do": "next"}]"#, ["triggers[0].on.hold"]),
            (#""triggers": [{"on": {"key": "KEY_1", "debounce": -1}, "do": "next"}]"#, ["triggers[0].on.debounce"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "jump"}]"#, ["triggers[0].do"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"play": []}}]"#, ["triggers[0].do.play"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"play": "a.mp4", "then": "later"}}]"#, ["triggers[0].do.then"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"play": "http://x/a.mp4"}}]"#, ["triggers[0].do.play"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"display": "dim"}}]"#, ["triggers[0].do.display"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"set": "volume"}}]"#, ["triggers[0].do.value"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": {"play": "a.mp4", "display": "on"}}]"#, ["triggers[0].do"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "busy": "wait"}]"#, ["triggers[0].busy"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "rearm": 1e9}]"#, ["triggers[0].rearm"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "idle": 0}]"#, ["triggers[0].idle"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "signal": {"osc": {"to": "lamp:7000", "address": "/l"}}}]"#, ["triggers[0].signal.osc.to"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "colour": 1}]"#, ["triggers[0].colour"]),
            (#""triggers": [{"on": {"key": "KEY_1"}, "do": "next", "preroll": "no"}]"#, ["triggers[0].preroll"]),
            (#""inputs": {"osc": "localhost:9000"}"#, ["inputs.osc"]),
            (#""inputs": {"osc": "127.0.0.1:99999"}"#, ["inputs.osc"]),
            (#""inputs": {"keys": ["event3"]}"#, ["inputs.keys[0]"]),
            (#""inputs": {"midi": 1}"#, ["inputs.midi"]),
        ]
        for (field, paths) in cases {
            let text = "{\"playlist\": [{\"uri\": \"a.mp4\"}], \(field)}"
            let found = configProblems(text)
            #expect(found.map(\.path) == paths, "\(text): \(found)")
            #expect(found.allSatisfy { !$0.message.isEmpty })
        }
    }
}
