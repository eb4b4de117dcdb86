import Foundation
import Synchronization

/// The player's sound settings (`volume`, `isMuted`), read by its audio path at every block.
public final class PlayerAudioSettings: Sendable {
    let values = Mutex<(volume: Float, muted: Bool)>((1, false))
    init() {}
}

/// The player's side of its sound (`PlayerAudioOutput` plays it): the settings of `AVPlayer`
/// and the view of the timeline the audio thread follows.
extension Player {
    /// The audio's volume, 0 (silent) to 1 (as decoded), as `AVPlayer.volume`. Values outside are
    /// clamped; one that is not a number is ignored.
    public var volume: Float {
        get { audioSettings.values.withLock { $0.volume } }
        set {
            guard newValue.isFinite else { return }
            audioSettings.values.withLock { $0.volume = min(max(newValue, 0), 1) }
        }
    }

    /// Whether the audio is muted (`AVPlayer.isMuted`); the volume is kept.
    public var isMuted: Bool {
        get { audioSettings.values.withLock { $0.muted } }
        set { audioSettings.values.withLock { $0.muted = newValue } }
    }

    /// The gain the audio is played at now: the volume, or 0 when muted.
    package var audioGain: Float { audioSettings.values.withLock { $0.muted ? 0 : $0.volume } }

    /// Where the timeline stands, as the audio thread needs it: whether the picture is moving, the
    /// current run (its item, its start on the timeline and the item time there), the item after
    /// it, and the timeline position of the last vsync asked for.
    package struct AudioView {
        package var playing = false
        package var rate = 1.0
        package var item: PlayerItem?
        package var run: Int?
        package var runStart = MediaTime.zero
        package var runOrigin = MediaTime.zero
        package var next: PlayerItem?
        /// Where the next item starts (a seek made on it before it plays), else zero.
        package var nextStart = MediaTime.zero
        package var lastVsync: Int64?
        package var position = MediaTime.zero
        /// The current item's start is primed for a seek back to zero (the guide's loop): its
        /// end stays current and waits for the end's handlers (`Player+Seams`).
        package var startPrimed = false
        /// The end's vsync waits for the end's handlers (a seek back may come).
        package var seamOpen = false
        /// The current run has played to its end.
        package var ended = false
        /// Times the timeline moved with a late picture that started it (`didShow`), or on to
        /// frames after a gap at a stall's end.
        package var timelineShifts = 0
    }

    package func audioView() -> AudioView {
        withLock {
            var view = AudioView()
            view.rate = Double(_rate)
            view.item = run?.item ?? queue.first
            view.next = queue.count > 1 ? queue[1] : nil
            view.nextStart = view.next?.pendingStart?.time ?? .zero
            view.lastVsync = lastVsync
            view.position = currentPositionLocked()
            if let run {
                view.run = run.serial
                view.runStart = run.start
                view.runOrigin = run.origin ?? run.seek?.target ?? .zero
                view.playing = _rate != 0 && anchor != nil && !pullState.isHoldingStart && !pullState.isStalled && !run.ended && lastVsync != nil
                    && hostStartVsync == nil && hostStartTime == nil
                // As `openSeamLocked`: the end waits for handlers only when something listens.
                let listened = eventBroadcast.subscriberCount > 0 || run.item.hasEventSubscribers || !observers.isEmpty
                view.startPrimed = listened && mayLoopLocked && run.item === queue.first && view.next == nil
                    && run.item.preroll.map { $0.start == .zero && !$0.isStopped } == true
            }
            view.seamOpen = pullState.seam != nil
            view.timelineShifts = timelineShifts
            view.ended = run?.ended ?? false
            return view
        }
    }
}
