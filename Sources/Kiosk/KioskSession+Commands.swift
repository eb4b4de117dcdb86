import Foundation
import Playback
import Render
import Synchronization

extension KioskSession {
    // MARK: Commands

    /// Carries out a control command; may be called from any thread.
    public func perform(_ command: KioskCommand) -> KioskCommandResult {
        switch command {
        case .next: commands.skip(1)
        case .previous: commands.skip(-1)
        case .skip(let steps): commands.skip(steps)
        case .play(let index): return commands.play(index)
        case .load(let uris, let append): return commands.load(uris, append: append)
        case .loadList(let path, let append): return commands.loadList(path, append: append)
        case .pause(let paused): commands.pause(paused)
        case .seek(let seconds, let relative): commands.seek(seconds, relative: relative)
        case .reload:
            return reload()
        case .screenshot(let output, let maxWidth):
            if let output, let follower = state.withLock({ s in s.followers }).first(where: { f in f.state.withLock { $0.outputName } == output }) {
                return follower.perform(command)
            }
            return presentationTasks.screenshot(of: output, maxWidth: maxWidth)
        case .displayPower(let on):
            return outputPower.set(on, through: presentationTasks)
        case .quit:
            stop()
        }
        return .done
    }
}
