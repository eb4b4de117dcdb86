import Foundation
import Playback
import Render
import Synchronization

extension KioskSession {
    // MARK: Commands

    /// Carries out a control command; may be called from any thread.
    public func perform(_ command: KioskCommand) -> KioskCommandResult {
        switch command {
        case .next:
            reporter.events.stopping()
            player.advanceToNextItem()
        case .previous:
            reporter.events.stopping()
            driver.skip(-1, in: state.withLock { s in s.config })
        case .skip(let steps):
            reporter.events.stopping()
            driver.skip(steps, in: state.withLock { s in s.config })
        case .play(let index):
            let config = state.withLock { s in s.config }
            guard config.playlist.indices.contains(index) else { return .failed("no playlist entry \(index)") }
            reporter.events.stopping()
            driver.start(config, from: index, afterCurrentItem: true)
            player.advanceToNextItem()
        case .load(let uris, let append):
            return loader.load(uris, append: append)
        case .loadList(let path, let append):
            return loader.loadList(path, append: append)
        case .pause(let paused):
            if paused { player.pause() } else { player.play() }
            status.update { $0.paused = paused }
        case .seek(let seconds, let relative):
            let target = relative ? player.currentTime().seconds + seconds : seconds
            reporter.events.send(["event": "seek"], onEvent)
            player.seek(to: MediaTime(seconds: max(0, target), preferredTimescale: 90_000)) { [weak self] _ in
                guard let self else { return }
                reporter.events.send(["event": "playback-restart"], onEvent)
            }
        case .reload:
            return reload()
        case .screenshot(let output):
            if let output, let follower = state.withLock({ s in s.followers }).first(where: { f in f.state.withLock { $0.outputName } == output }) {
                return follower.perform(command)
            }
            return presentationTasks.screenshot(of: output)
        case .displayPower(let on):
            // On the presentation thread, which owns the output (also while in standby).
            let done = presentationTasks.run(timeout: 4) { [self] _ -> Bool in
                outputPower.set(on, by: .command)
                return (outputPower.state == .on) == on
            }
            guard let done else { return .failed("the output did not answer within 4 s") }
            return done ? .done : .failed("the display power could not be changed (see the log)")
        case .quit:
            stop()
        }
        return .done
    }
}
