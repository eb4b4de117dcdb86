import Foundation

/// The presentation loop of one output: owns all of its timing. Each round it reads the output's
/// clock for the next vsync a picture can make, plans when to draw for it from the measured
/// render times (`FramePlanner`), asks each player for that vsync's picture (never waiting under a
/// player's lock), draws it when it changed, queues it for its vsync, and waits for the output to
/// say it is on screen. It is the only place that waits: on the output's events
/// (`OutputDriver.waitForEvent`) until a deadline, or, while a due frame is being decoded, on that
/// decode thread until the moment drawing must start (on a virtual clock, which waits for
/// decoding, up to `decodeWaitLimit`). Runs on the output's thread (its GL context lives there).
///
/// A mosaic output shows several players at once (one per region): each vsync asks every player
/// for its picture, and when any changes the output draws all of them (in the order of `players`).
public final class PlayerPresenter<Output: OutputDriver> {
    /// The first player (the only one, except on a mosaic).
    public var player: Player { players[0] }
    public let players: [Player]
    public let output: Output
    public let videoOutputs: [PlayerVideoOutput]
    public var videoOutput: PlayerVideoOutput { videoOutputs[0] }
    /// When to draw, from the output's render times (used where the output measures them).
    public var planner = FramePlanner()
    /// How long a queued picture may take to reach the screen before the loop gives up with a
    /// `WaitTimeout` (a display output reports its own loss sooner).
    public var flipTimeout = 5.0
    /// On a virtual clock (which waits for decoding), how long one vsync waits in all for a frame
    /// being decoded before the picture stays as it is.
    public var decodeWaitLimit = 10.0
    /// How long one wait for a display lasts before `shouldContinue` is asked again.
    public var displayWaitSlice = 0.5
    /// While every player is settled (paused, or with nothing to play), how long the loop waits
    /// for one to change before it runs again (`onVsync`, `shouldContinue`).
    public var idleSlice = 0.25
    private let trace: TraceWriter?
    private let logger: Logger
    private let exitAfter: MediaTime?
    /// The trace's name of each player's pictures: the output's, or with several players the
    /// output's and the player's number (`headless-0#1`).
    private let traceNames: [String]
    /// The last vsync presented: where `run` goes on from (a later `run`, or another presenter on
    /// the same output, starts after it, so that vsync numbers only go forward).
    public var lastVsync: Int64 = -1
    /// Called on the presentation thread once per vsync, before its picture is asked for: the
    /// place for work that must run on the output's thread (screenshots) and for liveness pings.
    public var onVsync: ((Int64) throws -> Void)?
    /// Asked once per vsync, after `onVsync`: true when the output's picture must be drawn again
    /// for it although no player's picture changed (an overlay changed: a clock's text).
    public var needsRedraw: ((Int64) -> Bool)?
    /// Called instead, each time round while the output is not ready (no display, or in standby).
    public var onIdle: (() throws -> Void)?
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
            try PlayerVideoOutput(player: player, refresh: output.clock.refresh, name: name, clockWaitsForDecoding: output.clock.isVirtual)
        }
        for player in players { player.trace = trace }
    }

    /// Presents until `shouldContinue` says no, `exitAfter` of presentation time has passed, or
    /// (with `stopWhenEmpty`) every player's queue has played out and the background is shown.
    public func run(stopWhenEmpty: Bool = false, while shouldContinue: () -> Bool) throws -> PresentationStats {
        let clock = output.clock
        var last = lastVsync
        defer { lastVsync = last }
        // Per player: nil before its first picture, then whether it shows no video.
        var showingBlank = [Bool?](repeating: nil, count: players.count)
        // Each vsync's pictures, the players whose picture changed, and the frames to draw: made
        // once and refilled, so that no vsync allocates.
        var pictures: [Player.Picture] = [], changed: [Int] = [], frames: [Output.Frame?] = []
        var mixes: [FrameMix<Output.Frame>?] = []
        pictures.reserveCapacity(players.count)
        changed.reserveCapacity(players.count)
        frames.reserveCapacity(players.count)
        // Lanes whose new picture was drawn but lost with the display: still to be reported.
        var unreported: [Int] = []
        // The output lost what it showed (a new display): draw even if nothing changed.
        var redraw = false
        defer { trace?.flush() }
        while shouldContinue() {
            guard output.isReady else {
                // No display: wait for one. The players are not asked meanwhile, so decoding
                // stays paused and the timeline resumes where it stopped.
                _ = try output.waitForEvent(timeout: displayWaitSlice)
                try onIdle?()
                redraw = true
                planner.reset()
                continue
            }
            let earliest = clock.earliestVsync(after: last)
            if let exitAfter, clock.time(ofVsync: earliest) >= exitAfter { break }
            var n = earliest
            if let plan = planner.plan(earliest: earliest, nanosUntil: clock.nanosUntilVsync) {
                n = plan.vsync
                if n > earliest { output.noteRescheduled(by: n - earliest) }
                let offset = plan.startIn - (clock.nanosUntilVsync(n - 1) ?? 0)
                guard try idle(until: { clock.nanosUntilVsync(n - 1).map { $0 + offset } }) else {
                    lost(vsync: n, &last, &redraw)
                    continue
                }
            }
            try onVsync?(n)
            if needsRedraw?(n) == true { redraw = true }
            pictures.removeAll(keepingCapacity: true)
            changed.removeAll(keepingCapacity: true)
            for videoOutput in videoOutputs { pictures.append(videoOutput.picture(forVsync: n, waited: 0)) }
            awaitDecoding(forVsync: n, &pictures)
            // A player still waiting for its first frame has nothing to show yet (its region keeps
            // the background, and no blank is reported for it).
            for (i, picture) in pictures.enumerated()
            where picture.isNew || picture.isNewMix || (showingBlank[i] == nil && !picture.isWaiting) || (picture.frame == nil && showingBlank[i] == false)
                || unreported.contains(i) {
                changed.append(i)
            }
            guard !changed.isEmpty || redraw else {
                // Nothing new for vsync n: wait only until the vsync before it, so that the next
                // picture (for n + 1) is drawn during a whole vsync interval and not just the
                // last one. Without a new picture the loop still runs at the display's rate,
                // unless every player is settled (paused, or with nothing to play): then it waits
                // for one to change, in slices of `idleSlice` (a virtual clock would otherwise
                // run through vsyncs as fast as it can, a real one wake every vsync for nothing).
                if waitWhileSettled() {
                    // Still settled after a whole slice: the output's own events (a display lost
                    // or changed) are read once per slice.
                    if case .lost = try output.waitForEvent(timeout: 0) {
                        lost(vsync: n, &last, &redraw)
                        continue
                    }
                    last = n
                    continue
                }
                guard try idle(until: { clock.nanosUntilVsync(n - 1) }) else {
                    lost(vsync: n, &last, &redraw)
                    continue
                }
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
            if pictures.contains(where: { $0.mix != nil }) {
                // A transition: each lane's frame mixed with the other picture and the background.
                mixes.removeAll(keepingCapacity: true)
                for picture in pictures {
                    mixes.append(picture.mix.map { mix in
                        FrameMix(other: mix.other as? Output.Frame, otherWeight: Float(mix.otherWeight), frameWeight: Float(mix.frameWeight))
                    })
                }
                try output.draw(frames, mixes: mixes)
            } else {
                try output.draw(frames)
            }
            let rendered = output.lastRenderTime
            // The flip is queued `commitPhase` into the interval before vsync n: queued earlier it
            // could land on an earlier vsync.
            let phase = Int64((clock.refresh.interval.seconds * 1e9 * planner.commitPhase).rounded())
            guard try idle(until: { clock.nanosUntilVsync(n - 1).map { $0 + phase } }) else {
                unreported = changed
                lost(vsync: n, &last, &redraw)
                continue
            }
            try output.queue(forVsync: n)
            guard let shown = try awaitFlip(forVsync: n) else {
                unreported = changed
                lost(vsync: n, &last, &redraw)
                continue
            }
            if let rendered { planner.record(renderNanoseconds: rendered) }
            redraw = false
            unreported.removeAll()
            for i in changed {
                if frames[i] != nil, let item = pictures[i].item, let presentable = pictures[i].frame {
                    trace?.frame(vsync: shown, t: clock.time(ofVsync: shown), output: traceNames[i], item: item.traceIndex,
                                 uri: item.asset.url.mediaLocation, pts: presentable.pts,
                                 wall: clock.wallTime(ofVsync: shown)?.unixSeconds ?? Date().timeIntervalSince1970,
                                 late: pictures[i].startsTimeline ? 0 : pictures[i].dueVsync.map { max(0, shown - $0) } ?? 0, mix: pictures[i].mix)
                    if !pictures[i].isNewMix { didPresent?(i, shown, pictures[i]) }
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

    /// Waits up to `idleSlice` while every player is settled: nothing they show can change until
    /// an API call; returns at once when one changes. True when all of them stayed settled.
    private func waitWhileSettled() -> Bool {
        let slice = idleSlice / Double(players.count)
        for player in players where player.waitWhileSettled(timeout: slice) { return false }
        return true
    }

    /// The display went away with the picture for vsync `n`: the next picture (for `n` or
    /// later: the players were asked for `n` already) is drawn whatever changed, and the render
    /// times of the old display no longer count.
    private func lost(vsync n: Int64, _ last: inout Int64, _ redraw: inout Bool) {
        last = max(last, n - 1)
        redraw = true
        planner.reset()
    }

    /// Players whose due frame is still being decoded are asked again once it is (the others keep
    /// their answer): on a real clock until the last moment drawing can start and still make vsync
    /// `n` (the render estimate and the planner's margin before it), on a virtual one up to
    /// `decodeWaitLimit`. The wait is on the decode thread's queue, never under
    /// a player's lock; past it the picture stays as it is.
    private func awaitDecoding(forVsync n: Int64, _ pictures: inout [Player.Picture]) {
        guard pictures.contains(where: \.isWaiting) else { return }
        let clock = output.clock
        let start = ContinuousClock.now
        var asked = start
        let margin = clock.refresh.interval.seconds * planner.margin
        let render = Double(planner.estimate ?? 0) / 1e9
        let virtual = clock.isVirtual
        while let lane = pictures.firstIndex(where: \.isWaiting) {
            let left: Double
            if virtual {
                left = decodeWaitLimit - (ContinuousClock.now - start).seconds
            } else if let until = clock.nanosUntilVsync(n) {
                // Until the last moment rendering can start and still make vsync n.
                left = Double(until) / 1e9 - margin - render
            } else {
                // A display clock before its first flip: about one vsync.
                left = clock.refresh.interval.seconds - (ContinuousClock.now - start).seconds
            }
            // Never past `decodeWaitLimit` of real time either (a clock whose time moves only
            // while the output waits).
            let bounded = min(left, decodeWaitLimit - (ContinuousClock.now - start).seconds)
            guard bounded > 0 else { return }
            _ = videoOutputs[lane].waitForDecodedFrame(timeout: min(bounded, 0.5))
            let now = ContinuousClock.now
            let waited = (now - asked).seconds
            asked = now
            for i in pictures.indices where pictures[i].isWaiting {
                pictures[i] = videoOutputs[i].picture(forVsync: n, waited: waited)
            }
        }
    }

    /// Waits on the output's events until `nanosUntil()` (read again after each event) is no
    /// longer positive; false when the display was lost meanwhile. Refuses a moment more than
    /// 10 s ahead.
    private func idle(until nanosUntil: () -> Int64?) throws -> Bool {
        var rounds = 0
        // Under 50 µs is not worth a wait (and a clock whose time moves only while something waits
        // could not reach it).
        while let left = nanosUntil(), left > 50_000, rounds < 100_000 {
            rounds += 1
            if left > 10_000_000_000 {
                throw WaitTimeout(waitingFor: "a moment more than 10 s ahead on the clock of \(output.name)", seconds: 10)
            }
            if case .lost = try output.waitForEvent(timeout: Double(left) / 1e9) { return false }
        }
        return true
    }

    /// Waits for the picture queued for vsync `n` to be on screen; returns the vsync it was shown
    /// on (not before `n`), or nil when the display was lost with it.
    private func awaitFlip(forVsync n: Int64) throws -> Int64? {
        var waited = 0.0
        while waited < flipTimeout {
            let slice = min(0.5, flipTimeout - waited)
            switch try output.waitForEvent(timeout: slice) {
            case .flipped(let vsync): return max(vsync, n)
            case .lost: return nil
            case .timedOut: waited += slice
            }
        }
        throw WaitTimeout(waitingFor: "the picture queued for vsync \(n) on \(output.name) to be shown", seconds: flipTimeout)
    }
}
