import Glibc
import Timing

/// A value guarded by a mutex, with a condition variable to wait for the value to change: the one
/// way threads in Marquee wait for each other. (`Synchronization.Mutex` guards state nobody waits
/// for; `Latch` is the one-shot form of this.)
///
/// Every wait has a timeout, measured on the monotonic clock (a change of the wall clock neither
/// shortens nor lengthens it), and says whether it ran out. Whoever changes what a waiter waits
/// for wakes it: `update` changes the value and wakes every waiter; `signal`/`broadcast` wake one
/// or all after a `withLock`.
public final class Monitor<State> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    /// The longest wait a timeout asks for (a year): larger ones, infinite included, are cut to it.
    public static var longestWait: Double { 365 * 86_400 }

    public init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        // With default attributes these cannot fail on Linux (glibc allocates nothing for them).
        let mutexResult = pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        let conditionResult = pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(mutexResult == 0 && conditionResult == 0,
                     "pthread_mutex_init -> \(mutexResult), pthread_cond_init -> \(conditionResult)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. Wakes nobody: follow with `signal`/`broadcast`
    /// when waiters may now be satisfied, or use `update`.
    public func withLock<Result, E: Error>(_ body: (inout State) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Changes the value and wakes every waiter.
    public func update<Result, E: Error>(_ body: (inout State) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Wakes one waiter, which checks its predicate again.
    public func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter, each of which checks its predicate again.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until `predicate` holds for the value, at most `timeout` seconds, then runs `body` with
    /// the value (lock held) and whether the wait timed out (`predicate` still false).
    public func wait<Result, E: Error>(until predicate: (State) -> Bool, timeout: Double,
                                       then body: (inout State, _ timedOut: Bool) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var met = predicate(state)
        if !met {
            var deadline = Self.deadline(after: timeout)
            while !met {
                let result = pthread_cond_timedwait(condition, mutex, &deadline)
                met = predicate(state)
                // Anything but a wake-up (ETIMEDOUT, or an error) ends the wait; so does reaching
                // the deadline, whatever woke us.
                if result != 0 || Self.passed(deadline) { break }
            }
        }
        return try body(&state, !met)
    }

    /// Waits until `predicate` holds for the value, at most `timeout` seconds. Returns true when it
    /// holds, false when the wait timed out.
    @discardableResult
    public func wait(until predicate: (State) -> Bool, timeout: Double) -> Bool {
        wait(until: predicate, timeout: timeout) { _, timedOut in !timedOut }
    }

    // MARK: Monotonic deadlines

    private static func now() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now
    }

    /// Now plus `seconds` (NaN and negative: now; at most `longestWait`).
    static func deadline(after seconds: Double) -> timespec {
        let wait = seconds.isNaN ? 0 : max(0, min(seconds, longestWait))
        let whole = wait.rounded(.down)
        var deadline = now()
        deadline.tv_sec += Int(whole)
        deadline.tv_nsec += Int((wait - whole) * 1e9)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        return deadline
    }

    private static func passed(_ deadline: timespec) -> Bool {
        let now = now()
        return now.tv_sec > deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)
    }
}

// @unchecked: `state` is read and written only with `mutex` held; the mutex and the condition live
// at fixed addresses (allocated in init, never moved), as pthreads requires.
extension Monitor: @unchecked Sendable where State: Sendable {}

/// A value set once and waited for (a one-shot: a command's answer, a probe's result, a thread's
/// end). The first `set` wins; later ones change nothing and say so.
public final class Latch<Value: Sendable>: Sendable {
    private let monitor = Monitor<Value?>(nil)

    public init() {}

    /// Sets the value and wakes every waiter. Returns false, changing nothing, when it was set before.
    @discardableResult
    public func set(_ value: Value) -> Bool {
        monitor.update { current in
            guard current == nil else { return false }
            current = value
            return true
        }
    }

    /// The value, nil while it is not set.
    public var value: Value? { monitor.withLock { $0 } }

    public var isSet: Bool { value != nil }

    /// The value, waiting up to `timeout` seconds for it; nil when it was not set in time.
    public func wait(timeout: Double) -> Value? {
        monitor.wait(until: { $0 != nil }, timeout: timeout) { value, _ in value }
    }

    /// The value, waiting up to `timeout` seconds for it; the error names what was waited for.
    public func wait(timeout: Double, waitingFor what: @autoclosure () -> String) throws(WaitTimeout) -> Value {
        guard let value = wait(timeout: timeout) else { throw WaitTimeout(waitingFor: what(), seconds: timeout) }
        return value
    }

    /// The value, waiting up to `timeout` seconds and asking `giveUp` every `slice` seconds: nil
    /// when it timed out or `giveUp` said true (check `isSet`/`giveUp` to tell which).
    public func wait(timeout: Double, slice: Double, giveUp: () -> Bool) -> Value? {
        let deadline = Monitor<Value?>.deadline(after: timeout)
        while true {
            let left = Double(deadline.tv_sec) + Double(deadline.tv_nsec) / 1e9 - Self.monotonicSeconds()
            if let value = wait(timeout: min(max(0, left), slice)) { return value }
            if giveUp() || left <= slice { return value }
        }
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
