import Foundation

/// Fans values out to any number of `AsyncStream`s; each `stream()` call is a new subscriber that
/// sees the values sent after it subscribed (and `initial`, when given, first).
final class Broadcast<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `continuations` is guarded by `lock`.
    private let lock = NSLock()
    private var continuations: [Int: AsyncStream<Value>.Continuation] = [:]
    private var nextID = 0

    func stream(initial: Value? = nil) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(256))
        if let initial { continuation.yield(initial) }
        let id = lock.withLock {
            nextID += 1
            continuations[nextID] = continuation
            return nextID
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func send(_ value: Value) {
        let all = lock.withLock { Array(continuations.values) }
        for continuation in all { continuation.yield(value) }
    }

    func finish() {
        let all = lock.withLock {
            let all = Array(continuations.values)
            continuations.removeAll()
            return all
        }
        for continuation in all { continuation.finish() }
    }
}
