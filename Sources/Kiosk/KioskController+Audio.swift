import Playback

/// What the control socket reads and sets of the sound: the session's player and audio path.
public protocol AudioControls: Sendable {
    /// mpv's `volume`: 0 to 100.
    var volume: Double { get }
    func setVolume(_ volume: Double)
    var mute: Bool { get }
    func setMute(_ mute: Bool)
    /// mpv's `audio-device`: the device asked for (`auto` or an ALSA name).
    var device: String { get }
    func setDevice(_ device: String) throws
    /// mpv's `audio-delay`, seconds.
    var delay: Double { get }
    func setDelay(_ seconds: Double)
    /// mpv's `current-ao`: `alsa` while a device plays, nil when none does.
    var currentOutput: String? { get }
}

extension KioskController {
    static let audioPropertyNames: Set<String> = ["volume", "mute", "audio-device", "audio-delay", "current-ao"]

    /// The sound's properties (nil: not one of them).
    func audioProperty(_ name: String) throws(ControlError) -> JSONValue? {
        guard Self.audioPropertyNames.contains(name) else { return nil }
        guard let audio else { throw .propertyUnavailable }
        switch name {
        case "volume": return .float(audio.volume)
        case "mute": return .bool(audio.mute)
        case "audio-device": return .string(audio.device)
        case "audio-delay": return .float(audio.delay)
        default:
            guard let current = audio.currentOutput else { throw .propertyUnavailable }
            return .string(current)
        }
    }

    /// Sets one of the sound's properties; false when `name` is not one of them.
    func setAudioProperty(_ name: String, to value: JSONValue) throws(ControlError) -> Bool {
        guard Self.audioPropertyNames.contains(name) else { return false }
        guard let audio else { throw .propertyUnavailable }
        switch name {
        case "volume":
            guard let n = try? mpvNumber(value), let volume = try? checkedNumber(n, in: 0...100, field: "volume") else { throw .propertyError }
            audio.setVolume(volume)
        case "mute":
            switch value {
            case .bool(let b): audio.setMute(b)
            case .string("yes"): audio.setMute(true)
            case .string("no"): audio.setMute(false)
            case .string: throw .propertyFormat
            default: throw .propertyError
            }
        case "audio-device":
            guard case .string(let device) = value, ConfigReader.audioDeviceProblem(device) == nil else { throw .propertyError }
            do { try audio.setDevice(device) } catch { throw .commandFailed("\(error)") }
        case "audio-delay":
            guard let n = try? mpvNumber(value), let seconds = try? checkedNumber(n, in: -1...1, field: "audio-delay") else { throw .propertyError }
            audio.setDelay(seconds)
        default:
            throw .propertyError  // current-ao is read-only, as mpv's
        }
        return true
    }
}

/// A session's sound as the control socket sees it.
public struct SessionAudioControls: AudioControls {
    let player: Player
    let audio: SessionAudio

    public init(session: KioskSession) {
        player = session.player
        audio = session.audio
    }

    /// The player keeps a Float: shown to 4 decimals, as set.
    public var volume: Double { (Double(player.volume) * 1_000_000).rounded() / 10_000 }
    public func setVolume(_ volume: Double) { player.volume = Float(volume / 100) }
    public var mute: Bool { player.isMuted }
    public func setMute(_ mute: Bool) { player.isMuted = mute }
    public var device: String { audio.requestedDevice }
    public func setDevice(_ device: String) throws { try audio.setDevice(device) }
    public var delay: Double { audio.delay }
    public func setDelay(_ seconds: Double) { audio.setDelay(seconds) }
    public var currentOutput: String? { audio.device == nil ? nil : "alsa" }
}
