/// A bounded blocking queue between two threads (the decoder and the presenter): the producer waits
/// while it is full, so the decoder runs ahead of presentation by at most `capacity` frames.
/// Every wait has a timeout. `close()` wakes both sides for shutdown.
public final class FrameQueue<Element: Sendable>: Sendable {
    private struct State {
        var ring: [Element?]
        var head = 0
        var stored = 0
        var closed = false
        var limit: Int
        var isEmpty: Bool { stored == 0 }
        var isFull: Bool { stored >= limit }
    }
    private let monitor: Monitor<State>

    public init(capacity: Int) {
        precondition(capacity > 0)
        monitor = Monitor(State(ring: Array(repeating: nil, count: capacity), limit: capacity))
    }

    /// How many elements the queue holds before `push` waits.
    public var capacity: Int { monitor.withLock { $0.limit } }

    /// Changes the capacity (the elements stored stay, in order; a smaller capacity than what is
    /// stored only stops pushes until pops make room).
    public func setCapacity(_ capacity: Int) {
        precondition(capacity > 0)
        monitor.update { s in
            var kept: [Element?] = (0..<s.stored).map { s.ring[(s.head + $0) % s.ring.count] }
            kept += Array(repeating: nil, count: max(capacity, s.stored) - s.stored)
            s.ring = kept
            s.head = 0
            s.limit = capacity
        }
    }

    public enum PushResult: Sendable { case pushed, closed, timedOut }
    public enum PopResult: Sendable { case element(Element), closed, timedOut }

    /// Waits up to `timeout` seconds for room, then appends.
    public func push(_ element: Element, timeout: Double) -> PushResult {
        let result: PushResult = monitor.wait(until: { $0.closed || !$0.isFull }, timeout: timeout) { s, timedOut in
            if s.closed { return .closed }
            if timedOut { return .timedOut }
            s.ring[(s.head + s.stored) % s.ring.count] = element
            s.stored += 1
            return .pushed
        }
        if case .pushed = result { monitor.broadcast() }
        return result
    }

    /// Waits up to `timeout` seconds for an element.
    public func pop(timeout: Double) -> PopResult {
        let result: PopResult = monitor.wait(until: { $0.closed || !$0.isEmpty }, timeout: timeout) { s, timedOut in
            if s.isEmpty { return s.closed ? .closed : .timedOut }
            let element = s.ring[s.head]!
            s.ring[s.head] = nil  // release the frame as soon as it is handed over
            s.head = (s.head + 1) % s.ring.count
            s.stored -= 1
            return .element(element)
        }
        if case .element = result { monitor.broadcast() }
        return result
    }

    /// Waits up to `timeout` seconds until the queue holds an element or is closed, without taking
    /// anything; true when an element (or the close) is there to be popped.
    public func waitForElement(timeout: Double) -> Bool {
        monitor.wait(until: { $0.closed || !$0.isEmpty }, timeout: timeout)
    }

    /// Waits up to `timeout` seconds until the queue has room for an element or is closed, without
    /// adding anything; true when there is room (or the close). A producer that waits here before
    /// making its next element holds no element of its own while the queue is full.
    public func waitForRoom(timeout: Double) -> Bool {
        monitor.wait(until: { $0.closed || !$0.isFull }, timeout: timeout)
    }

    public var count: Int { monitor.withLock { $0.stored } }

    /// Wakes every waiter; later pushes fail and pops drain what is left, then report `.closed`.
    public func close() {
        monitor.update { $0.closed = true }
    }
}
