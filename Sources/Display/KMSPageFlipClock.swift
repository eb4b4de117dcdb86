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

/// Monotonic time and sleeping, as the presenter sees them: real in the output, virtual in tests.
public protocol PresentationTime: Sendable {
    /// Nanoseconds on CLOCK_MONOTONIC (the clock of DRM's event timestamps).
    func now() -> Int64
    /// Returns at `time` or later (at once when it has passed).
    func sleep(until time: Int64)
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

    /// Sleeps until vsync `n` is expected; refuses to wait more than 10 s.
    public func wait(forVsync n: Int64) throws {
        guard let at = predictedTime(ofVsync: n) else { return }
        if at - time.now() > 10_000_000_000 {
            throw WaitTimeout(waitingFor: "vsync \(n) (more than 10 s ahead)", seconds: 10)
        }
        time.sleep(until: at)
    }
}

/// The part of a KMS device the presenter needs: queue a flip, wait for its event. The real one is
/// `KMSScanout` (atomic or legacy); tests use a fake display with virtual time.
public protocol PageFlipDevice: AnyObject {
    /// Queues framebuffer `framebuffer` for the next vsync (the first call also sets the mode);
    /// returns at once, completion arrives as a flip event.
    func queueFlip(framebuffer: UInt32) throws
    /// The next flip event; throws `WaitTimeout` naming what it waited for after `timeout` seconds.
    func waitForFlip(timeout: Double) throws -> FlipEvent
}

/// Shows framebuffers on planned vsyncs through a `PageFlipDevice`: waits until the vsync before the
/// planned one (so that the flip lands on it), queues the flip, waits for its event, and records it
/// on the clock. One flip is in flight at a time.
public final class PageFlipPresenter<Device: PageFlipDevice> {
    public let device: Device
    public let clock: PageFlipClock
    /// How long a flip event may take (kmssink uses 3 s too).
    public var flipTimeout = 3.0
    /// Where in the interval before the target vsync the flip is queued (0: right after that vsync).
    public var commitPhase = 0.25
    /// Recent render times (start of drawing to render fence signalled), nanoseconds.
    public private(set) var renderTimes: [Int64] = []
    /// How many render times the estimate looks back on.
    public var renderWindow = 16
    /// Time kept free between the end of rendering and the flip's queue time: a tenth of a vsync.
    public var renderMargin: Double = 0.1

    /// Records how long a picture took to render (`GPUFrameTimer`).
    public func recordRender(nanoseconds: Int64) {
        renderTimes.append(nanoseconds)
        if renderTimes.count > renderWindow { renderTimes.removeFirst(renderTimes.count - renderWindow) }
    }

    /// The render time to plan with: the longest of the recent ones (nil before the first).
    public var renderEstimate: Int64? { renderTimes.max() }

    /// Decides when to start rendering the frame asked for vsync `asked`, and which vsync it can
    /// make: the first (from `asked`) whose commit deadline (a `renderMargin` of an interval before
    /// it) the render estimate still meets if rendering starts now; a later one than the clock
    /// allows is counted as rescheduled. Then sleeps until rendering should start: the estimate
    /// before the flip's queue time (`commitPhase` into the interval before the planned vsync).
    /// Returns the planned vsync, to pass to `present`. Without a render estimate or a flip yet,
    /// plans what the clock allows and returns at once.
    public func plan(forVsync asked: Int64) throws -> Int64 {
        let earliest = max(asked, clock.earliestVsync(after: clock.lastFlipVsync))
        guard let estimate = renderEstimate, clock.predictedTime(ofVsync: earliest - 1) != nil else { return earliest }
        let interval = clock.measuredInterval ?? clock.nominalInterval
        let now = clock.time.now()
        var target = earliest
        while clock.predictedTime(ofVsync: target)! - Int64(interval * renderMargin) < now + estimate && target - earliest < 1000 {
            target += 1
        }
        clock.noteRescheduled(by: target - earliest)
        let start = clock.predictedTime(ofVsync: target - 1)! + Int64(interval * commitPhase) - estimate
        if start - now > 10_000_000_000 {
            throw WaitTimeout(waitingFor: "the moment to start rendering for vsync \(target) (more than 10 s ahead)", seconds: 10)
        }
        clock.time.sleep(until: start)
        return target
    }

    public init(device: Device, clock: PageFlipClock) {
        self.device = device
        self.clock = clock
    }

    /// Shows `framebuffer` on vsync `vsync`, or on the first vsync it can still make. Returns the
    /// vsync it was shown on, as the flip event says.
    public func present(framebuffer: UInt32, atVsync vsync: Int64) throws -> Int64 {
        let target = max(vsync, clock.earliestVsync(after: clock.lastFlipVsync))
        if let previous = clock.predictedTime(ofVsync: target - 1) {
            let queueAt = previous + Int64(clock.nominalInterval * commitPhase)
            if queueAt - clock.time.now() > 10_000_000_000 {
                throw WaitTimeout(waitingFor: "the moment to queue a flip for vsync \(target) (more than 10 s ahead)", seconds: 10)
            }
            clock.time.sleep(until: queueAt)
        }
        try device.queueFlip(framebuffer: framebuffer)
        let event = try device.waitForFlip(timeout: flipTimeout)
        return clock.record(event, planned: vsync)
    }
}
