import Foundation

/// The vsync pull and the timeline: which frame each vsync shows (pure and non-blocking; the
/// presentation loop waits), drops, stalls, and the arithmetic from timeline time to vsyncs.
extension Player {
    // MARK: The vsync pull

    /// What to show on one vsync.
    public struct Picture: @unchecked Sendable {
        // @unchecked: the frame is handed to the presentation thread, which alone uses it.
        /// nil: no video (show the background).
        public let frame: (any PresentableFrame)?
        public let item: PlayerItem?
        /// True when the frame differs from the one shown on the previous vsync.
        public let isNew: Bool
        /// Item time of the frame.
        public let itemTime: MediaTime
        /// True when a frame is due on this vsync but not decoded yet: the picture stays, and asking
        /// again for the same vsync after waiting for decoding (`waitForDecodedFrame`) may give it.
        public var isWaiting = false
        /// During a transition: what the picture mixes with (Transition.swift).
        public var mix: PictureMix?
        /// True when only the mix changed (the same frame, new weights): drawn again, not a new frame.
        public var isNewMix = false
        /// The vsync the frame was due on, on this player's timeline: a picture shown on a later
        /// one is late by the difference (the trace's `late`).
        public var dueVsync: Int64?
        /// The vsync the picture was asked for: `itemTime` is the timeline's there (the output may
        /// show it on a later one).
        public var askedVsync: Int64?
        /// True when this picture starts the timeline (its first frame after a held start, or a
        /// frame shown while paused): shown on a later vsync than asked, it is not late; the
        /// timeline starts there (`didShow(onVsync:)`).
        public var startsTimeline = false
    }

    /// Returns the attachment's number, which `detachOutput` takes.
    func attachOutput(refresh: RefreshRate, name: String, clockWaitsForDecoding: Bool) throws -> Int {
        try withLock {
            guard !hasVideoOutput else { throw PlayerError.secondVideoOutput }
            hasVideoOutput = true
            self.clockWaitsForDecoding = clockWaitsForDecoding
            videoOutputSerial += 1
            self.refresh = refresh
            scheduler = CadenceScheduler(refresh: refresh)
            outputName = name
            return videoOutputSerial
        }
    }

    /// The output of attachment `serial` lets the player go: the timeline stops where it is (its
    /// vsync numbers were that output's) and goes on from there on the next output's vsyncs.
    func detachOutput(serial: Int) {
        withLock {
            guard hasVideoOutput, serial == videoOutputSerial else { return }
            hasVideoOutput = false
            pausedPosition = currentPositionLocked()
            anchor = nil
            lastVsync = nil
            pullState.detach()
            timelineStartVsync = nil
        }
    }

    /// The frame to show on vsync `n` (vsyncs only go forward; the same vsync may be asked again
    /// while its picture `isWaiting`). Never waits: a frame that is due but not decoded yet leaves
    /// the picture as it is and says so (`isWaiting`). `waited`: seconds the caller waited for
    /// decoding since it last asked for this vsync (what a clock that waits for decoding counts
    /// towards `stallTimeout`; after it without a frame the timeline waits, a stall, until
    /// frames come again).
    func picture(forVsync n: Int64, waited: Double) -> Picture {
        locked { outbox in pullLocked(n, waited: waited, &outbox) }
    }

    /// As `picture(forVsync:waited:)`, waiting up to `wait` seconds in all for a due frame that is
    /// still being decoded (between the questions, without the player's lock).
    func picture(forVsync n: Int64, wait: Double) -> Picture {
        let start = ContinuousClock.now
        var asked = start
        while true {
            let now = ContinuousClock.now
            let picture = picture(forVsync: n, waited: (now - asked).seconds)
            asked = now
            let left = wait - (now - start).seconds
            guard picture.isWaiting, left > 0 else { return picture }
            _ = waitForDecodedFrame(timeout: left)
        }
    }

    /// Waits up to `timeout` seconds for the current item's decode thread to have something for
    /// the next question (a frame, its end or its failure), without holding the player's lock;
    /// true when it has. Returns at once when nothing is being decoded.
    func waitForDecodedFrame(timeout: Double) -> Bool {
        enum Awaited { case nothing, frame(FrameQueue<FeedEvent>), seam(seen: UInt64, left: Double) }
        let awaited: Awaited = withLock {
            if pending == nil, let run, !run.ended { return .frame(run.feeder.queue) }
            // At an item's end: the end's handlers may seek back (Player+Seams).
            if let wait = seamWaitLocked() { return .seam(seen: wait.seen, left: wait.left) }
            return .nothing
        }
        switch awaited {
        case .nothing: return true
        case .frame(let queue): return queue.waitForElement(timeout: timeout)
        case .seam(let seen, let left):
            guard left > 0 else { return true }
            return waitForWake(after: seen, timeout: min(timeout, left)) || timeout >= left
        }
    }

    /// The output showed the last picture on vsync `actual`, later than asked. The timeline keeps
    /// the clock: the frames due meanwhile are dropped at the next pull.
    func didShow(onVsync actual: Int64) {
        withLock {
            guard let last = lastVsync, actual > last else { return }
            if timelineStartVsync == last {
                // The picture that starts the timeline (its first draw is the slowest): the
                // timeline starts where it was shown.
                timelineStartVsync = nil
                timelineShifts += 1
                if let a = anchor { anchor = (a.vsync + (actual - last), a.position) }
                shown?.vsync = actual
                shown?.due = actual
                lastVsync = actual
                _stats.lastVsync = actual
                return
            }
            _stats.delayed += 1
            lastVsync = actual
            _stats.lastVsync = actual
        }
    }

    func currentPicture(isNew: Bool, waiting: Bool = false, newMix: Bool = false) -> Picture {
        let mix = currentMix.flatMap { current in run?.serial == current.run && shown?.run === run ? current.mix : nil }
        return Picture(frame: shown?.frame, item: shown?.item, isNew: isNew, itemTime: itemTimeLocked() ?? .zero, isWaiting: waiting,
                       mix: mix, isNewMix: newMix && !isNew, dueVsync: shown?.due, askedVsync: lastVsync)
    }

    func pullLocked(_ n: Int64, waited: Double, _ outbox: inout Outbox) -> Picture {
        // A vsync is asked once, or again while its picture waits for a frame being decoded. The
        // vsync of an item's end waits for the end's handlers to seek back (Player+Seams).
        switch pullState.admit(n, last: lastVsync, now: .now, limit: Self.seamWaitLimit, plays: seamPlaysLocked, wake: wakeCount) {
        case .asked: return currentPicture(isNew: false)
        case .seamWaits: return currentPicture(isNew: false, waiting: true)
        case .pull: break
        }
        let hadPicture = shown != nil
        // The picture that started the timeline was shown on time (or `didShow` moved it).
        if let start = timelineStartVsync, n > start { timelineStartVsync = nil }
        lastVsync = n
        _stats.lastVsync = n
        expirePrimerLocked()
        if pullState.retryWaits(n) { return currentPicture(isNew: false) }
        ensureRunLocked(at: pausedPositionOrNow(n))
        if passOverSlowRunLocked(&outbox) { ensureRunLocked(at: pausedPositionOrNow(n)) }
        traceStartLocked()
        startPrerollsLocked()
        primeStartLocked()
        guard run != nil else {
            shown = nil
            return currentPicture(isNew: hadPicture)
        }

        // Waiting for a host time to start at.
        if let host = hostStartTime, let refresh {
            hostStartVsync = CadenceScheduler(refresh: refresh).vsyncOffset(for: host)
            hostStartTime = nil
        }
        let paused = _rate == 0 || (hostStartVsync.map { n < $0 } ?? false)
        if paused {
            // Show the first frame of a new run (a seek, a new item) even while paused.
            if let run, run.shownFrames == 0, !run.ended {
                let next = peekLocked()
                if case .frame(let frame, let t)? = next {
                    pending = nil
                    show(frame, t: t, vsync: n, due: n, run: run, &outbox)
                    timelineStartVsync = n
                    var picture = currentPicture(isNew: true)
                    picture.startsTimeline = true
                    return picture
                }
                if next == nil {
                    pullState.wait(n)
                    return currentPicture(isNew: false, waiting: true)
                }
            }
            return currentPicture(isNew: false)
        }
        if anchor == nil {
            // Playback starts (play, seek, a new item by an API call): the timeline starts with
            // the first frame, unless it was told a host time to start at.
            pullState.start(holds: hostStartVsync == nil)
            anchor = (hostStartVsync ?? n, pausedPosition)
            hostStartVsync = nil
        }
        // A frame shown on this vsync starts the timeline (the frame may come in after this look).
        var startsTimeline = false
        let nextFrameAt: () -> MediaTime? = { if case .frame(_, let t)? = self.peekLocked() { t } else { nil } }
        switch pullState.anchoring(frameReady: { peekLocked() != nil }, nextFrameAt: nextFrameAt) {
        case .runs: break
        case .startsHere:
            startsTimeline = true
            if let a = anchor { anchor = (n, a.position) }
        case .holds(let at):
            // A stall holds the timeline where the missing frame belongs.
            anchor = (n, at)
        case .movesOn(let to):
            // The frames come back later than that: the timeline (and the sound) goes on from the first.
            anchor = (n, to)
            timelineShifts += 1
        }

        var selected: (frame: any PresentableFrame, t: MediaTime, vsync: Int64, run: Run)?
        var steps = 0
        loop: while steps < 100_000, let current = run, !current.ended {
            steps += 1
            let next = peekLocked()
            if next == nil {
                if clockWaitsForDecoding, let s = selected, lookaheadLocked(n, waited: waited, selected: s, run: current) {
                    // The next frame may be due on this vsync as well: a clock that waits for
                    // decoding waits for it, so which frame a vsync shows never depends on how
                    // fast the decoder was.
                    selected = nil
                    pullState.wait(n)
                    break loop
                }
                // Nothing decoded yet: only a wait when the picture on screen has had its time
                // (by its duration, which may overlap the next frame's time: milliseconds in a
                // container). A clock that waits for decoding waits for the next frame anyway,
                // so that it is never found late at the vsync after.
                if !clockWaitsForDecoding, let s = selected ?? shown.map({ ($0.frame, $0.t, $0.vsync, $0.run) }),
                   s.run === current, vsyncOf(s.t + s.frame.duration) > n { break loop }
                if selected == nil {
                    if !pullState.isHoldingStart { starvingLocked(n, waited: waited, run: current, &outbox) }
                    pullState.wait(n)
                }
                break loop
            }
            pullState.decoded()
            switch next! {
            case .frame(let frame, let t):
                let due = vsyncOf(t)
                if due > n { break loop }
                if let s = selected {
                    // A later frame is due by now: `s` cannot be shown on a vsync of its own.
                    // Due on the same vsync as that frame it is the cadence's; on an earlier one, late.
                    if s.vsync < due { _stats.dropped += 1 } else { _stats.cadenceDropped += 1 }
                    noteDropLocked(late: s.vsync < due)
                }
                pending = nil
                selected = (frame, t, due, current)
            case .end(let end, let error):
                if vsyncOf(end) > n { break loop }
                pending = nil
                endStallLocked()
                let last = selected.map { ($0.frame, $0.run) } ?? shown.map { ($0.frame, $0.run) }
                let ended = endRunLocked(at: end, error: error, vsync: n, &outbox)
                if ended, let newRun = run, newRun !== current { enterLocked(newRun, after: current, last: last) }
                if !ended {
                    if selected == nil && run == nil {
                        shown = nil
                        return currentPicture(isNew: hadPicture)
                    }
                    break loop
                }
            }
        }

        if let s = selected, let refresh, shown != nil,
           Double(n - vsyncOf(s.t + s.frame.duration)) / refresh.hertz > Self.lateLimit {
            // Decoded so late that its time is long past: dropped rather than shown.
            _stats.dropped += 1
            noteDropLocked(late: true)
            selected = nil
        } else if let s = selected {
            // The timeline does not move for a late picture. One shown after its vsync (decoded
            // late, with nothing newer ready) counts as delayed.
            if s.vsync < n { _stats.delayed += 1 }
            noteDropLocked(late: false)
            show(s.frame, t: s.t, vsync: n, due: s.vsync, run: s.run, &outbox)
        } else if run == nil && queue.isEmpty {
            shown = nil
            return currentPicture(isNew: hadPicture)
        }
        // A picture that is new is not asked for again: a seam opened with it does not wait.
        if selected != nil { pullState.showsNew(n) }
        reportClockLocked(n)
        fireProgressLocked(&outbox)
        // A transition's weights change every vsync: the picture is drawn again with each.
        let previousMix = currentMix.flatMap { current in run?.serial == current.run ? current.mix : nil }
        let mix = mixLocked(n)
        currentMix = (mix != nil && run != nil) ? (run!.serial, mix!) : nil
        var picture = currentPicture(isNew: selected != nil, waiting: pullState.isWaiting(n), newMix: mix != previousMix)
        if startsTimeline && selected != nil {
            timelineStartVsync = n
            picture.startsTimeline = true
        }
        return picture
    }

    /// No frame for vsync `n` although the picture on screen has had its time. Past
    /// `stallTimeout` (counted in vsyncs, or in time waited for a clock that waits for decoding)
    /// playback is stalled: the timeline waits at the missing frame's place, and it is reported.
    func starvingLocked(_ n: Int64, waited: Double, run current: Run, _ outbox: inout Outbox) {
        let stall = pullState.starve(vsync: n, waited: waited, hertz: refresh?.hertz, timeout: _stallTimeout) { since in
            // The missing frame starts where the one on screen ends (or where the run starts).
            if let s = shown, s.run === current { return s.t + s.frame.duration }
            return position(atVsync: since)
        }
        guard let stall else { return }
        _stats.stalls += 1
        anchor = (n, stall.at)
        post(.playbackStalled, item: current.item)
        logger.warning("playback stalled", ["item": "\(current.item.traceIndex)", "vsync": "\(n)",
                                            "seconds": stall.seconds.formatted(decimals: 3)])
        updateTimeControlLocked()
        fireJumpLocked(&outbox)
    }

    /// On a clock that waits for decoding, with `selected` chosen for vsync `n` and the frame after
    /// it not decoded yet: true when the pull should wait for that frame, `selected` put back in
    /// line (or, from a run that just ended, dropped for the new run's first frame due on `n`).
    /// Waits at most `stallTimeout` for one frame, over however many vsyncs are asked meanwhile;
    /// past it `selected` is shown (a decoder that stopped is the stall check's).
    func lookaheadLocked(_ n: Int64, waited: Double, selected s: (frame: any PresentableFrame, t: MediaTime, vsync: Int64, run: Run),
                         run current: Run) -> Bool {
        let total = (lookahead?.t == s.t ? lookahead!.waited : 0) + waited
        lookahead = (s.t, total)
        guard total < _stallTimeout else { return false }
        if s.run === current {
            pending = .frame(s.frame, t: s.t)
            return true
        }
        // The new run's first frame starts where it does: on a later vsync `s` keeps this one.
        guard vsyncOf(current.start) <= n else { return false }
        _stats.cadenceDropped += 1
        noteDropLocked(late: false)
        return true
    }

    /// Counts a frame taken from the queue into the recent share of late drops.
    func noteDropLocked(late: Bool) {
        lateDropRate = lateDropRate * 0.9 + (late ? 0.1 : 0)
    }

    /// Tells the current run's decoder where the clock is, so that it skips frames when behind.
    func reportClockLocked(_ n: Int64) {
        guard let run else { return }
        // A clock that waits for decoding (a virtual one) is never behind it.
        guard _rate != 0, !pullState.isStalled, anchor != nil, !clockWaitsForDecoding, let refresh else {
            run.feeder.report(clock: nil, lateDropRate: 0)
            return
        }
        let base = run.origin ?? run.seek?.target ?? .zero
        let elapsed = position(atVsync: n) - run.start
        // Frames from half a vsync before vsync n's time on are due on n or later (the cadence
        // rounds): only a frame before that has missed its vsync.
        let halfVsync = MediaTime(value: refresh.denominator, timescale: Int32(clamping: 2 * refresh.numerator))
        run.feeder.report(clock: base + elapsed, missedBy: halfVsync, lateDropRate: lateDropRate)
    }

    func show(_ frame: any PresentableFrame, t: MediaTime, vsync n: Int64, due: Int64, run: Run, _ outbox: inout Outbox) {
        shown = Shown(frame: frame, run: run, t: t, vsync: n, due: due)
        run.shownFrames += 1
        _stats.presented += 1
        emptyRuns = 0
        if pullState.shown() { logger.info("playback resumed", ["item": "\(run.item.traceIndex)", "vsync": "\(n)"]) }
        if _rate != 0 { updateTimeControlLocked() }
        if run.shownFrames == 1 {
            if let seek = run.seek {
                // The seek is done once its frame is on screen.
                if let completion = seek.completion { outbox.add { completion(true) } }
                run.seek = nil
                fireJumpLocked(&outbox)
            }
            lastObserved = (run.serial, itemTimeLocked() ?? .zero)
        }
    }

    /// The next decoded event of the current run, if the decode thread has one ready (never waits).
    func peekLocked() -> Pending? {
        if let pending { return pending }
        guard let run, !run.ended else { return nil }
        while true {
            switch run.feeder.queue.pop(timeout: 0) {
            case .element(.ready(let description)):
                run.item.becomeReady(duration: description.duration, tracks: description.tracks)
            case .element(.frame(let frame)):
                if run.origin == nil {
                    run.origin = landing(of: frame, seek: run.seek)
                }
                let origin = run.origin!
                let fpet = run.item.forwardPlaybackEndTime
                if fpet.isNumeric && frame.pts >= fpet {
                    pending = .end(at: endPosition(run), error: nil)
                    return pending
                }
                run.frames += 1
                let frameEnd = frame.pts + frame.duration
                if frameEnd > run.lastEnd { run.lastEnd = frameEnd }
                let offset = frame.pts - origin
                pending = .frame(frame, t: run.start + (offset > .zero ? offset : .zero))
                return pending
            case .element(.end(let skippedTo)):
                pending = .end(at: endPosition(run, streamEnd: skippedTo), error: nil)
                return pending
            case .element(.failed(let error)):
                pending = .end(at: endPosition(run), error: error)
                return pending
            case .timedOut, .closed:
                return nil
            }
        }
    }

    /// Where a seek landed: the first frame's time when it is within the tolerances, else the target.
    func landing(of frame: any PresentableFrame, seek: SeekRequest?) -> MediaTime {
        guard let seek else { return frame.pts }
        let low = seek.target - seek.toleranceBefore, high = seek.target + seek.toleranceAfter
        return frame.pts >= low && frame.pts <= high ? frame.pts : seek.target
    }

    /// Timeline position where the run ends: its last frame's end (or `streamEnd`, where the
    /// decoder skipped the last frames), or the forward end time.
    func endPosition(_ run: Run, streamEnd: MediaTime? = nil) -> MediaTime {
        guard run.frames > 0, let origin = run.origin else { return run.start }
        var end = run.lastEnd
        if let streamEnd, streamEnd.isNumeric, streamEnd > end { end = streamEnd }
        let fpet = run.item.forwardPlaybackEndTime
        if fpet.isNumeric && fpet < end { end = fpet }
        let length = end - origin
        return run.start + (length > .zero ? length : .zero)
    }

    // MARK: Time arithmetic

    func vsyncOf(_ t: MediaTime) -> Int64 {
        guard let anchor, let scheduler else { return .max }
        let offset = t - anchor.position
        // A container's timestamps can put t anywhere: out of range is never due, and sums saturate.
        guard offset.isNumeric else { return .max }
        let steps = _rate == 1 ? scheduler.vsyncOffset(for: offset)
            : Int64(saturating: (offset.seconds * scheduler.refresh.hertz / Double(_rate)).rounded())
        let (sum, overflow) = anchor.vsync.addingReportingOverflow(steps)
        return overflow ? (steps > 0 ? .max : .min) : sum
    }

    func position(atVsync n: Int64) -> MediaTime {
        guard let anchor, let refresh else { return pausedPosition }
        let elapsed = n - anchor.vsync
        if _rate == 1 { return anchor.position + refresh.interval * elapsed }
        return anchor.position + MediaTime(seconds: Double(elapsed) / refresh.hertz * Double(_rate), preferredTimescale: 90_000)
    }

    func pausedPositionOrNow(_ n: Int64) -> MediaTime { anchor == nil ? pausedPosition : position(atVsync: n) }

    func currentPositionLocked() -> MediaTime {
        guard let lastVsync else { return pausedPosition }
        return position(atVsync: lastVsync)
    }

    /// The current item's time at the last vsync.
    func itemTimeLocked() -> MediaTime? {
        guard let run else { return queue.first?.pendingStart?.time ?? (queue.isEmpty ? nil : .zero) }
        guard let origin = run.origin, run.shownFrames > 0 else { return run.seek?.target ?? .zero }
        let elapsed = currentPositionLocked() - run.start
        var time = origin + (elapsed > .zero ? elapsed : .zero)
        // Time stops at the item's end (with `.none` the timeline runs on; the item's time does not).
        if run.ended {
            let length = endPosition(run) - run.start
            let end = origin + (length > .zero ? length : .zero)
            if time > end { time = end }
        }
        let duration = run.item.duration
        if duration.isNumeric && duration > .zero && time > duration { time = duration }
        return time
    }
}
