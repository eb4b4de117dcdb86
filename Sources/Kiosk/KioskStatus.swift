import Foundation
import Playback

/// What the kiosk is doing, as the control socket reports it. Written by the playback threads,
/// read by the control server; every access takes the lock, so it is cheap to update per frame.
public final class KioskStatus: @unchecked Sendable {
    // @unchecked: all state is guarded by `lock`.
    public struct Item: Sendable, Equatable {
        public enum State: String, Sendable { case pending, playing, played, failed }
        /// As the config writes it.
        public var uri: String
        /// The file it names.
        public var path: String?
        public var state: State = .pending
        public var error: String?
        /// The loop pass in which it last failed.
        public var failedInLoop: Int?
    }

    public struct Output: Sendable, Equatable {
        public var name: String
        public var mode: String
        public var videoRect: [Int]?
        public var connected = true
        /// Wall sync by the clock: how far the last frame shown was from its place on the
        /// timeline (ms, positive: late), and the corrections made (repeated and skipped frames,
        /// restarts at the clock's position).
        public var syncErrorMs: Double?
        public var syncRepeated = 0
        public var syncSkipped = 0
        public var syncRestarts = 0
        /// Hardware frames shown as background because they could be neither imported nor copied.
        public var framesNotDrawn = 0
    }

    public struct Snapshot: Sendable {
        public var items: [Item] = []
        public var position: Int?
        /// The file of the item playing now (after a reload it may be from the old playlist).
        public var currentPath: String?
        public var timePos: Double?
        public var duration: Double?
        public var paused = false
        public var loopPass = 0
        public var hwdecRequested = "auto"
        public var hwdecCurrent = "no"
        public var hwdecInterop = "none"
        public var hwdecFallback: String?
        public var hwdecDegraded = false
        public var dropped = 0
        public var delayed = 0
        /// Wall-clock times of recent drops, for "frames dropped in the last minute".
        public var recentDrops: [ContinuousClock.Instant] = []
        public var displayFPS: Double = 0
        public var vsyncJitter: Double = 0
        public var outputs: [Output] = []
        public var reloadError: String?
        /// `free` or `clock` (wall sync), and, with `clock`, what the clock service says.
        public var wallSync = "free"
        public var clockQuality: ClockQuality?
        /// Files whose pixel format is converted with swscale: uri -> "from -> to".
        public var conversions: [String: String] = [:]
    }

    private let lock = NSLock()
    private var state = Snapshot()

    public init() {}

    public var snapshot: Snapshot { lock.withLock { state } }

    public func update(_ change: (inout Snapshot) -> Void) {
        lock.withLock { change(&state) }
    }

    /// `{"status":"ok|degraded|failed","reasons":[...]}`: failed when nothing can be played;
    /// degraded when an item failed in the last loop, hardware decode asked for is not in use, frames
    /// were dropped in the last minute, no display is connected, hardware frames could not be drawn,
    /// a reload was refused, or (wall sync by the clock) the clock service says the clock is
    /// unsynchronised or over a vsync off.
    public func health(now: ContinuousClock.Instant = .now) -> (status: String, reasons: [String]) {
        let s = snapshot
        var reasons: [String] = []
        let failed = s.items.enumerated().filter { $0.element.state == .failed }
        if !s.items.isEmpty && failed.count == s.items.count {
            return ("failed", ["nothing can be played: " + failed.map { "\($0.element.uri): \($0.element.error ?? "failed")" }.joined(separator: "; ")])
        }
        for (index, item) in failed where (item.failedInLoop ?? -10) >= s.loopPass - 1 {
            reasons.append("item \(index) (\(item.uri)) failed: \(item.error ?? "unknown error")")
        }
        if s.hwdecDegraded {
            reasons.append("hardware decode \(s.hwdecRequested) not in use: \(s.hwdecFallback ?? "unknown reason")")
        }
        let drops = s.recentDrops.filter { now - $0 < .seconds(60) }.count
        if drops > 0 { reasons.append("\(drops) frames dropped in the last minute") }
        for output in s.outputs where !output.connected { reasons.append("output \(output.name): no display connected") }
        for output in s.outputs where output.framesNotDrawn > 0 {
            reasons.append("output \(output.name): \(output.framesNotDrawn) hardware frames could be neither imported nor copied (shown as background)")
        }
        if let reload = s.reloadError { reasons.append("last reload refused: \(reload)") }
        if s.wallSync == "clock", let clock = s.clockQuality, clock.source != "none" {
            let vsync = 1 / (s.displayFPS > 0 ? s.displayFPS : 60)
            if !clock.synchronized {
                reasons.append("wall sync: the system clock is not synchronised (\(clock.source): \(clock.detail))")
            } else if let offset = clock.offset, abs(offset) > vsync {
                reasons.append("wall sync: the system clock is \((offset * 1000).formatted(decimals: 1)) ms off its reference (\(clock.source)), more than a vsync")
            }
        }
        return (reasons.isEmpty ? "ok" : "degraded", reasons)
    }
}
