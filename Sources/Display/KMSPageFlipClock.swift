import Foundation
import Playback
import Synchronization

/// A page-flip completion as the kernel reports it (`DRM_EVENT_FLIP_COMPLETE`).
public struct FlipEvent: Sendable, Equatable {
    /// The CRTC's vblank counter at the flip (stuck at one value on displays without vblank, e.g.
    /// virtio-gpu).
    public var sequence: UInt32
    /// When the flip happened, nanoseconds on CLOCK_MONOTONIC.
    public var time: Int64
    public var crtc: UInt32
    public init(sequence: UInt32, time: Int64, crtc: UInt32) {
        self.sequence = sequence
        self.time = time
        self.crtc = crtc
    }
}

/// Monotonic time and sleeping, as the display side sees them: real in the output, virtual in tests.
public protocol PresentationTime: Sendable {
    /// Nanoseconds on CLOCK_MONOTONIC (the clock of DRM's event timestamps).
    func now() -> Int64
    /// Returns at `time` or later (at once when it has passed).
    func sleep(until time: Int64)
    /// True for time that moves only when something sleeps or a test advances it.
    var isVirtual: Bool { get }
}

extension PresentationTime {
    public var isVirtual: Bool { false }
}

/// CLOCK_MONOTONIC and `nanosleep`.
public struct MonotonicTime: PresentationTime {
    public init() {}
    public func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    public func sleep(until time: Int64) {
        let remaining = time - now()
        if remaining > 0 {
            var request = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
            var left = timespec()
            while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
        }
    }
}

/// What the page-flip clock has counted (mpv's names in the comments).
public struct FlipStats: Sendable, Equatable {
    public var flips = 0
    /// Frames shown on a later vsync than planned (`vo-delayed-frame-count`).
    public var lateFrames = 0
    /// Vsyncs those frames missed, summed (`mistimed-frame-count` counts frames, this counts vsyncs).
    public var missedVsyncs: Int64 = 0
    /// Flip events whose vblank counter did not advance: the display has no vblank counter and
    /// vsyncs are counted from the event timestamps instead.
    public var stuckSequences = 0
    /// Frames planned for a later vsync than asked because the measured render time said the asked
    /// one could not be made (they are not late: the plan was kept), and the vsyncs that moved them.
    public var rescheduledFrames = 0
    public var rescheduledVsyncs: Int64 = 0
    /// Shown vsync minus planned vsync, counted per difference (0: on time, 1: a vsync late, ...).
    public var shownMinusPlanned: [Int64: Int] = [:]
    public init() {}
}

/// The presentation clock of a KMS output, driven by page-flip events. Vsync 0 is the first flip
/// (the modeset); later vsyncs are numbered from the events' vblank counter, or, where the counter
/// does not move, from their timestamps on the mode's nominal refresh. Keeps a ring of recent vsync
/// times for the measured refresh and its jitter.
public final class PageFlipClock: VsyncClock, Sendable {
    public let refresh: RefreshRate
    public let time: any PresentationTime
    public var isVirtual: Bool { time.isVirtual }
    /// How many recent flips the ring keeps.
    public static let ringSize = 64

    private struct Sample { var vsync: Int64; var time: Int64 }
    private struct State {
        var ring: [Sample] = []
        var lastSequence: UInt32 = 0
        var stats = FlipStats()
    }
    private let state = Mutex(State())

    public init(refresh: RefreshRate, time: any PresentationTime = MonotonicTime()) {
        self.refresh = refresh
        self.time = time
    }

    /// The nominal vsync interval in nanoseconds.
    public var nominalInterval: Double { 1e9 * Double(refresh.denominator) / Double(refresh.numerator) }

    /// Records a flip event for a frame planned for vsync `planned`; returns the vsync it was shown on.
    @discardableResult
    public func record(_ event: FlipEvent, planned: Int64) -> Int64 {
        state.withLock { s in
            let vsync: Int64
            if let last = s.ring.last {
                let advanced = event.sequence &- s.lastSequence
                if advanced != 0 && advanced < 1 << 31 {
                    vsync = last.vsync + Int64(advanced)
                } else {
                    s.stats.stuckSequences += 1
                    let elapsed = Double(event.time - last.time) / nominalInterval
                    vsync = last.vsync + max(1, Int64(elapsed.rounded()))
                }
            } else {
                vsync = 0
            }
            s.lastSequence = event.sequence
            s.ring.append(Sample(vsync: vsync, time: event.time))
            if s.ring.count > Self.ringSize { s.ring.removeFirst(s.ring.count - Self.ringSize) }
            s.stats.flips += 1
            s.stats.shownMinusPlanned[vsync - planned, default: 0] += 1
            if vsync > planned {
                s.stats.lateFrames += 1
                s.stats.missedVsyncs += vsync - planned
            }
            return vsync
        }
    }

    public var stats: FlipStats { state.withLock { $0.stats } }

    /// Counts a frame the scheduler moved `vsyncs` later than asked before rendering it.
    public func noteRescheduled(by vsyncs: Int64) {
        guard vsyncs > 0 else { return }
        state.withLock { s in
            s.stats.rescheduledFrames += 1
            s.stats.rescheduledVsyncs += vsyncs
        }
    }

    /// The last vsync a flip was seen on, or -1 before the first flip.
    public var lastFlipVsync: Int64 { state.withLock { $0.ring.last?.vsync ?? -1 } }

    /// The recent vsync interval measured from the ring, in nanoseconds (nil with under two flips).
    public var measuredInterval: Double? {
        state.withLock { s in
            guard let first = s.ring.first, let last = s.ring.last, last.vsync > first.vsync else { return nil }
            return Double(last.time - first.time) / Double(last.vsync - first.vsync)
        }
    }

    /// The measured refresh rate in hertz.
    public var measuredRefresh: Double? { measuredInterval.map { 1e9 / $0 } }

    /// mpv's vsync jitter: the root-mean-square deviation of the recent per-vsync intervals from the
    /// measured interval, relative to that interval (0 for a perfectly regular display).
    public var jitter: Double? {
        guard let interval = measuredInterval else { return nil }
        return state.withLock { s in
            var sum = 0.0, count = 0
            for (a, b) in zip(s.ring, s.ring.dropFirst()) where b.vsync > a.vsync {
                let perVsync = Double(b.time - a.time) / Double(b.vsync - a.vsync)
                sum += (perVsync - interval) * (perVsync - interval)
                count += 1
            }
            return count == 0 ? nil : (sum / Double(count)).squareRoot() / interval
        }
    }

    /// When vsync `n` is expected, from the last flip and the measured (or nominal) interval.
    public func timeUntilVsync(_ n: Int64) -> Duration? {
        predictedTime(ofVsync: n).map { .nanoseconds($0 - time.now()) }
    }

    public func predictedTime(ofVsync n: Int64) -> Int64? {
        let interval = measuredInterval ?? nominalInterval
        return state.withLock { s in
            guard let last = s.ring.last else { return nil }
            return last.time + Int64((Double(n - last.vsync) * interval).rounded())
        }
    }

    /// The last vsync that has happened by now (estimated past the last flip), or -1 before any flip.
    public var currentVsync: Int64 {
        let interval = measuredInterval ?? nominalInterval
        let now = time.now()
        return state.withLock { s in
            guard let last = s.ring.last else { return -1 }
            return last.vsync + max(0, Int64((Double(now - last.time) / interval).rounded(.down)))
        }
    }

    public func earliestVsync(after vsync: Int64) -> Int64 { max(vsync + 1, currentVsync + 1) }
}

/// The part of a KMS device a head needs: queue a flip, wait for its event. The real one is
/// `KMSScanout` (atomic or legacy, its events read through `DRMDevice.readFlipEvent`); tests use a
/// fake display with virtual time.
public protocol PageFlipDevice: AnyObject {
    /// Queues framebuffer `framebuffer` for the next vsync (the first call also sets the mode);
    /// returns at once, completion arrives as a flip event.
    func queueFlip(framebuffer: UInt32) throws
    /// The next flip event; throws `WaitTimeout` naming what it waited for after `timeout` seconds.
    func waitForFlip(timeout: Double) throws -> FlipEvent
}
