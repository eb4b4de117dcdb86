import Foundation

/// The item queue and its runs: replacing and seeking items, starting and ending the run of
/// the current item (its decode thread, `ItemFeeder`), and the next items' prerolls.
extension Player {
    // MARK: Items

    /// Makes `item` the current item at once (for a queue player: in place of the current item).
    /// Passing the current item does nothing.
    public func replaceCurrentItem(with item: PlayerItem?) throws {
        try locked { outbox in
            if item === queue.first { return }
            if let item, let owner = item.owner, owner !== self { throw PlayerError.itemInAnotherPlayer }
            if let old = queue.first {
                stopCurrentRunLocked(reason: "stop", &outbox)
                queue.removeFirst()
                old.owner = nil
                old.preroll?.stop()
                old.preroll = nil
            }
            if let item {
                queue.removeAll { $0 === item }
                queue.insert(item, at: 0)
                item.owner = self
                item.attached(to: self)
            }
            if !isQueuePlayer { queue = Array(queue.prefix(1)) }
            currentItemChangedLocked(&outbox)
        }
    }

    /// The current run ends now (replaced, removed): its thread stops, the trace says why, and an
    /// unfinished seek finishes with false once the lock is let go.
    func stopCurrentRunLocked(reason: String, error: (any Error)? = nil, _ outbox: inout Outbox) {
        if let run {
            run.feeder.stop()
            traceFile("end-file", item: run.item, reason: reason, error: error)
            if let completion = run.seek?.completion { outbox.add { completion(false) } }
            run.seek = nil
        }
        pausedPosition = currentPositionLocked()
        anchor = nil
        run = nil
        pending = nil
        endStallLocked()
    }

    /// Frames come again (or the run they were awaited for is gone).
    func endStallLocked() {
        pullState.endStall()
    }

    /// After the current item changed by an API call: the new item starts where time is now.
    func currentItemChangedLocked(_ outbox: inout Outbox) {
        if run == nil || run?.item !== queue.first {
            if let run { run.feeder.stop() }
            run = nil
            pending = nil
            pausedPosition = currentPositionLocked()
            anchor = nil
            endStallLocked()
        }
        if queue.first == nil { shown = nil }
        primerExpiry = nil
        wakeLocked()
        if _status == .unknown && queue.first != nil {
            _status = .readyToPlay
            changeBroadcast.send(.status(.readyToPlay))
        }
        changeBroadcast.send(.currentItem(queue.first))
        lastObserved = nil
        updateTimeControlLocked()
        fireJumpLocked(&outbox)
    }


    // MARK: Seeking

    /// Moves the current item's time to `time`, landing within [time - before, time + after]
    /// (zero / zero: the exact frame). Completes with true once the frame there is shown, or false
    /// when a newer seek (or an item change) came first.
    public func seek(to time: MediaTime, toleranceBefore: MediaTime = .zero, toleranceAfter: MediaTime = .zero,
                     completion: @escaping @Sendable (Bool) -> Void) {
        locked { outbox in
            guard let item = queue.first, time.isValid else {
                outbox.add { completion(false) }
                return
            }
            seekLocked(item: item, SeekRequest(target: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completion: completion), &outbox)
        }
    }

    @discardableResult
    public func seek(to time: MediaTime, toleranceBefore: MediaTime = .zero, toleranceAfter: MediaTime = .zero) async -> Bool {
        await awaitCallback { done in seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completion: done) }
    }

    /// An item-level seek: on the current item a seek; on a queued item, where it will start.
    func seek(item: PlayerItem, to time: MediaTime, toleranceBefore: MediaTime, toleranceAfter: MediaTime,
              completion: @escaping @Sendable (Bool) -> Void) {
        locked { outbox in
            let request = SeekRequest(target: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completion: completion)
            if item === queue.first {
                seekLocked(item: item, request, &outbox)
            } else if queue.contains(where: { $0 === item }) {
                if let old = item.pendingStart?.completion { outbox.add { old(false) } }
                item.pendingStart = (time, toleranceBefore, completion)
                item.preroll?.stop()
                item.preroll = nil
            } else {
                outbox.add { completion(false) }
            }
        }
    }

    func seekLocked(item: PlayerItem, _ request: SeekRequest, _ outbox: inout Outbox) {
        // A newer seek finishes every unfinished older one with false.
        if let old = run?.seek?.completion { outbox.add { old(false) } }
        if let old = item.pendingStart?.completion { outbox.add { old(false) } }
        item.pendingStart = nil
        var target = request.target
        let duration = item.duration
        if target < .zero { target = .zero }
        if duration.isNumeric && target > duration { target = duration }
        let position = currentPositionLocked()
        run?.feeder.stop()
        pending = nil
        // Back to the start: the frames decoded there near the end (a seamless loop).
        let feeder = takePrimerLocked(item, target: target)
            ?? makeFeeder(item, start: target, toleranceBefore: request.toleranceBefore)
        if queue.count > 1, let next = queue[1].preroll { feeder.handDecoder(to: next) }  // from the stopped feeder
        let newRun = Run(item: item, feeder: feeder, start: position)
        newRun.seek = SeekRequest(target: target, toleranceBefore: request.toleranceBefore,
                                  toleranceAfter: request.toleranceAfter, completion: request.completion)
        run = newRun
        pausedPosition = position
        anchor = nil
        endStallLocked()
        lastObserved = nil
        wakeLocked()
        post(.timeJumped, item: item)
    }

    /// Seconds past its end after which a frame that was decoded too late is dropped rather than
    /// shown (when nothing newer is ready, a frame a little late is better than none).
    static let lateLimit = 0.25

    /// How many frames the next item's decode thread decodes before the item plays: its first
    /// picture is ready when due, and the playing item's last frames (the one shown, the next,
    /// the queue's) leave its own decoder time to open and catch up (`ItemFeeder.handDecoder(to:)`).
    static let prerollAhead = 1

    func makeFeeder(_ item: PlayerItem, start: MediaTime, toleranceBefore: MediaTime, capacity: Int? = nil, parks: Bool = false) -> ItemFeeder {
        let feeder = ItemFeeder(asset: item.asset, start: start, toleranceBefore: toleranceBefore,
                                end: item.forwardPlaybackEndTime, capacity: capacity ?? decodeAhead, name: item.asset.url.lastPathComponent,
                                drops: decoderDrops, threads: decodeThreads, parks: parks, source: { try item.source() })
        feeder.start(logger: logger)
        return feeder
    }

    // MARK: Runs

    /// The item of the current run has ended at timeline position `end`. Returns true when
    /// playback goes on with the next item within this vsync.
    func endRunLocked(at end: MediaTime, error: (any Error)?, vsync n: Int64, _ outbox: inout Outbox) -> Bool {
        guard let current = run else { return false }
        let item = current.item
        current.feeder.stop()
        current.ended = true
        if let completion = current.seek?.completion { outbox.add { completion(false) } }
        current.seek = nil
        if let error {
            item.fail(error)
            post(.failedToPlayToEndTime(error), item: item)
            traceFile("end-file", item: item, reason: "error", error: error, vsync: n)
        } else {
            post(.didPlayToEndTime, item: item)
            traceFile("end-file", item: item, reason: "eof", error: nil, vsync: n)
        }
        if current.shownFrames == 0 { emptyRuns += 1 }
        switch _actionAtItemEnd {
        case .advance:
            queue.removeFirst()
            item.owner = nil
            item.preroll?.stop()
            item.preroll = nil
            for looper in loopers { looper.looper?.itemLeftLocked(item, &outbox) }
            passOverSlowOpensLocked(&outbox)
            run = nil
            pending = nil
            changeBroadcast.send(.currentItem(queue.first))
            lastObserved = nil
            if emptyRuns > queue.count + 1 {
                // Nothing in the queue can be played: show the background, try again in a second.
                emptyRuns = 0
                if let refresh { pullState.retry(at: n + max(1, refresh.numerator / refresh.denominator)) }
                logger.warning("nothing playable; retrying in 1 s", ["items": "\(queue.count)"])
                return false
            }
            guard let next = queue.first else {
                updateTimeControlLocked()
                return false
            }
            // The next item starts on the vsync its first frame is shown on (where `end` rounds
            // to), so its cadence runs from a vsync as the display shows it: the same pattern on
            // every pass, and timestamps rounded to milliseconds never put two frames on one vsync.
            startRunLocked(next, at: vsyncStartLocked(end))
            fireJumpLocked(&outbox)
            return true
        case .pause:
            pausedPosition = end
            anchor = nil
            tracePauseLocked(from: _rate, to: 0)
            _rate = 0
            changeBroadcast.send(.rate(0))
            updateTimeControlLocked()
            fireJumpLocked(&outbox)
            openSeamLocked(n, item: item)
            return false
        case .none:
            openSeamLocked(n, item: item)
            return false  // the last frame stays; time keeps running
        }
    }

    /// The timeline position of the vsync `t` is shown on (`t` itself without an output).
    func vsyncStartLocked(_ t: MediaTime) -> MediaTime {
        let v = vsyncOf(t)
        guard anchor != nil, _rate == 1, v != .max, v != .min else { return t }
        return position(atVsync: v)
    }

    func ensureRunLocked(at position: MediaTime) {
        guard run == nil, let item = queue.first else { return }
        if !item.isAttachedLoading { item.attached(to: self) }
        startRunLocked(item, at: position)
    }

    func startRunLocked(_ item: PlayerItem, at position: MediaTime) {
        let start = item.pendingStart
        item.pendingStart = nil
        let feeder = item.preroll ?? makeFeeder(item, start: start?.time ?? .zero, toleranceBefore: start?.toleranceBefore ?? .zero)
        feeder.setAhead(decodeAhead)  // a preroll decoded only its first frames
        item.preroll = nil
        let newRun = Run(item: item, feeder: feeder, start: position)
        if let start {
            newRun.seek = SeekRequest(target: start.time, toleranceBefore: start.toleranceBefore, toleranceAfter: .zero, completion: start.completion)
        }
        run = newRun
        pending = nil
        traceStartLocked()
    }

    /// The current run's start-file line, once: when it starts, or on the first vsync the player
    /// has a trace for it.
    func traceStartLocked() {
        guard let run, !run.startTraced, _trace != nil else { return }
        run.startTraced = true
        traceFile("start-file", item: run.item, reason: nil, error: nil)
    }

    /// The next item's decode thread starts while the current item plays (and the one after it
    /// too when the next one is known to have failed): once the current item's first frame is
    /// shown, so that it does not compete with that frame for the CPU, and its queue holds no more
    /// than it may once playing (the first frames queued before the start whatever their size,
    /// `ItemFeeder.startFrames`, have been shown down to that: big frames), so that the preroll's
    /// decoder does not add its memory to theirs.
    func startPrerollsLocked() {
        if let run, !run.ended, run.item.status != .failed, !run.feeder.hasFailed, !isSlowOpenLocked(run.item),
           run.shownFrames == 0 || run.feeder.queue.count > run.feeder.queue.capacity { return }
        var index = 1
        while index < queue.count && index <= 3 {
            let item = queue[index]
            if item.preroll == nil {
                if sourceHeldAheadLocked(of: item, before: index) { break }
                // Only its first frames until it plays (the queue holds its ready event too):
                // enough to start without a gap, and the memory of one queue, not two. The next
                // item's decoder then closes until the current item's has gone (`parks`).
                let parks = index == 1 && run != nil
                let preroll = makeFeeder(item, start: item.pendingStart?.time ?? .zero,
                                         toleranceBefore: item.pendingStart?.toleranceBefore ?? .zero,
                                         capacity: min(decodeAhead, Self.prerollAhead) + 1, parks: parks)
                if parks { run?.feeder.handDecoder(to: preroll) }
                item.preroll = preroll
            }
            guard item.status == .failed || item.preroll?.hasFailed == true || isSlowOpenLocked(item) else { break }
            index += 1
        }
    }

    /// Whether `item`'s source takes one reader at a time (`MediaBackend.opensOneAtATime`) and an
    /// item ahead of it still has it open or opening: a second reader would find its UDP port bound
    /// or take the camera's other session, so it opens once the one ahead has gone.
    func sourceHeldAheadLocked(of item: PlayerItem, before index: Int) -> Bool {
        let url = item.asset.url
        guard item.asset.backend.opensOneAtATime(url) else { return false }
        if let run, run.item !== item, !run.ended, run.item.asset.url == url, run.item.status != .failed, !run.feeder.hasFailed { return true }
        return queue[..<index].contains { ahead in
            ahead !== item && ahead !== run?.item && ahead.asset.url == url && ahead.status != .failed
                && ahead.preroll.map { !$0.hasFailed } == true
        }
    }

    /// Whether `item`'s file has been opening for `slowOpenLimit` (times `factor`) or more. Never
    /// on a clock that waits for decoding (a virtual clock): it waits for an open too, so which
    /// items play never depends on the machine's speed.
    func isSlowOpenLocked(_ item: PlayerItem, factor: Double = 1) -> Bool {
        guard let limit = _slowOpenLimit, !clockWaitsForDecoding, let opening = item.asset.openingFor else { return false }
        return opening >= limit * factor
    }

    /// A run that has shown nothing yet (playback's start, a jump to an item) whose file is still
    /// opening is passed over as one at its turn is; true when it was. It is given six times the
    /// limit (3 s for the kiosk's): at the start every item's probe runs at once, and on a loaded
    /// machine a local file may well take half a second.
    func passOverSlowRunLocked(_ outbox: inout Outbox) -> Bool {
        guard let current = run, current.shownFrames == 0, current.item === queue.first,
              isSlowOpenLocked(current.item, factor: 6), queue.count >= 2 else { return false }
        passOverSlowOpensLocked(&outbox)
        guard queue.first !== current.item else { return false }
        current.feeder.stop()
        traceFile("end-file", item: current.item, reason: "passed over", error: nil)
        run = nil
        pending = nil
        endStallLocked()
        changeBroadcast.send(.currentItem(queue.first))
        lastObserved = nil
        return true
    }

    /// The items at the head of the queue whose file is still opening (`slowOpenLimit`)
    /// leave it while an item behind them can play instead.
    func passOverSlowOpensLocked(_ outbox: inout Outbox) {
        while queue.count >= 2, isSlowOpenLocked(queue[0]),
              queue.dropFirst().contains(where: { !isSlowOpenLocked($0) && $0.status != .failed
                  && !($0.asset.url == queue[0].asset.url && $0.asset.backend.opensOneAtATime($0.asset.url)) }) {
            let item = queue.removeFirst()
            let url = item.asset.url
            logger.warning("item still opening at its turn; passed over", [
                "uri": url.mediaLocation,
                "opening": "\((item.asset.openingFor ?? 0).formatted(decimals: 1)) s"])
            item.owner = nil
            item.preroll?.stop()
            item.preroll = nil
            for looper in loopers { looper.looper?.itemLeftLocked(item, &outbox) }
        }
    }
}
