import Foundation

/// The display side of a player (`AVPlayerItemVideoOutput` driven by a display link): once per
/// vsync the display asks which frame to show on that vsync, and the player's time moves with
/// those questions. Tests drive it by hand with any vsync numbers they like.
public final class PlayerVideoOutput: @unchecked Sendable {
    // @unchecked: immutable; the player guards its own state.
    public let player: Player
    public let refresh: RefreshRate
    public let name: String

    /// One output per player: its vsyncs are the player's clock.
    public init(player: Player, refresh: RefreshRate, name: String = "output") throws {
        self.player = player
        self.refresh = refresh
        self.name = name
        try player.attachOutput(refresh: refresh, name: name)
    }

    /// The frame to show on vsync `n` (later calls must ask for later vsyncs). Waits up to
    /// `wait` seconds for a due frame that is still being decoded; past that the picture stays
    /// as it is (a stall). Call it for the next vsync, not the last one.
    public func picture(forVsync n: Int64, waitingUpTo wait: Double = 10) -> Player.Picture {
        player.picture(forVsync: n, wait: wait)
    }

    /// Tells the player that the picture asked for the last vsync was shown on a later one
    /// (`actual`): the timeline moves with it, so the following frames keep their cadence.
    public func didShow(onVsync actual: Int64) {
        player.didShow(onVsync: actual)
    }
}

/// Drives a player from an output's vsyncs: asks for each vsync's picture, draws it when it
/// changes, and writes the trace. Runs on the output's thread (its GL context lives there).
public final class PlayerPresenter<Output: PresentationOutput> {
    public let player: Player
    public let output: Output
    public let videoOutput: PlayerVideoOutput
    private let trace: TraceWriter?
    private let logger: Logger
    private let exitAfter: MediaTime?
    /// Called on the presentation thread once per vsync, before its picture is asked for: the
    /// place for work that must run on the output's thread (screenshots) and for liveness pings.
    public var onVsync: ((Int64) throws -> Void)?
    /// Called on the presentation thread before a new frame of `item` is drawn (per-item settings).
    public var willPresent: ((PlayerItem) -> Void)?
    /// Called after a new frame was shown, with the vsync it was shown on (wall sync checks it).
    public var didPresent: ((Int64, Player.Picture) -> Void)?

    public init(player: Player, output: Output, trace: TraceWriter? = nil, logger: Logger, exitAfter: MediaTime? = nil) throws {
        self.player = player
        self.output = output
        self.trace = trace
        self.logger = logger.with(["output": output.name])
        self.exitAfter = exitAfter
        videoOutput = try PlayerVideoOutput(player: player, refresh: output.clock.refresh, name: output.name)
        player.trace = trace
    }

    /// Presents until `shouldContinue` says no, `exitAfter` of presentation time has passed, or
    /// (with `stopWhenEmpty`) the queue has played out and the background is shown.
    public func run(stopWhenEmpty: Bool = false, while shouldContinue: () -> Bool) throws -> PresentationStats {
        let clock = output.clock
        // A virtual clock waits as long as decoding takes; a real one only about one vsync.
        let wait = clock is VirtualVsyncClock ? 10 : max(0.002, clock.refresh.interval.seconds)
        var last: Int64 = -1
        var showingBlank: Bool?
        defer { trace?.flush() }
        while shouldContinue() {
            let n = clock.earliestVsync(after: last)
            if let exitAfter, clock.time(ofVsync: n) >= exitAfter { break }
            try onVsync?(n)
            let picture = videoOutput.picture(forVsync: n, waitingUpTo: wait)
            guard picture.isNew || showingBlank == nil || (picture.frame == nil && showingBlank == false) else {
                // Nothing new for vsync n: wait only for the vsync before it, so that the next
                // picture (for n + 1) is drawn during a whole vsync interval and not just the
                // last one. Without a new picture the loop still runs at the display's rate.
                try clock.wait(forVsync: n - 1)
                last = n
                continue
            }
            var shown: Int64
            if let frame = picture.frame, let item = picture.item {
                guard let drawable = frame as? Output.Frame else {
                    logger.error("frame of the wrong type for this output; skipped", ["type": "\(type(of: frame))"])
                    last = n
                    continue
                }
                willPresent?(item)
                shown = try output.present(drawable, atVsync: n)
                trace?.frame(vsync: shown, t: clock.time(ofVsync: shown), output: output.name, item: item.traceIndex,
                             uri: item.asset.url.path, pts: frame.pts,
                             wall: clock.wallTime(ofVsync: shown)?.unixSeconds ?? Date().timeIntervalSince1970)
                didPresent?(shown, picture)
                showingBlank = false
            } else {
                shown = try output.present(nil, atVsync: n)
                if showingBlank != true {
                    trace?.blank(vsync: shown, t: clock.time(ofVsync: shown), output: output.name)
                }
                showingBlank = true
                if stopWhenEmpty && player.currentItem == nil { break }
            }
            if shown > n { videoOutput.didShow(onVsync: shown) }
            last = shown
        }
        return player.stats
    }
}
