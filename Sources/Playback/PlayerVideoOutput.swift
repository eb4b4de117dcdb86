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
///
/// A mosaic output shows several players at once (one per region): each vsync asks every player
/// for its picture, and when any changes the output draws all of them
/// (`PresentationOutput.present(mosaic:atVsync:)`, in the order of `players`).
public final class PlayerPresenter<Output: PresentationOutput> {
    /// The first player (the only one, except on a mosaic).
    public var player: Player { players[0] }
    public let players: [Player]
    public let output: Output
    public let videoOutputs: [PlayerVideoOutput]
    public var videoOutput: PlayerVideoOutput { videoOutputs[0] }
    private let trace: TraceWriter?
    private let logger: Logger
    private let exitAfter: MediaTime?
    /// The trace's name of each player's pictures: the output's, or with several players the
    /// output's and the player's number (`headless-0#1`).
    private let traceNames: [String]
    /// Called on the presentation thread once per vsync, before its picture is asked for: the
    /// place for work that must run on the output's thread (screenshots) and for liveness pings.
    public var onVsync: ((Int64) throws -> Void)?
    /// Called on the presentation thread before a new frame of `item` from player number `lane`
    /// is drawn (per-item settings).
    public var willPresent: ((_ lane: Int, PlayerItem) -> Void)?
    /// Called after a new frame of player number `lane` was shown, with the vsync it was shown on
    /// (wall sync checks it).
    public var didPresent: ((_ lane: Int, Int64, Player.Picture) -> Void)?

    public convenience init(player: Player, output: Output, trace: TraceWriter? = nil, logger: Logger, exitAfter: MediaTime? = nil) throws {
        try self.init(players: [player], output: output, trace: trace, logger: logger, exitAfter: exitAfter)
    }

    public init(players: [Player], output: Output, trace: TraceWriter? = nil, logger: Logger, exitAfter: MediaTime? = nil) throws {
        precondition(!players.isEmpty, "a presenter needs a player")
        self.players = players
        self.output = output
        self.trace = trace
        self.logger = logger.with(["output": output.name])
        self.exitAfter = exitAfter
        traceNames = players.count == 1 ? [output.name] : players.indices.map { "\(output.name)#\($0)" }
        videoOutputs = try zip(players, traceNames).map { player, name in
            try PlayerVideoOutput(player: player, refresh: output.clock.refresh, name: name)
        }
        for player in players { player.trace = trace }
    }

    /// Presents until `shouldContinue` says no, `exitAfter` of presentation time has passed, or
    /// (with `stopWhenEmpty`) every player's queue has played out and the background is shown.
    public func run(stopWhenEmpty: Bool = false, while shouldContinue: () -> Bool) throws -> PresentationStats {
        let clock = output.clock
        // A virtual clock waits as long as decoding takes; a real one only about one vsync.
        let wait = clock is VirtualVsyncClock ? 10 : max(0.002, clock.refresh.interval.seconds)
        var last: Int64 = -1
        // Per player: nil before its first picture, then whether it shows no video.
        var showingBlank = [Bool?](repeating: nil, count: players.count)
        // Each vsync's pictures, the players whose picture changed, and the frames to draw: made
        // once and refilled, so that no vsync allocates.
        var pictures: [Player.Picture] = [], changed: [Int] = [], frames: [Output.Frame?] = []
        pictures.reserveCapacity(players.count)
        changed.reserveCapacity(players.count)
        frames.reserveCapacity(players.count)
        defer { trace?.flush() }
        while shouldContinue() {
            let n = clock.earliestVsync(after: last)
            if let exitAfter, clock.time(ofVsync: n) >= exitAfter { break }
            try onVsync?(n)
            pictures.removeAll(keepingCapacity: true)
            changed.removeAll(keepingCapacity: true)
            for (i, videoOutput) in videoOutputs.enumerated() {
                let picture = videoOutput.picture(forVsync: n, waitingUpTo: wait)
                pictures.append(picture)
                if picture.isNew || showingBlank[i] == nil || (picture.frame == nil && showingBlank[i] == false) { changed.append(i) }
            }
            guard !changed.isEmpty else {
                // Nothing new for vsync n: wait only for the vsync before it, so that the next
                // picture (for n + 1) is drawn during a whole vsync interval and not just the
                // last one. Without a new picture the loop still runs at the display's rate.
                try clock.wait(forVsync: n - 1)
                last = n
                continue
            }
            frames.removeAll(keepingCapacity: true)
            for picture in pictures {
                guard let frame = picture.frame else { frames.append(nil); continue }
                if let drawable = frame as? Output.Frame {
                    frames.append(drawable)
                } else {
                    logger.error("frame of the wrong type for this output; skipped", ["type": "\(type(of: frame))"])
                    frames.append(nil)
                }
            }
            for i in changed { if frames[i] != nil, let item = pictures[i].item { willPresent?(i, item) } }
            let shown = frames.count == 1 ? try output.present(frames[0], atVsync: n) : try output.present(mosaic: frames, atVsync: n)
            for i in changed {
                if frames[i] != nil, let item = pictures[i].item, let presentable = pictures[i].frame {
                    trace?.frame(vsync: shown, t: clock.time(ofVsync: shown), output: traceNames[i], item: item.traceIndex,
                                 uri: item.asset.url.path, pts: presentable.pts,
                                 wall: clock.wallTime(ofVsync: shown)?.unixSeconds ?? Date().timeIntervalSince1970)
                    didPresent?(i, shown, pictures[i])
                    showingBlank[i] = false
                } else {
                    if showingBlank[i] != true { trace?.blank(vsync: shown, t: clock.time(ofVsync: shown), output: traceNames[i]) }
                    showingBlank[i] = true
                }
            }
            if shown > n { for videoOutput in videoOutputs { videoOutput.didShow(onVsync: shown) } }
            last = shown
            if stopWhenEmpty && players.allSatisfy({ $0.currentItem == nil }) && showingBlank.allSatisfy({ $0 == true }) { break }
        }
        return player.stats
    }
}
