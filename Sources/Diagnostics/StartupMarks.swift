import Foundation
import Synchronization
import Timing

/// When the steps of the process's start happened (main entered, config read, output open, probe,
/// decoder open, first frame decoded, first picture shown), on the monotonic clock: the trace
/// writes them once the first picture is shown, so that `make bench` can say where the start goes.
/// Only a step's first time counts (later items and reopened decoders pass the same steps).
public enum StartupMarks {
    private static let marks = Mutex<[(name: String, seconds: Double)]>([])
    /// Set once the first picture is shown: the start is over, and marks called for every frame
    /// (`first-upload`) cost one atomic load from then on.
    private static let over = Atomic(false)

    /// Marks `name` now, unless it was already marked.
    public static func mark(_ name: String) {
        guard !over.load(ordering: .relaxed) else { return }
        if name == "first-present" { over.store(true, ordering: .relaxed) }
        let now = monotonicSeconds()
        marks.withLock { marks in
            guard !marks.contains(where: { $0.name == name }) else { return }
            marks.append((name, now))
        }
    }

    /// The marks so far, in the order they were made.
    public static var all: [(name: String, seconds: Double)] { marks.withLock { $0 } }

    /// The monotonic clock in seconds (`CLOCK_MONOTONIC`: a benchmark's `time.monotonic()` reads
    /// the same clock).
    public static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The trace's `startup` line: `{"type":"startup","clock":"monotonic","marks":{"main":123.456789,...}}`.
    public static func traceLine() -> String {
        let fields = all.map { "\(jsonStringLiteral($0.name)):\($0.seconds.formatted(decimals: 6))" }
        return "{\"type\":\"startup\",\"clock\":\"monotonic\",\"marks\":{\(fields.joined(separator: ","))}}"
    }
}
