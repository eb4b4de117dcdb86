import Playback

/// `audio`: whether and where the player's sound plays.
public struct AudioSettings: Sendable, Equatable {
    /// `audio.enabled` (default true).
    public var enabled = true
    /// `audio.device`: an ALSA device name, or `auto` (the default): the HDMI/DisplayPort device
    /// of the output's connector where ALSA exposes one, else `default`; no sound card at all:
    /// no sound, and nothing to complain about.
    public var device = "auto"
    /// `audio.volume`, 0 to 100 (default 100).
    public var volume = 100.0
    /// `audio.mute` (default false).
    public var mute = false
    /// `audio.output`: on a wall, the name of the wall output that plays the sound (the others
    /// are silent); nil: the wall's first output.
    public var output: String?
    /// `audio.delay`: seconds the sound is played later (positive) or earlier than its pictures,
    /// for a receiver whose own latency ALSA does not report (mpv's `audio-delay`), -1 to 1.
    public var delay = 0.0
    public init() {}
}

extension ConfigReader {
    mutating func readAudio(_ value: JSONValue) -> AudioSettings {
        var settings = AudioSettings()
        guard let fields = members(value, at: "audio", allowed: ["enabled", "device", "volume", "mute", "output", "delay"]) else {
            return settings
        }
        for (field, v) in fields {
            let path = "audio.\(field)"
            switch field {
            case "enabled":
                if let b = bool(v, at: path) { settings.enabled = b }
            case "mute":
                if let b = bool(v, at: path) { settings.mute = b }
            case "device":
                guard let s = string(v, at: path) else { continue }
                if let why = Self.audioDeviceProblem(s) {
                    problem(path, why)
                } else {
                    settings.device = s
                }
            case "output":
                guard let s = string(v, at: path) else { continue }
                if s.isEmpty { problem(path, "the output name is empty: write the name of a wall output") } else { settings.output = s }
            case "volume":
                guard case .number(let n) = v else {
                    problem(path, "expected a number from 0 to 100, found \(v.typeName)")
                    continue
                }
                do { settings.volume = try checkedNumber(n, in: 0...100, field: path) } catch { problem(error) }
            case "delay":
                guard case .number(let n) = v else {
                    problem(path, "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do { settings.delay = try checkedNumber(n, in: -1...1, field: path) } catch { problem(error) }
            default: break
            }
        }
        return settings
    }

    /// Why `name` cannot be an ALSA device name, or nil.
    static func audioDeviceProblem(_ name: String) -> String? {
        if name.isEmpty { return "the device name is empty: write auto, default, or an ALSA name such as hdmi:CARD=PCH,DEV=0" }
        if name.utf8.count > 256 { return "the device name is longer than 256 bytes" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || $0 == " " }) {
            return "\"\(Self.clipped(name))\" is not an ALSA device name (no spaces or control characters)"
        }
        return nil
    }

    /// An item's `volume`: 0 to 100.
    mutating func itemVolume(_ value: JSONValue, at path: String) -> Double? {
        guard case .number(let n) = value else {
            problem(path, "expected a number from 0 to 100, found \(value.typeName)")
            return nil
        }
        do { return try checkedNumber(n, in: 0...100, field: path) } catch {
            problem(error)
            return nil
        }
    }
}
