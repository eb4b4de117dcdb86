import Foundation

/// Runs jobs that may block (an asset's probe, the callbacks waiting for it) on at most `limit`
/// threads of one name, started as jobs come and ended once idle for `idleSeconds`, so a burst of
/// any size (300 `loadfile append`s, a playlist of a million entries) queues instead of starting
/// a thread per job, and the thread count goes back to where it was after it.
///
/// Jobs run in the order they came. A job that blocks holds one thread; the others go on.
public final class ThreadPool: Sendable {
    public let name: String
    public let limit: Int
    public let idleSeconds: Double
    /// Jobs that may wait for a thread before `tryRun` refuses more (nil: no limit).
    public let maxWaiting: Int?

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        var idle = 0
        /// The most threads this pool has run at once.
        var peak = 0
        var waiting: Int { jobs.count - head }
    }
    private let state = Monitor(State())

    public init(name: String, limit: Int, maxWaiting: Int? = nil, idleSeconds: Double = 2) {
        self.name = name
        self.limit = max(1, limit)
        self.maxWaiting = maxWaiting.map { max(0, $0) }
        self.idleSeconds = idleSeconds
    }

    /// Asset probes: at most 4 at once (one item playing, the next two decoding ahead, one spare
    /// for a file that is slow to open).
    public static let probes = ThreadPool(name: "marquee-probe", limit: 4)
    /// Callers waiting for a probe: each resumed on one of at most 4 threads.
    public static let assetReady = ThreadPool(name: "marquee-asset-ready", limit: 4)

    /// Queues `job`; starts a thread for it when none is idle and fewer than `limit` run.
    public func run(_ job: @escaping @Sendable () -> Void) {
        _ = enqueue(job, refuseOver: nil)
    }

    /// Queues `job` as `run` does, unless `maxWaiting` jobs already wait for a thread: then it is
    /// dropped and false returned, so a burst against jobs that never end cannot grow the queue.
    public func tryRun(_ job: @escaping @Sendable () -> Void) -> Bool {
        enqueue(job, refuseOver: maxWaiting)
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void, refuseOver bound: Int?) -> Bool {
        let outcome = state.update { s -> (queued: Bool, start: Bool) in
            // Jobs an idle thread will take do not count as waiting.
            if let bound, s.waiting - s.idle >= bound { return (false, false) }
            s.jobs.append(job)
            // An idle thread takes it, unless more jobs wait than threads are idle.
            if s.waiting <= s.idle || s.threads >= limit { return (true, false) }
            s.threads += 1
            s.peak = max(s.peak, s.threads)
            return (true, true)
        }
        if outcome.start {
            startThread(named: name) { [self] in work() }
        } else if outcome.queued {
            state.signal()
        }
        return outcome.queued
    }

    /// Threads running now, and the most that ran at once.
    public var threadCount: (now: Int, peak: Int) { state.withLock { ($0.threads, $0.peak) } }

    private func work() {
        while true {
            // The next job, waiting up to `idleSeconds` for one; none: this thread ends.
            state.update { $0.idle += 1 }
            let job = state.wait(until: { $0.waiting > 0 }, timeout: idleSeconds) { s, timedOut -> (@Sendable () -> Void)? in
                s.idle -= 1
                guard !timedOut else {
                    s.threads -= 1
                    return nil
                }
                let job = s.jobs[s.head]
                s.head += 1
                if s.head == s.jobs.count || s.head > 1024 {
                    s.jobs.removeSubrange(0..<s.head)
                    s.head = 0
                }
                return job
            }
            guard let job else { return }
            job()
        }
    }
}
