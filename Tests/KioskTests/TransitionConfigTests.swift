import Foundation
@testable import Kiosk
import Playback
import Testing

/// `transition` at the top level and per item: read, defaulted, and refused with JSON paths.
@Suite struct TransitionConfigTests {
    @Test func transitionsAreReadWithTheTopLevelOneAsDefault() throws {
        let config = try KioskConfig.parse(#"""
            {"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "transition": {"type": "fade", "duration": 2}},
                          {"uri": "c.mp4", "transition": {"type": "cut"}}],
             "transition": {"type": "crossfade", "duration": 0.5}}
            """#, baseDirectory: "/")
        #expect(config.transition == Transition(.crossfade, duration: MediaTime(seconds: 0.5, preferredTimescale: 90_000)))
        let into = config.playlist.map { config.transition(into: $0) }
        #expect(into.map(\.kind) == [.crossfade, .fade, .cut])
        #expect(into.map(\.duration.seconds) == [0.5, 2, 0])
        // Without a duration: 1 s; without any transition: cut.
        let plain = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4", "transition": {"type": "crossfade"}}]}"#, baseDirectory: "/")
        #expect(plain.transition == .cut)
        #expect(plain.transition(into: plain.playlist[0]).duration.seconds == 1)
        // Outputs that cannot blend (a Y'CbCr plane) are kept off that route when any seam mixes.
        #expect(config.hasTransitions && plain.hasTransitions)
        #expect(!(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4", "transition": {"type": "cut"}}]}"#, baseDirectory: "/")).hasTransitions)
    }

    @Test func badTransitionsNameTheirPath() {
        let cases: [(String, String)] = [
            (#""transition": {"type": "wipe"}"#, "transition.type"),
            (#""transition": {"duration": 1}"#, "transition.type"),
            (#""transition": {"type": 3}"#, "transition.type"),
            (#""transition": {"type": "fade", "duration": -1}"#, "transition.duration"),
            (#""transition": {"type": "fade", "duration": 0}"#, "transition.duration"),
            (#""transition": {"type": "fade", "duration": 10.5}"#, "transition.duration"),
            (#""transition": {"type": "fade", "duration": 1e300}"#, "transition.duration"),
            (#""transition": {"type": "fade", "duration": "1"}"#, "transition.duration"),
            (#""transition": {"type": "fade", "speed": 1}"#, "transition.speed"),
            (#""transition": "fade""#, "transition"),
        ]
        for (field, path) in cases {
            let text = "{\"playlist\": [{\"uri\": \"a.mp4\"}], \(field)}"
            let found = configProblems(text)
            #expect(found.map(\.path) == [path], "\(text): \(found)")
            #expect(found.allSatisfy { !$0.message.isEmpty })
        }
        let item = configProblems(#"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "transition": {"type": "crossfade", "duration": -0.5}}]}"#)
        #expect(item.map(\.path) == ["playlist[1].transition.duration"], "\(item)")
        #expect(item.first?.message.contains("-0.5") == true)
    }

    @Test func thePlaylistPropertyGivesEachEntrysTransition() throws {
        let config = try KioskConfig.parse(#"""
            {"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "transition": {"type": "fade", "duration": 2}}],
             "transition": {"type": "crossfade", "duration": 0.5}}
            """#, baseDirectory: "/")
        let status = KioskStatus()
        status.update { $0.replaceItems(PlaybackReporter.statusItems(config)) }
        let controller = KioskController(status: status) { _ in .done }
        let entries = try controller.property("playlist").arrayValue ?? []
        #expect(entries.count == 2)
        #expect(entries.first?["transition"]?["type"]?.stringValue == "crossfade")
        #expect(entries.first?["transition"]?["duration"]?.numberValue == 0.5)
        #expect(entries.last?["transition"]?["type"]?.stringValue == "fade")
        #expect(entries.last?["transition"]?["duration"]?.numberValue == 2)
        // A cut is the default and is not listed.
        let plain = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/")
        status.update { $0.replaceItems(PlaybackReporter.statusItems(plain)) }
        #expect(try controller.property("playlist").arrayValue?.first?["transition"] == nil)
    }
}
