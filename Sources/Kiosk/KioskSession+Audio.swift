import Audio
import Foundation
import Media
import Playback
import Sound
import Synchronization

extension KioskSession {
    /// Starts the player's sound when `audio` says it plays on this output (`audio.enabled`, on
    /// a wall the output `audio.output` names, a clock that runs in real time, a device to play
    /// on); otherwise says why not in `audio.offReason`. A device that cannot be opened does not
    /// stop anything: the picture plays and health is degraded until it can.
    func startAudio(clock: any VsyncClock) {
        let config = state.withLock { $0.config }
        let settings = config.audio
        player.volume = Float(settings.volume / 100)
        player.isMuted = settings.mute
        audio.setDelay(settings.delay)
        audio.state.withLock {
            $0.clock = clock
            $0.off = nil
        }
        func off(_ why: String) {
            audio.state.withLock { $0.off = why }
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
        let player = self.player
        let connector = state.withLock { $0.outputName }.flatMap(connectorName(ofOutput:))
        let volumes: @Sendable (PlayerItem) -> Float = { [weak self] item in
            guard let self, let index = item.playlistIndex else { return 1 }
            let playlist = state.withLock { $0.config.playlist }
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
        audio.state.withLock { $0.make = make }
        do { try audio.setDevice(settings.device) } catch { off("\(error)") }
        if audio.device == nil { audio.state.withLock { $0.off = "no sound card" } }
    }
}

extension KioskSession {
    /// A reloaded config's `audio`: the settings that changed from `old`'s take effect now.
    /// Volume, mute and delay are set on the playing path; `enabled`, `device` or `output`
    /// changed stop the sound and start it again as at the start (or leave it off, saying why).
    /// Values set over the socket since stay unless the reload changes that setting.
    func reapplyAudio(old: AudioSettings, new: AudioSettings) {
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
            audio.setDelay(new.delay)
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
            if let clock = audio.state.withLock({ $0.clock }) {
                audio.pause(reason: "restarting after a reload")
                startAudio(clock: clock)
            } else {
                logger.info("audio settings take effect when the presentation starts", ["changed": changed.joined(separator: ",")])
                return
            }
        }
        logger.info("audio settings reloaded", ["changed": changed.joined(separator: ","), "device": audio.device ?? "none",
                                                "off": audio.offReason ?? "-"])
    }
}

extension KioskSession {
    /// Tells health what is wrong with this session's sound, if anything (twice a second or so).
    func reportAudio() {
        let problem = audio.problem
        guard problem != nil || audio.device != nil else { return }
        reporter.outputStatus.update { $0.audioProblem = problem }
    }
}
