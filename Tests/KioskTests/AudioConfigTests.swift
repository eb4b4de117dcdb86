import Foundation
import Kiosk
import Playback
import Sound
import Testing

/// `audio` in the config, an item's `volume`, and the sound's properties on the control socket.
@Suite struct AudioConfigTests {
    @Test func audioSettingsAreRead() throws {
        let config = try KioskConfig.parse(#"""
            {"playlist": [{"uri": "a.mp4", "volume": 40}, {"uri": "b.mp4"}],
             "audio": {"enabled": false, "device": "hdmi:CARD=PCH,DEV=0", "volume": 80, "mute": true, "delay": -0.05, "output": "left"}}
            """#, baseDirectory: "/")
        #expect(config.audio.enabled == false)
        #expect(config.audio.device == "hdmi:CARD=PCH,DEV=0")
        #expect(config.audio.volume == 80 && config.audio.mute && config.audio.delay == -0.05 && config.audio.output == "left")
        #expect(config.playlist.map(\.volume) == [40, nil])
        let defaults = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/").audio
        #expect(defaults == AudioSettings())
        #expect(defaults.enabled && defaults.device == "auto" && defaults.volume == 100 && !defaults.mute)
    }

    @Test func badAudioSettingsNameTheirPath() {
        let cases: [(String, String)] = [
            (#"{"audio": {"volume": 101}}"#, "audio.volume"),
            (#"{"audio": {"volume": 1e300}}"#, "audio.volume"),
            (#"{"audio": {"volume": "loud"}}"#, "audio.volume"),
            (#"{"audio": {"device": ""}}"#, "audio.device"),
            (#"{"audio": {"device": "a\u0001b"}}"#, "audio.device"),
            (#"{"audio": {"mute": 1}}"#, "audio.mute"),
            (#"{"audio": {"delay": -1.5}}"#, "audio.delay"),
            (#"{"audio": {"output": ""}}"#, "audio.output"),
            (#"{"audio": {"speakers": 2}}"#, "audio.speakers"),
            (#"{"audio": 5}"#, "audio"),
        ]
        for (audio, path) in cases {
            let text = "{\"playlist\": [{\"uri\": \"a.mp4\"}], " + audio.dropFirst()
            let found = configProblems(text)
            #expect(found.map(\.path) == [path], "\(text): \(found)")
        }
        let item = configProblems(#"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4", "volume": -3}]}"#)
        #expect(item.map(\.path) == ["playlist[1].volume"], "\(item)")
    }

    final class FakeAudio: AudioControls, @unchecked Sendable {
        var volume = 100.0
        var mute = false
        var device = "auto"
        var delay = 0.0
        var currentOutput: String? = nil
        func setVolume(_ volume: Double) { self.volume = volume }
        func setMute(_ mute: Bool) { self.mute = mute }
        func setDevice(_ device: String) throws {
            if device == "broken" { throw AudioPathError(device: device, reason: "cannot be opened") }
            self.device = device
            currentOutput = "alsa"
        }
        func setDelay(_ seconds: Double) { delay = seconds }
    }

    @Test func soundPropertiesAreGotAndSetAsMpvs() throws {
        let audio = FakeAudio()
        let controller = KioskController(status: KioskStatus(), audio: audio) { _ in .done }
        #expect(try controller.property("volume") == .float(100))
        try controller.setProperty("volume", to: .number(35))
        #expect(audio.volume == 35)
        try controller.setProperty("volume", to: .string("70"))
        #expect(audio.volume == 70)
        #expect(throws: ControlError.propertyError) { try controller.setProperty("volume", to: .number(101)) }
        #expect(throws: ControlError.propertyError) { try controller.setProperty("volume", to: .number(-1)) }
        #expect(audio.volume == 70)
        try controller.setProperty("mute", to: .string("yes"))
        let mute = try controller.property("mute")
        #expect(audio.mute && mute == .bool(true))
        try controller.setProperty("mute", to: .bool(false))
        #expect(!audio.mute)
        #expect(throws: ControlError.propertyFormat) { try controller.setProperty("mute", to: .string("maybe")) }
        #expect(throws: ControlError.propertyUnavailable) { try controller.property("current-ao") }
        try controller.setProperty("audio-device", to: .string("hdmi:CARD=PCH,DEV=1"))
        #expect(try controller.property("audio-device") == .string("hdmi:CARD=PCH,DEV=1"))
        #expect(try controller.property("current-ao") == .string("alsa"))
        #expect(throws: ControlError.self) { try controller.setProperty("audio-device", to: .string("broken")) }
        #expect(throws: ControlError.propertyError) { try controller.setProperty("audio-device", to: .string("")) }
        try controller.setProperty("audio-delay", to: .number(0.1))
        #expect(try controller.property("audio-delay") == .float(0.1))
        #expect(throws: ControlError.propertyError) { try controller.setProperty("audio-delay", to: .number(5)) }
        #expect(throws: ControlError.propertyError) { try controller.setProperty("current-ao", to: .string("pulse")) }
        #expect(controller.propertyNames.contains("volume") && controller.propertyNames.contains("current-ao"))
        // Without sound: unavailable, not unknown.
        let none = KioskController(status: KioskStatus()) { _ in .done }
        #expect(throws: ControlError.propertyUnavailable) { try none.property("volume") }
    }
}
