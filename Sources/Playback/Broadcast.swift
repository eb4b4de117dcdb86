import Synchronization

/// A subscriber of a `Broadcast` ended for falling behind.
struct BroadcastOverflow: Sendable, CustomStringConvertible {
    /// The broadcast's name (what its values are).
    let stream: String
    /// The values it held unread when the next one could not be added.
    let unread: Int
    var description: String { "a subscriber of \(stream) fell \(unread) values behind and was ended" }
}

/// Fans values out to any number of `AsyncStream`s (the one place where Playback makes streams:
/// the `events()`, `changes()` and `statusUpdates()` of its API). Each `stream()` call is a new
/// subscriber that sees the values sent after it subscribed (and `initial`, when given, first),
/// every one of them, in the order they were sent.
///
/// Nothing is dropped silently. A subscriber's stream holds at most `limit` values it has not read
/// yet (what a subscriber that stops reading costs: `limit` values, e.g. 4096 player events of 32
/// bytes, 128 KiB, plus the text of errors they carry). One that falls further behind is ended:
/// its stream gives the `limit` values it holds, in order and without a gap, and then ends; the
/// broadcast counts it (`overflowedSubscribers`) and tells the handler set with `reportLosses`
/// (the owner logs it).
final class Broadcast<Value: Sendable>: Sendable {
    static var defaultLimit: Int { 4096 }

    private struct State {
        var subscribers: [Int: AsyncStream<Value>.Continuation] = [:]
        var nextID = 0
        var finished = false
        var overflowed = 0
        var report: (@Sendable (BroadcastOverflow) -> Void)?
    }

    let name: String
    let limit: Int
    private let state = Mutex(State())

    init(name: String = "\(Value.self) values", limit: Int = Broadcast.defaultLimit) {
        self.name = name
        self.limit = max(1, limit)
    }

    /// Subscribers ended so far for falling more than `limit` values behind.
    var overflowedSubscribers: Int { state.withLock { $0.overflowed } }

    /// Subscribers now.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// `report` is called (on the sending thread) for each subscriber ended for falling behind.
    func reportLosses(to report: @escaping @Sendable (BroadcastOverflow) -> Void) {
        state.withLock { $0.report = report }
    }

    func stream(initial: Value? = nil) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingOldest(limit))
        if let initial { continuation.yield(initial) }
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            // Not under `state`: `finish()` calls this, and it is called outside the lock.
            guard let self else { return }
            _ = self.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func send(_ value: Value) {
        // Yielded under the lock, so that values sent from several threads reach every subscriber
        // in one order. A yield never blocks and never calls back; `finish()` does, so it is
        // called after the lock is let go.
        let (ended, report): ([AsyncStream<Value>.Continuation], (@Sendable (BroadcastOverflow) -> Void)?) = state.withLock { state in
            var ended: [AsyncStream<Value>.Continuation] = []
            for (id, continuation) in state.subscribers {
                switch continuation.yield(value) {
                case .enqueued: break
                case .dropped:
                    state.subscribers[id] = nil
                    state.overflowed += 1
                    ended.append(continuation)
                case .terminated:
                    state.subscribers[id] = nil
                @unknown default: break
                }
            }
            return (ended, state.report)
        }
        for continuation in ended {
            continuation.finish()
            report?(BroadcastOverflow(stream: name, unread: limit))
        }
    }

    /// Ends every stream (after the values they hold); later subscribers get streams that end at once.
    func finish() {
        let all: [AsyncStream<Value>.Continuation] = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in all { continuation.finish() }
    }
}
