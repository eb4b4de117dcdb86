import Foundation
import Synchronization

/// What `addPeriodicTimeObserver` and `addBoundaryTimeObserver` return; pass it to
/// `removeTimeObserver` of the same player.
public struct TimeObserverToken: Hashable, Sendable {
    let id: Int
    let player: ObjectIdentifier
}

/// Errors of the player's API (what AVFoundation raises as exceptions).
public enum PlayerError: LocalizedError, Equatable, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
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
    /// API: where callbacks run (AVFoundation's `queue:`); nil: on `callbacks`.
    let queue: DispatchQueue?
    /// The player's thread for callbacks without a queue; nil (tests): on the thread that fires them.
    let callbacks: CallbackThread?
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

    init(token: TimeObserverToken, kind: Kind, queue: DispatchQueue?, callbacks: CallbackThread? = nil) {
        self.token = token
        self.kind = kind
        self.queue = queue
        self.callbacks = callbacks
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

    /// Runs `body` unless the observer was removed: on its queue, else on the player's callback
    /// thread (else on this thread). Queued at once, never run here when there is a queue or a
    /// thread: the player calls this under its lock, so callbacks are queued in the order of the
    /// changes that made them.
    func deliver(at time: MediaTime, _ body: @escaping @Sendable () -> Void) {
        let player = token.player
        let run: @Sendable () -> Void = { [calls] in
            let me = pthread_self()
            let started: Bool = calls.withLock { calls in
                guard calls.active else { return false }
                calls.running.append(me)
                return true
            }
            guard started else { return }
            // While the callback runs, the player's currentTime() on this thread is the time it is
            // for (the callback may run a little after the player moved on).
            let slots = Thread.current.threadDictionary
            let outer = slots[CallbackMoment.key]
            slots[CallbackMoment.key] = CallbackMoment(player: player, time: time)
            body()
            slots[CallbackMoment.key] = outer
            calls.update { calls in
                if let index = calls.running.firstIndex(where: { pthread_equal($0, me) != 0 }) {
                    calls.running.remove(at: index)
                }
            }
        }
        if let queue {
            queue.async(execute: run)
        } else if let callbacks {
            callbacks.enqueue(run)
        } else {
            run()
        }
    }

    func firePeriodic(_ time: MediaTime) {
        if case .periodic(_, let callback) = kind { deliver(at: time) { callback(time) } }
    }

    func fireBoundary(at time: MediaTime) {
        if case .boundary(_, let callback) = kind { deliver(at: time) { callback() } }
    }
}

/// The player and item time a time observer's callback is for, kept in the thread's dictionary
/// while the callback runs.
final class CallbackMoment {
    static let key = "marquee.timeObserverMoment"
    let player: ObjectIdentifier
    let time: MediaTime
    init(player: ObjectIdentifier, time: MediaTime) {
        self.player = player
        self.time = time
    }

    /// The time of the callback of `player` running on this thread, if one is.
    static func current(of player: ObjectIdentifier) -> MediaTime? {
        guard let moment = Thread.current.threadDictionary[key] as? CallbackMoment, moment.player == player else { return nil }
        return moment.time
    }
}

/// Where a player's time observers without a `queue:` are called: one thread of the player's own
/// (named `player-observers`), started at the first callback and ended with the player, that runs
/// the callbacks one at a time in the order the player queued them (the order of the changes that
/// made them), never with the player's lock held and never on the thread that pulls the vsyncs, so
/// that a slow callback delays no picture.
final class CallbackThread: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var queued = 0
        var done = 0
        var started = false
        var ended = false
    }
    private let state = Monitor(State())
    let name: String

    init(name: String = "player-observers") { self.name = name }

    /// Queues `work` (never runs it here, never blocks).
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        let start: Bool = state.update { state in
            state.work.append(work)
            state.queued += 1
            defer { state.started = true }
            return !state.started
        }
        if start { startWorker() }
    }

    /// Waits up to `timeout` seconds until every callback queued before this call has run; false
    /// when some had not by then.
    func waitUntilDone(timeout: Double) -> Bool {
        let target = state.withLock { $0.queued }
        return state.wait(until: { $0.done >= target || ($0.ended && $0.work.isEmpty) }, timeout: timeout)
    }

    /// The thread ends after the callbacks it holds.
    func end() { state.update { $0.ended = true } }

    private func startWorker() {
        let state = state
        let name = name
        _ = startThread(named: name) {
            while true {
                // The next callbacks whenever there are some: waited for in slices of a minute,
                // until the player goes.
                let (work, ended) = state.wait(until: { !$0.work.isEmpty || $0.ended }, timeout: 60) { state, _ in
                    defer { state.work.removeAll() }
                    return (state.work, state.ended)
                }
                for item in work { item() }
                state.update { $0.done += work.count }
                if ended { return }
            }
        }
    }
}
