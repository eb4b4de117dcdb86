import Foundation

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

/// One registered time observer. `gate` makes removal wait for a callback in progress, so that no
/// callback starts after `removeTimeObserver` returns.
final class TimeObserver: @unchecked Sendable {
    // @unchecked: `active` is guarded by `gate`; the rest is immutable or touched under the
    // player's lock (`lastSlot`).
    enum Kind {
        case periodic(interval: MediaTime, callback: @Sendable (MediaTime) -> Void)
        case boundary(times: [MediaTime], callback: @Sendable () -> Void)
    }
    let token: TimeObserverToken
    let kind: Kind
    let queue: DispatchQueue?
    private let gate = NSRecursiveLock()
    private var active = true
    /// Periodic: the last interval index fired (player's lock).
    var lastSlot: Int64?

    init(token: TimeObserverToken, kind: Kind, queue: DispatchQueue?) {
        self.token = token
        self.kind = kind
        self.queue = queue
    }

    func deactivate() {
        gate.lock()
        active = false
        gate.unlock()
    }

    /// Runs `body` unless the observer was removed, on its queue or (nil) on this thread.
    func deliver(_ body: @escaping @Sendable () -> Void) {
        let run: @Sendable () -> Void = { [self] in
            gate.lock()
            defer { gate.unlock() }
            if active { body() }
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
