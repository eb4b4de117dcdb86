import Foundation
import Playback
import Synchronization

/// Where a display output stands. A display absent at start waits; once one is connected it is
/// modeset; after its first flip it presents; a disconnect, a connector whose mode went away, a
/// flip that times out or a failing commit make it lost, and it waits (re-probing at once) again:
///
///     waitingForDisplay -> modesetting -> presenting -> lost -> waitingForDisplay | modesetting ...
public enum DisplayLinkState: Sendable, Equatable, CustomStringConvertible {
    case waitingForDisplay(reason: String)
    case modesetting(connector: String, mode: DisplayMode)
    case presenting(connector: String, mode: DisplayMode)
    case lost(reason: String)

    /// Whether a display is connected and driven (modesetting or presenting).
    public var isConnected: Bool {
        switch self {
        case .modesetting, .presenting: true
        case .waitingForDisplay, .lost: false
        }
    }

    public var description: String {
        switch self {
        case .waitingForDisplay(let reason): "waiting for a display (\(reason))"
        case .modesetting(let c, let m): "modesetting \(c) to \(m)"
        case .presenting(let c, let m): "presenting on \(c) in \(m)"
        case .lost(let reason): "display lost (\(reason))"
        }
    }
}

/// The kernel's display hotplug notices (or a stand-in for them).
public protocol HotplugEvents: AnyObject {
    /// Waits up to `timeout` seconds (0: only looks) for a DRM hotplug notice; true when at least
    /// one came (several are merged into one answer).
    func wait(timeout: Double) -> Bool
}

/// One connector driven in one mode: what a display link presents on while it is connected.
public protocol DisplayHead: AnyObject {
    var connector: String { get }
    var mode: DisplayMode { get }
    var flipClock: PageFlipClock { get }
    /// Draws a picture with `draw` into the head's next buffer. Returns its render time in
    /// nanoseconds where it is measured, nil for the head's first picture (it pays for one-time
    /// work: textures, shader variants, an outlier a render estimate would keep).
    func draw(_ draw: () throws -> Void) throws -> Int64?
    /// Queues the picture drawn last for the next vsync (the first call sets the mode); returns at
    /// once. `planned`: the display vsync it is meant for (late pictures are counted from it).
    func queueFlip(planned: Int64) throws
    /// Waits up to `timeout` seconds for the queued picture's flip; returns the display vsync it
    /// was shown on. Throws `WaitTimeout` when it did not come in time (the flip stays queued).
    func waitForFlip(timeout: Double) throws -> Int64
    /// Puts the display into standby (false: no signal, the CRTC inactive) or wakes it (true: the
    /// next queued picture sets the mode again).
    func setPower(_ on: Bool) throws
    /// Takes the head down: puts back what the CRTC showed before, releases its buffers. `lost`:
    /// the display went away, so failing to restore is expected.
    func close(lost: Bool)
}

extension DisplayHead {
    public func setPower(_ on: Bool) throws {
        throw OutputUnavailable(description: "the display on \(connector) has no power control")
    }
}

/// A display device whose connectors come and go: the real one is a DRM card, tests use a fake.
public protocol HotplugDisplay: AnyObject {
    associatedtype Head: DisplayHead
    /// Opens the connected connector the settings ask for in the mode they ask for, ready for its
    /// first modeset; nil when none is connected (`absence` then says why).
    func connect() throws -> Head?
    /// Why `connect()` found nothing, e.g. "no connected connector on /dev/dri/card0 (HDMI-A-1)".
    var absence: String { get }
    /// Asked after a hotplug notice: nil while `head` may go on, else why it must be redone (its
    /// connector was disconnected, or no longer offers its mode).
    func recheck(_ head: Head) -> String?
}

/// Counters of a display link's life.
public struct DisplayLinkCounters: Sendable, Equatable {
    /// Heads opened (the first connection and every reconnection).
    public var connects = 0
    /// Heads lost (disconnected, mode gone, flip timed out, commit failed).
    public var losses = 0
    /// Flips whose event did not come in time (each one also a loss).
    public var flipTimeouts = 0
    /// DRM hotplug notices seen.
    public var hotplugNotices = 0
    public init() {}
}

/// Maps the session's vsyncs (the player's, at the refresh of the first display) onto the vsyncs
/// of the head presenting now (its own refresh, counted from its first flip), so that the player's
/// timeline goes on across reconnections and mode changes.
struct VsyncMap: Sendable {
    var sessionAnchor: Int64
    var session: RefreshRate
    var display: RefreshRate

    /// The last display vsync at or before session vsync `s` (the inverse of `toSession`:
    /// `toDisplay(toSession(v)) == v`, so no display vsync is skipped).
    func toDisplay(_ s: Int64) -> Int64 {
        let n = Int128(s - sessionAnchor) * Int128(display.numerator) * Int128(session.denominator)
        let d = Int128(display.denominator) * Int128(session.numerator)
        return Int64(n >= 0 ? n / d : -((-n + d - 1) / d))
    }

    /// The first session vsync at or after display vsync `v`.
    func toSession(_ v: Int64) -> Int64 {
        let n = Int128(v) * Int128(session.numerator) * Int128(display.denominator)
        let d = Int128(session.denominator) * Int128(display.numerator)
        return sessionAnchor + Int64((n + d - 1) / d)
    }
}

/// The clock a display link gives its player: session vsyncs at a fixed refresh (the first
/// display's), timed by the page-flip clock of whichever head presents now (no times while no
/// display is connected and before a head's first flip).
public final class DisplayLinkClock: VsyncClock {
    private struct State {
        var refresh: RefreshRate
        var head: (clock: PageFlipClock, map: VsyncMap)?
    }
    private let state: Mutex<State>

    init(refresh: RefreshRate) { state = Mutex(State(refresh: refresh)) }

    public var refresh: RefreshRate { state.withLock { $0.refresh } }

    func setRefresh(_ refresh: RefreshRate) { state.withLock { $0.refresh = refresh } }
    func follow(_ clock: PageFlipClock?, map: VsyncMap?) {
        state.withLock { s in s.head = clock.flatMap { c in map.map { (c, $0) } } }
    }

    public func earliestVsync(after vsync: Int64) -> Int64 {
        guard let (clock, map) = state.withLock({ $0.head }) else { return vsync + 1 }
        return max(vsync + 1, map.toSession(clock.earliestVsync(after: map.toDisplay(vsync))))
    }

    public func timeUntilVsync(_ n: Int64) -> Duration? {
        guard let (clock, map) = state.withLock({ $0.head }) else { return nil }
        return clock.timeUntilVsync(map.toDisplay(n))
    }

    public var isVirtual: Bool { state.withLock { $0.head?.clock.isVirtual ?? false } }
}

/// The hotplug state machine: waits for a display, opens it, presents on it, notices when it goes
/// (hotplug notice + recheck, flip timeout, failing commit), takes it down and waits again. Listens
/// for hotplug notices rather than polling; re-probes every `probeInterval` seconds as well, and
/// checks `shouldContinue` every `waitSlice` seconds while it waits. The presenting part is an
/// output driver's (`draw`, `queue`, `waitForEvent`): the presentation loop decides when.
///
/// Used from the presentation thread only.
public final class DisplayLink<Display: HotplugDisplay> {
    public let display: Display
    public let hotplug: any HotplugEvents
    public let time: any PresentationTime
    public let clock: DisplayLinkClock
    public private(set) var head: Display.Head?
    public private(set) var state: DisplayLinkState
    public private(set) var counters = DisplayLinkCounters()
    /// Called on every change of state (on the presentation thread).
    public var onStateChange: ((DisplayLinkState) -> Void)?
    /// Checked between waits: false stops waiting for a display (`waitForDisplay` returns false).
    public var shouldContinue: () -> Bool = { true }
    /// How long one wait for a hotplug notice lasts before the stop flag is checked again.
    public var waitSlice = 0.5
    /// Re-probe this often even without a notice (a notice may be missed, e.g. across a suspend).
    public var probeInterval = 10.0
    /// How long to wait for a display in all; nil: as long as it takes (a kiosk waits for its screen).
    public var waitTimeout: Double?
    /// How long a queued picture's flip event may take before the display counts as lost
    /// (kmssink uses 3 s too).
    public var flipTimeout = 3.0
    private var map: VsyncMap?
    private var sessionRefreshFixed = false
    /// When the picture in flight was queued (monotonic ns); nil when none is.
    private var inFlight: Int64?
    /// A loss not reported by `waitForEvent` yet.
    private var unreportedLoss: String?
    /// Waiting for a display: since when, the last probe, and whether a notice came since.
    private var waitingSince: Int64?
    private var lastProbe: Int64?
    private var noticePending = false
    private let logger: Logger

    public init(display: Display, hotplug: any HotplugEvents, time: any PresentationTime = MonotonicTime(),
                refresh: RefreshRate = RefreshRate(numerator: 60), logger: Logger) {
        self.display = display
        self.hotplug = hotplug
        self.time = time
        self.clock = DisplayLinkClock(refresh: refresh)
        self.logger = logger
        self.state = .waitingForDisplay(reason: "not probed yet")
    }

    private func enter(_ new: DisplayLinkState) {
        guard new != state else { return }
        state = new
        switch new {
        case .lost: logger.warning("display state", ["state": "\(new)"])
        default: logger.info("display state", ["state": "\(new)"])
        }
        onStateChange?(new)
    }

    /// One step of waiting for a display: probes when a hotplug notice came or `probeInterval`
    /// has passed (at once the first time), else waits up to `timeout` (at most `waitSlice`)
    /// seconds for a notice. True once a display is open. Throws `WaitTimeout` naming what it
    /// waited for once `waitTimeout` has passed since the wait began.
    private func displayWaitStep(timeout: Double) throws -> Bool {
        if head != nil { return true }
        let now = time.now()
        let since = waitingSince ?? now
        waitingSince = since
        if noticePending || lastProbe.map({ Double(now - $0) >= probeInterval * 1e9 }) ?? true {
            noticePending = false
            lastProbe = now
            do {
                if let opened = try display.connect() {
                    head = opened
                    map = nil
                    waitingSince = nil
                    lastProbe = nil
                    counters.connects += 1
                    if !sessionRefreshFixed {
                        clock.setRefresh(opened.mode.refresh)
                        sessionRefreshFixed = true
                    }
                    enter(.modesetting(connector: opened.connector, mode: opened.mode))
                    return true
                }
                enter(.waitingForDisplay(reason: display.absence))
            } catch {
                enter(.lost(reason: "cannot drive the display: \(error)"))
            }
        }
        if let limit = waitTimeout, Double(time.now() - since) >= limit * 1e9 {
            waitingSince = nil
            throw WaitTimeout(waitingFor: "a connected display (\(display.absence))", seconds: limit)
        }
        noticePending = hotplug.wait(timeout: max(0, min(timeout, waitSlice)))
        if noticePending { counters.hotplugNotices += 1 }
        return false
    }

    /// Returns once a display is connected and opened (true), or when `shouldContinue` says stop
    /// (false). Throws `WaitTimeout` naming what it waited for when `waitTimeout` passes first.
    /// The first display fixes the session's refresh (`clock.refresh`).
    public func waitForDisplay() throws -> Bool {
        while shouldContinue() {
            if try displayWaitStep(timeout: waitSlice) { return true }
        }
        return false
    }

    // MARK: The output driver's part (see `OutputDriver`)

    /// Whether a display is open to draw on (and not put into standby).
    public var isReady: Bool { head != nil && !isPoweredOff }

    /// True while the display is in standby (`setPower(false)`).
    public private(set) var isPoweredOff = false

    /// Puts the display into standby or wakes it. Off: the picture in flight is let flip first
    /// (at most `flipTimeout`), then the head goes dark; the clock stops following its flips.
    /// On: the next queued picture sets the mode again, and the session's vsyncs are mapped onto
    /// the display's anew (as after a reconnect). Without a display only the wish is kept.
    public func setPower(_ on: Bool) throws {
        guard on == isPoweredOff else { return }
        guard let head else {
            isPoweredOff = !on
            return
        }
        if on {
            try head.setPower(true)
            isPoweredOff = false
            logger.info("display power", ["state": "on", "connector": head.connector])
            return
        }
        if inFlight != nil {
            _ = try? head.waitForFlip(timeout: flipTimeout)
            inFlight = nil
        }
        try head.setPower(false)
        isPoweredOff = true
        map = nil
        clock.follow(nil, map: nil)
        logger.info("display power", ["state": "off", "connector": head.connector])
    }

    /// The render time of the last `draw`, nanoseconds (nil where not measured).
    public private(set) var lastRenderTime: Int64?

    /// Draws a picture with `draw` on the head. A hotplug notice is checked first: a display that
    /// went away (or changed its mode) is lost, and nothing is drawn (`isReady` is false).
    public func draw(_ draw: () throws -> Void) throws {
        lastRenderTime = nil
        guard let head, !isPoweredOff else { return }
        if hotplug.wait(timeout: 0) {
            counters.hotplugNotices += 1
            if let why = display.recheck(head) {
                lose(why)
                return
            }
        }
        do {
            lastRenderTime = try head.draw(draw)
        } catch let error as DRMError {
            lose("\(error)")
        }
    }

    /// Queues the picture drawn last for session vsync `vsync`. Without a display (lost since the
    /// picture was drawn) nothing is queued and the next `waitForEvent` reports the loss.
    public func queue(forVsync vsync: Int64) throws {
        if isPoweredOff {
            // Put into standby since the picture was asked for: nothing is shown; the loop hears
            // of it as a display gone (it draws again once the display is back).
            unreportedLoss = "the display was put into standby"
            return
        }
        guard let head else { return }
        let map = self.map ?? VsyncMap(sessionAnchor: vsync, session: clock.refresh, display: head.mode.refresh)
        if self.map == nil {
            self.map = map
            clock.follow(head.flipClock, map: map)
        }
        do {
            try head.queueFlip(planned: map.toDisplay(vsync))
            inFlight = time.now()
        } catch let error as DRMError {
            lose("\(error)")
        }
    }

    /// Waits up to `timeout` seconds for what happens next: the queued picture's flip (in session
    /// vsyncs), the display's loss (its flip not come within `flipTimeout`, a failing commit, a
    /// hotplug notice after which the head cannot go on), or, without a display, one step of the
    /// wait for one.
    public func waitForEvent(timeout: Double) throws -> OutputEvent {
        if let reason = unreportedLoss {
            unreportedLoss = nil
            return .lost(reason: reason)
        }
        if isPoweredOff {
            // In standby: nothing to wait for but hotplug notices (looked at again when woken).
            if hotplug.wait(timeout: max(0, min(timeout, waitSlice))) { counters.hotplugNotices += 1 }
            return .timedOut
        }
        guard let head else {
            _ = try displayWaitStep(timeout: timeout)
            return .timedOut
        }
        if let queuedAt = inFlight {
            let deadline = queuedAt + Int64(flipTimeout * 1e9)
            do {
                let shown = try head.waitForFlip(timeout: max(0, min(timeout, Double(deadline - time.now()) / 1e9)))
                inFlight = nil
                enter(.presenting(connector: head.connector, mode: head.mode))
                return .flipped(vsync: map.map { $0.toSession(shown) } ?? shown)
            } catch let error as WaitTimeout {
                guard time.now() >= deadline else { return .timedOut }
                counters.flipTimeouts += 1
                let reason = "\(WaitTimeout(waitingFor: error.waitingFor, seconds: flipTimeout))"
                lose(reason)
                unreportedLoss = nil
                return .lost(reason: reason)
            } catch let error as DRMError {
                lose("\(error)")
                unreportedLoss = nil
                return .lost(reason: "\(error)")
            }
        }
        if hotplug.wait(timeout: max(0, timeout)) {
            counters.hotplugNotices += 1
            if let why = display.recheck(head) {
                lose(why)
                unreportedLoss = nil
                return .lost(reason: why)
            }
        }
        return .timedOut
    }

    /// Takes the head down after a loss; the display is waited for (and probed at once) again.
    private func lose(_ reason: String) {
        counters.losses += 1
        head?.close(lost: true)
        head = nil
        map = nil
        inFlight = nil
        lastProbe = nil
        unreportedLoss = reason
        clock.follow(nil, map: nil)
        enter(.lost(reason: reason))
    }

    /// Takes the head down for good (restoring the display). Safe to call more than once.
    public func close() {
        head?.close(lost: false)
        head = nil
        map = nil
        inFlight = nil
        clock.follow(nil, map: nil)
    }
}
