import Foundation
import Synchronization

/// What `addPeriodicTimeObserver` and `addBoundaryTimeObserver` return; pass it to
/// `removeTimeObserver` of the same player.
public struct TimeObserverToken: Hashable, Sendable {
    let id: Int
    let player: ObjectIdentifier
}

/// Errors of the player's API (what AVFoundation raises as exceptions).
public enum PlayerError: Error, Equatable, CustomStringConvertible, Sendable {
    case advanceNeedsAQueuePlayer
    case emptyBoundaryTimes
    case tokenOfAnotherPlayer
    case itemInAnotherPlayer
    case itemCannotBeInserted
    case setRateWhileWaitingToMinimizeStalls
    case nonPositiveInterval
    case looperTemplateHasNoDuration
    case looperTimeRangeInvalid(String)
    case secondVideoOutput

    public var description: String {
        switch self {
        case .advanceNeedsAQueuePlayer: "actionAtItemEnd .advance is only for a QueuePlayer"
        case .emptyBoundaryTimes: "a boundary time observer needs at least one time"
        case .tokenOfAnotherPlayer: "the time observer token belongs to another player"
        case .itemInAnotherPlayer: "the item is already in another player; make a new item for the same asset"
        case .itemCannotBeInserted: "the item cannot be inserted there (already queued, or the item to insert after is not queued)"
        case .setRateWhileWaitingToMinimizeStalls:
            "setRate(_:time:atHostTime:) needs automaticallyWaitsToMinimizeStalling = false"
        case .nonPositiveInterval: "a periodic time observer needs a positive numeric interval"
        case .looperTemplateHasNoDuration: "the looper's template item has a zero duration"
        case .looperTimeRangeInvalid(let why): "the looper's time range is invalid: \(why)"
        case .secondVideoOutput: "a player is driven by one video output only"
        }
    }
}

/// One registered time observer. Removal waits for callbacks in progress on other threads, so
/// that no callback runs after `removeTimeObserver` returns (one that removes its own observer
/// does not wait for itself).
final class TimeObserver: Sendable {
    enum Kind: Sendable {
        case periodic(interval: MediaTime, callback: @Sendable (MediaTime) -> Void)
        case boundary(times: [MediaTime], callback: @Sendable () -> Void)
    }
    let token: TimeObserverToken
    let kind: Kind
    /// API: where callbacks run (AVFoundation's `queue:`); nil: on the thread that fires them.
    let queue: DispatchQueue?
    /// Whether callbacks may still start, and the threads running one now.
    private let calls = Monitor<(active: Bool, running: [pthread_t])>((true, []))
    /// Periodic: the last interval index fired (player's lock).
    var lastSlot: Int64? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }
    private let slot = Mutex<Int64?>(nil)

    /// How long removal waits for callbacks in progress on other threads (seconds).
    static let removalWait = 10.0

    init(token: TimeObserverToken, kind: Kind, queue: DispatchQueue?) {
        self.token = token
        self.kind = kind
        self.queue = queue
    }

    /// Stops callbacks from starting and waits (at most `removalWait`) for those in progress on
    /// other threads to return. Returns false when one was still running after that.
    @discardableResult
    func deactivate() -> Bool {
        let me = pthread_self()
        calls.withLock { $0.active = false }
        return calls.wait(until: { calls in calls.running.allSatisfy { pthread_equal($0, me) != 0 } },
                          timeout: Self.removalWait)
    }

    /// Runs `body` unless the observer was removed, on its queue or (nil) on this thread.
    func deliver(_ body: @escaping @Sendable () -> Void) {
        let run: @Sendable () -> Void = { [calls] in
            let me = pthread_self()
            let started: Bool = calls.withLock { calls in
                guard calls.active else { return false }
                calls.running.append(me)
                return true
            }
            guard started else { return }
            body()
            calls.update { calls in
                if let index = calls.running.firstIndex(where: { pthread_equal($0, me) != 0 }) {
                    calls.running.remove(at: index)
                }
            }
        }
        if let queue { queue.async(execute: run) } else { run() }
    }

    func firePeriodic(_ time: MediaTime) {
        if case .periodic(_, let callback) = kind { deliver { callback(time) } }
    }

    func fireBoundary() {
        if case .boundary(_, let callback) = kind { deliver { callback() } }
    }
}
