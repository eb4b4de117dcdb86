import Foundation

/// A bounded blocking queue between two threads (the decoder and the presenter): the producer waits
/// while it is full, so the decoder runs ahead of presentation by at most `capacity` frames.
/// Every wait has a timeout. `close()` wakes both sides for shutdown.
public final class FrameQueue<Element: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = NSCondition()
    private var ring: [Element?]
    private var head = 0
    private var stored = 0
    private var closed = false
    private var limit: Int

    public init(capacity: Int) {
        precondition(capacity > 0)
        limit = capacity
        ring = Array(repeating: nil, count: capacity)
    }

    /// How many elements the queue holds before `push` waits.
    public var capacity: Int {
        condition.lock()
        defer { condition.unlock() }
        return limit
    }

    /// Changes the capacity (the elements stored stay, in order; a smaller capacity than what is
    /// stored only stops pushes until pops make room).
    public func setCapacity(_ capacity: Int) {
        precondition(capacity > 0)
        condition.lock()
        defer { condition.unlock() }
        var kept: [Element?] = (0..<stored).map { ring[(head + $0) % ring.count] }
        kept += Array(repeating: nil, count: max(capacity, stored) - stored)
        ring = kept
        head = 0
        limit = capacity
        condition.broadcast()
    }

    public enum PushResult: Sendable { case pushed, closed, timedOut }
    public enum PopResult: Sendable { case element(Element), closed, timedOut }

    /// Waits up to `timeout` seconds for room, then appends.
    public func push(_ element: Element, timeout: Double) -> PushResult {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !closed && stored >= limit {
            if !condition.wait(until: deadline) { return .timedOut }
        }
        if closed { return .closed }
        ring[(head + stored) % ring.count] = element
        stored += 1
        condition.broadcast()
        return .pushed
    }

    /// Waits up to `timeout` seconds for an element.
    public func pop(timeout: Double) -> PopResult {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while stored == 0 {
            if closed { return .closed }
            if !condition.wait(until: deadline) { return .timedOut }
        }
        let element = ring[head]!
        ring[head] = nil  // release the frame as soon as it is handed over
        head = (head + 1) % ring.count
        stored -= 1
        condition.broadcast()
        return .element(element)
    }

    /// Waits up to `timeout` seconds until the queue holds an element or is closed, without taking
    /// anything; true when an element (or the close) is there to be popped.
    public func waitForElement(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while stored == 0 && !closed {
            if !condition.wait(until: deadline) { return stored > 0 || closed }
        }
        return true
    }

    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return stored
    }

    /// Wakes every waiter; later pushes fail and pops drain what is left, then report `.closed`.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
