import Audio
import Foundation
import Media
import Playback
import Sound
import Synchronization

/// The sound of a session: one audio path (`PlayerAudioOutput`) for the session's player, on
/// the output whose clock is the master. Control requests (volume, mute, device, delay) and
/// status read it from any thread.
public final class SessionAudio: Sendable {
    struct State {
        var output: PlayerAudioOutput?
        var sink: ALSASink?
        /// Makes the path on another device (a property set over the socket).
        var make: (@Sendable (String) -> (PlayerAudioOutput, ALSASink)?)?
        /// The device asked for (`audio.device` or the property), and the one in use.
        var requested = "auto"
        var device: String?
        /// Why there is no sound, when that is by design (`audio.enabled` false, no sound card,
        /// another wall output plays it).
        var off: String?
        var delay = 0.0
        /// The output's clock, kept from `startAudio` for a reload that turns the sound on or
        /// moves it; nil once the session's presentation ended.
        var clock: (any VsyncClock)?
    }
    let state = Mutex(State())
    init() {}

    /// The ALSA device playing (mpv's `current-ao` is "alsa" while one plays); nil: none.
    public var device: String? { state.withLock { $0.device } }
    public var requestedDevice: String { state.withLock { $0.requested } }
    public var delay: Double { state.withLock { $0.delay } }
    public var stats: AudioPathStats? { state.withLock { $0.output }?.stats }
    public var offReason: String? { state.withLock { $0.off } }

    /// What health says about the sound: a device asked for that is missing, or underruns that
    /// keep coming (more than `underrunLimit` in all); nil when fine or off by design.
    public var problem: String? {
        let (sink, output) = state.withLock { ($0.sink, $0.output) }
        guard let sink, let output else { return nil }
        if sink.isMissing { return "audio device \(sink.name) missing: \(sink.lastFailure ?? "cannot be opened") (the picture plays without sound)" }
        let stats = output.stats
        if stats.underruns > Self.underrunLimit { return "audio device \(sink.name): \(stats.underruns) underruns" }
        return nil
    }

    /// More underruns than this (since start) degrade health.
    public static let underrunLimit = 10

    /// Sets the sound's delay against the pictures (seconds, -1...1; mpv's `audio-delay`).
    public func setDelay(_ seconds: Double) {
        guard seconds.isFinite else { return }
        let value = min(max(seconds, -1), 1)
        let output = state.withLock { s in
            s.delay = value
            return s.output
        }
        output?.delay = value
    }

    /// Plays on `device` from now on (`auto`: as at start). Throws when no path can be made.
    public func setDevice(_ device: String) throws {
        let (make, old) = state.withLock { ($0.make, $0.output) }
        guard let make else { throw AudioPathError(device: device, reason: "sound is off here (\(offReason ?? "no audio path"))") }
        old?.stop()
        let made = make(device)
        state.withLock { s in
            s.requested = device
            s.output = made?.0
            s.sink = made?.1
            s.device = made?.1.name
        }
        made?.0.delay = delay
        made?.0.start()
    }

    func stop() {
        let output = state.withLock { s in
            let o = s.output
            s.output = nil
            s.make = nil
            s.clock = nil
            return o
        }
        output?.stop()
    }

    /// Stops the sound for good or until the next `startAudio` (a reload that turns it off or
    /// moves it); the clock is kept.
    func pause(reason: String) {
        let output = state.withLock { s in
            let o = s.output
            s.output = nil
            s.sink = nil
            s.device = nil
            s.make = nil
            s.off = reason
            return o
        }
        output?.stop()
    }
}

extension SessionAudio {
    /// Starts `player`'s sound when `config.audio` says it plays on this output (`audio.enabled`, on
    /// a wall the output `audio.output` names, a clock that runs in real time, a device to play
    /// on); otherwise says why not in `audio.offReason`. A device that cannot be opened does not
    /// stop anything: the picture plays and health is degraded until it can.
    /// `role` and `node`: the wall output this session plays; `outputName`: the output's (its
    /// connector's monitor is preferred); `playlist`: the playlist playing now (items' volumes).
    func start(config: KioskConfig, role: WallRole, node: String, outputName: String?, player: QueuePlayer,
               clock: any VsyncClock, logger: Logger, playlist: @escaping @Sendable () -> [KioskConfig.Item]) {
        let settings = config.audio
        take(settings, player: player)
        state.withLock {
            $0.clock = clock
            $0.off = nil
        }
        func off(_ why: String) {
            state.withLock { $0.off = why }
            logger.info("audio off", ["reason": why])
        }
        guard settings.enabled else { return off("audio.enabled is false") }
        guard role.reportsOutput else { return }
        if let wall = config.wall {
            let outputs = (try? wall.outputs(forNode: node)) ?? []
            let mine = outputs.indices.contains(role.slot) ? outputs[role.slot].name : nil
            let chosen = settings.output ?? wall.outputs.first?.name
            guard let mine, mine == chosen else { return off("the wall's sound plays on output \(chosen ?? "none")") }
        }
        // A virtual clock has no real time to play in. (A KMS output's clock has no times before
        // its first page flip, which comes after this: it says it runs in real time all the same.)
        guard !clock.isVirtual else { return off("a virtual clock has no real time to play sound in") }
        let log = logger
        let connector = outputName.flatMap(connectorName(ofOutput:))
        let volumes: @Sendable (PlayerItem) -> Float = { item in
            guard let index = item.playlistIndex else { return 1 }
            let playlist = playlist()
            guard playlist.indices.contains(index), let volume = playlist[index].volume else { return 1 }
            return Float(volume / 100)
        }
        let make: @Sendable (String) -> (PlayerAudioOutput, ALSASink)? = { requested in
            guard let device = resolveAudioDevice(requested, connector: connector, logger: log) else {
                log.info("audio off", ["reason": "no sound card (audio.device auto)"])
                return nil
            }
            let sink = ALSASink(device: device, format: PCMFormat(sampleRate: 48_000, channels: 2, encoding: .float32)!, logger: log)
            let output = PlayerAudioOutput(player: player, sink: sink, converter: AudioResampler(output: sink.format), clock: clock, logger: log)
            output.setItemVolume(volumes)
            log.info("audio on", ["device": device, "format": "\(sink.format)", "missing": "\(sink.isMissing)"])
            return (output, sink)
        }
        state.withLock { $0.make = make }
        do { try setDevice(settings.device) } catch { off("\(error)") }
        if device == nil { state.withLock { $0.off = "no sound card" } }
    }

    /// The config's volume, mute, delay and device, as the socket reads them from the session's
    /// start on (the sound itself starts once the output's clock is known: `start`).
    func take(_ settings: AudioSettings, player: QueuePlayer) {
        player.volume = Float(settings.volume / 100)
        player.isMuted = settings.mute
        setDelay(settings.delay)
        state.withLock { $0.requested = settings.device }
    }

    /// A reloaded config's `audio`: the settings that changed from `old`'s take effect now.
    /// Volume, mute and delay are set on the playing path; `enabled`, `device` or `output`
    /// changed stop the sound and start it again as at the start (or leave it off, saying why).
    /// Values set over the socket since stay unless the reload changes that setting.
    /// `restart` starts the sound again on the output's clock (as `start`).
    func reapply(old: AudioSettings, new: AudioSettings, player: QueuePlayer, logger: Logger,
                 restart: (any VsyncClock) -> Void) {
        guard old != new else { return }
        var changed: [String] = []
        if old.volume != new.volume {
            player.volume = Float(new.volume / 100)
            changed.append("volume")
        }
        if old.mute != new.mute {
            player.isMuted = new.mute
            changed.append("mute")
        }
        if old.delay != new.delay {
            setDelay(new.delay)
            changed.append("delay")
        }
        if old.enabled != new.enabled || old.device != new.device || old.output != new.output {
            changed.append(contentsOf: ["enabled", "device", "output"].filter { field in
                switch field {
                case "enabled": return old.enabled != new.enabled
                case "device": return old.device != new.device
                default: return old.output != new.output
                }
            })
            if let clock = state.withLock({ $0.clock }) {
                pause(reason: "restarting after a reload")
                restart(clock)
            } else {
                logger.info("audio settings take effect when the presentation starts", ["changed": changed.joined(separator: ",")])
                return
            }
        }
        logger.info("audio settings reloaded", ["changed": changed.joined(separator: ","), "device": device ?? "none",
                                                "off": offReason ?? "-"])
    }

    /// Tells health in `status` what is wrong with the sound, if anything (twice a second or so).
    func report(into status: KioskStatus) {
        let problem = self.problem
        guard problem != nil || device != nil else { return }
        status.update { $0.audioProblem = problem }
    }
}

/// The ALSA device `audio.device` names: itself, or for `auto` the HDMI/DisplayPort PCM whose
/// ELD names the monitor on the output's connector (its EDID), else `default` where the system
/// has a sound card (nil where it has none: no sound, by design). The choice and why are logged.
func resolveAudioDevice(_ requested: String, connector: String?, logger: Logger) -> String? {
    guard requested == "auto" else { return requested }
    let cards = ALSACards.scan()
    let monitor = connector.flatMap { connectorEDID($0) }.flatMap(MonitorIdentity.fromEDID)
    let choice = AudioDeviceChoice.auto(connector: connector, monitor: monitor, hdmi: cards.hdmi,
                                        hasCard: !cards.cards.isEmpty || hasSoundCard())
    let problems = cards.problems.isEmpty ? "-" : cards.problems.map(\.description).joined(separator: "; ")
    logger.info("audio.device auto", ["device": choice.device ?? "none", "reason": choice.reason, "problems": problems])
    return choice.device
}

/// The DRM connector of a Kiosk output's name (`kms-HDMI-A-1` -> `HDMI-A-1`); nil for others.
func connectorName(ofOutput name: String) -> String? {
    guard name.hasPrefix("kms-") else { return nil }
    let connector = String(name.dropFirst(4))
    return connector.isEmpty || connector == "display" ? nil : connector
}

/// Whether /proc/asound lists a card (ALSA's own list can be empty where alsa-lib cannot open
/// the control devices).
func hasSoundCard(cards: String = "/proc/asound/cards") -> Bool {
    guard let text = try? String(contentsOfFile: cards, encoding: .utf8) else { return false }
    return text.split(separator: "\n").contains { line in
        line.trimmingCharacters(in: .whitespaces).first?.isNumber == true
    }
}
