import Foundation
import Playback

extension KioskSession {
    /// Starts the sound of this session's wall output where the config says it plays here
    /// (`SessionAudio.start`).
    func startAudio(clock: any VsyncClock) {
        let (config, outputName) = state.withLock { ($0.config, $0.outputName) }
        audio.start(config: config, role: role, node: node, outputName: outputName, player: player, clock: clock,
                    logger: logger, playlist: reporter.playlist)
    }
}
