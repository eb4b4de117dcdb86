import Foundation
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
/// the `events()`, `changes()` and `statusUpdates()` of its API) and threads (`consume`). Each
/// `stream()` or `consume` call is a new subscriber that sees the values sent after it subscribed
/// (and `initial`, when given, first), every one of them, in the order they were sent.
///
/// Nothing is dropped silently. A subscriber's stream holds at most `limit` values it has not read
/// yet (what a subscriber that stops reading costs: `limit` values, e.g. 4096 player events of 32
/// bytes, 128 KiB, plus the text of errors they carry). One that falls further behind is ended:
/// its stream gives the `limit` values it holds, in order and without a gap, and then ends; the
/// broadcast counts it (`overflowedSubscribers`) and tells the handler set with `reportLosses`
/// (the owner logs it). A thread's subscriber (`consume`) holds at most `limit` values the same way.
final class Broadcast<Value: Sendable>: Sendable {
    static var defaultLimit: Int { 4096 }

    /// The values a thread's subscriber has not read yet, which its thread waits for.
    final class Reader: Sendable {
        struct Queue: Sendable {
            var values: [Value] = []
            var ended = false
        }
        let queue = Monitor(Queue())
        let limit: Int

        init(limit: Int) { self.limit = limit }

        /// Adds `value`; false, adding nothing, when `limit` values wait unread.
        func offer(_ value: Value) -> Bool {
            queue.update { queue in
                guard queue.values.count < limit else { return false }
                queue.values.append(value)
                return true
            }
        }

        /// No value comes after the ones it holds.
        func end() { queue.update { $0.ended = true } }
    }

    private enum Subscriber: Sendable {
        case stream(AsyncStream<Value>.Continuation)
        case reader(Reader)

        enum Offered { case taken, full, gone }

        func offer(_ value: Value) -> Offered {
            switch self {
            case .stream(let continuation):
                switch continuation.yield(value) {
                case .enqueued: return .taken
                case .dropped: return .full
                case .terminated: return .gone
                @unknown default: return .taken
                }
            case .reader(let reader):
                return reader.offer(value) ? .taken : .full
            }
        }

        func end() {
            switch self {
            case .stream(let continuation): continuation.finish()
            case .reader(let reader): reader.end()
            }
        }
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
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
        stream(initialValues: initial.map { [$0] } ?? [])
    }

    /// A stream that gives `initialValues` first, then every value sent after this call (made under
    /// the lock its owner sends under, so that no change falls between the two: KVO's `.initial`).
    func stream(initialValues: [Value]) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingOldest(limit + initialValues.count))
        for value in initialValues { continuation.yield(value) }
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = .stream(continuation)
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

    /// A subscriber read on a thread of its own, named `threadName`: `body` gets every value sent
    /// after this call, in order, on that thread. The thread ends after the values it holds once the
    /// broadcast finishes (or goes away), or once it fell `limit` values behind (counted and
    /// reported as for a stream).
    func consume(threadName: String, _ body: @escaping @Sendable (Value) -> Void) {
        let reader = Reader(limit: limit)
        let added = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.nextID += 1
            state.subscribers[state.nextID] = .reader(reader)
            return true
        }
        if !added { reader.end() }
        startThread(named: threadName) {
            while true {
                // The next values come whenever there is news: waited for in slices of a minute,
                // until the broadcast ends.
                let (values, ended) = reader.queue.wait(until: { !$0.values.isEmpty || $0.ended }, timeout: 60) { queue, _ in
                    defer { queue.values.removeAll() }
                    return (queue.values, queue.ended)
                }
                for value in values { body(value) }
                if ended { return }
            }
        }
    }

    func send(_ value: Value) {
        // Offered under the lock, so that values sent from several threads reach every subscriber
        // in one order. An offer never blocks and never calls back; ending a stream does, so it
        // is done after the lock is let go.
        let (ended, report): ([Subscriber], (@Sendable (BroadcastOverflow) -> Void)?) = state.withLock { state in
            var ended: [Subscriber] = []
            for (id, subscriber) in state.subscribers {
                switch subscriber.offer(value) {
                case .taken: break
                case .full:
                    state.subscribers[id] = nil
                    state.overflowed += 1
                    ended.append(subscriber)
                case .gone:
                    state.subscribers[id] = nil
                }
            }
            return (ended, state.report)
        }
        for subscriber in ended {
            subscriber.end()
            report?(BroadcastOverflow(stream: name, unread: limit))
        }
    }

    /// Ends every stream and thread subscriber (after the values they hold); later subscribers get
    /// streams that end at once.
    func finish() {
        let all: [Subscriber] = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in all { subscriber.end() }
    }

    deinit { finish() }
}
