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
    /// Draws a picture with `draw` and shows it on display vsync `vsync` (or the first one it can
    /// still make; the first call sets the mode). Returns the vsync it was shown on.
    func show(atVsync vsync: Int64, draw: () throws -> Void) throws -> Int64
    /// Takes the head down: puts back what the CRTC showed before, releases its buffers. `lost`:
    /// the display went away, so failing to restore is expected.
    func close(lost: Bool)
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
/// display's), timed by the page-flip clock of whichever head presents now. While no display is
/// connected it does not wait (the link's `present` waits for the display instead).
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

    public func wait(forVsync n: Int64) throws {
        guard let (clock, map) = state.withLock({ $0.head }) else { return }
        try clock.wait(forVsync: map.toDisplay(n))
    }
}

/// The hotplug state machine: waits for a display, opens it, presents on it, notices when it goes
/// (hotplug notice + recheck, flip timeout, failing commit), takes it down and waits again. Listens
/// for hotplug notices rather than polling; re-probes every `probeInterval` seconds as well, and
/// checks `shouldContinue` every `waitSlice` seconds while it waits.
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
    private var map: VsyncMap?
    private var sessionRefreshFixed = false
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

    /// Returns once a display is connected and opened (true), or when `shouldContinue` says stop
    /// (false). Throws `WaitTimeout` naming what it waited for when `waitTimeout` passes first.
    /// The first display fixes the session's refresh (`clock.refresh`).
    public func waitForDisplay() throws -> Bool {
        if head != nil { return true }
        let started = time.now()
        var lastProbe: Int64?
        var notice = false
        while shouldContinue() {
            let now = time.now()
            if notice || lastProbe.map({ Double(now - $0) >= probeInterval * 1e9 }) ?? true {
                lastProbe = now
                do {
                    if let opened = try display.connect() {
                        head = opened
                        map = nil
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
            if let limit = waitTimeout, Double(time.now() - started) >= limit * 1e9 {
                throw WaitTimeout(waitingFor: "a connected display (\(display.absence))", seconds: limit)
            }
            notice = hotplug.wait(timeout: waitSlice)
            if notice { counters.hotplugNotices += 1 }
        }
        return false
    }

    /// Shows a picture (drawn by `draw` on the head) on session vsync `vsync` or the first it can
    /// make; returns the session vsync it was shown on. Without a display it first waits for one
    /// (the player is not asked for frames meanwhile, so decoding stays paused); when stopped
    /// while waiting it returns `vsync` without showing anything.
    public func present(atVsync vsync: Int64, draw: () throws -> Void) throws -> Int64 {
        while true {
            guard try waitForDisplay(), let head else { return vsync }
            if hotplug.wait(timeout: 0) {
                counters.hotplugNotices += 1
                if let why = display.recheck(head) {
                    lose(why)
                    continue
                }
            }
            let map = self.map ?? VsyncMap(sessionAnchor: vsync, session: clock.refresh, display: head.mode.refresh)
            if self.map == nil {
                self.map = map
                clock.follow(head.flipClock, map: map)
            }
            do {
                let shown = try head.show(atVsync: map.toDisplay(vsync), draw: draw)
                enter(.presenting(connector: head.connector, mode: head.mode))
                return max(vsync, map.toSession(shown))
            } catch let error as WaitTimeout {
                counters.flipTimeouts += 1
                lose("\(error)")
            } catch let error as DRMError {
                lose("\(error)")
            }
        }
    }

    /// Takes the head down after a loss; the next `present` waits for a display again.
    private func lose(_ reason: String) {
        counters.losses += 1
        head?.close(lost: true)
        head = nil
        map = nil
        clock.follow(nil, map: nil)
        enter(.lost(reason: reason))
    }

    /// Takes the head down for good (restoring the display). Safe to call more than once.
    public func close() {
        head?.close(lost: false)
        head = nil
        map = nil
        clock.follow(nil, map: nil)
    }
}
