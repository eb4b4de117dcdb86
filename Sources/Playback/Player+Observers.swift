import Foundation

/// Time observers, item notifications and the trace's start-file / end-file lines.
extension Player {
    // MARK: Time observers

    /// Calls `block` every `interval` of item time while playing, and once on every play, pause,
    /// seek and item change. Callbacks come in the order of the changes that made them, on `queue`,
    /// or (nil) on the player's callback thread (`player-observers`: one per player, one callback at
    /// a time, never the thread that pulls the vsyncs).
    public func addPeriodicTimeObserver(forInterval interval: MediaTime, queue: DispatchQueue? = nil,
                                        using block: @escaping @Sendable (MediaTime) -> Void) throws -> TimeObserverToken {
        guard interval.isNumeric, interval > .zero else { throw PlayerError.nonPositiveInterval }
        return addObserver(.periodic(interval: interval, callback: block), queue: queue)
    }

    /// Calls `block` when normal playback crosses one of `times`; a seek that jumps over a time never
    /// calls it. On `queue`, or (nil) on the player's callback thread, in order, as periodic ones.
    public func addBoundaryTimeObserver(forTimes times: [MediaTime], queue: DispatchQueue? = nil,
                                        using block: @escaping @Sendable () -> Void) throws -> TimeObserverToken {
        guard !times.isEmpty else { throw PlayerError.emptyBoundaryTimes }
        return addObserver(.boundary(times: times.sorted(), callback: block), queue: queue)
    }

    func addObserver(_ kind: TimeObserver.Kind, queue: DispatchQueue?) -> TimeObserverToken {
        withLock {
            nextObserverID += 1
            let token = TimeObserverToken(id: nextObserverID, player: ObjectIdentifier(self))
            let observer = TimeObserver(token: token, kind: kind, queue: queue, callbacks: callbackThread)
            if case .periodic(let interval, _) = kind, let time = itemTimeLocked() {
                observer.lastSlot = slot(time, interval)
            }
            observers[token.id] = observer
            return token
        }
    }

    /// After this returns no new callback of the observer starts (one in progress is waited for).
    public func removeTimeObserver(_ token: TimeObserverToken) throws {
        guard token.player == ObjectIdentifier(self) else { throw PlayerError.tokenOfAnotherPlayer }
        let observer = withLock { observers.removeValue(forKey: token.id) }
        observer?.deactivate()
    }

    /// Marquee: waits up to `timeout` seconds until the callbacks of time observers without a
    /// queue that were due when this was called have run on the player's callback thread (what a
    /// test checks after driving vsyncs by hand). False when some had not by then.
    @discardableResult
    public func waitForTimeObserverCallbacks(timeout: Double = 10) -> Bool {
        callbackThread.waitUntilDone(timeout: timeout)
    }

    func slot(_ time: MediaTime, _ interval: MediaTime) -> Int64 {
        let ratio = (time.seconds / interval.seconds)
        return ratio.isFinite ? Int64((ratio + 1e-9).rounded(.down)) : 0
    }

    /// Time jumped or playback started or stopped: every periodic observer fires once.
    func fireJumpLocked(_ outbox: inout Outbox) {
        let time = itemTimeLocked() ?? .zero
        for observer in observers.values {
            guard case .periodic(let interval, _) = observer.kind else { continue }
            observer.lastSlot = slot(time, interval)
            observer.firePeriodic(time)  // queued now, in the order of the changes
        }
    }

    func fireProgressLocked(_ outbox: inout Outbox) {
        guard _rate != 0, let run, let now = itemTimeLocked() else { return }
        let runID = run.serial
        let previous = lastObserved.flatMap { $0.run == runID ? $0.time : nil }
        lastObserved = (runID, now)
        for observer in observers.values {
            switch observer.kind {
            case .periodic(let interval, _):
                let s = slot(now, interval)
                if s != observer.lastSlot {
                    observer.lastSlot = s
                    observer.firePeriodic(now)
                }
            case .boundary(let times, _):
                guard let previous, now > previous else { continue }
                for time in times where previous < time && time <= now {
                    observer.fireBoundary(at: now)
                }
            }
        }
    }


    // MARK: Notifications and trace

    func post(_ event: PlayerItem.Event, item: PlayerItem) {
        item.post(event)
        eventBroadcast.send(Event(item: item, event: event))
    }

    func traceFile(_ name: String, item: PlayerItem, reason: String?, error: (any Error)?, vsync: Int64? = nil) {
        guard let trace = _trace else { return }
        let v = vsync ?? lastVsync ?? 0
        let t = traceSeconds(ofVsync: v)
        var line = "{\"type\":\"event\",\"event\":\"\(name)\",\"item\":\(item.traceIndex),\"uri\":\(jsonStringLiteral(item.asset.url.mediaLocation)),\"output\":\(jsonStringLiteral(outputName)),\"vsync\":\(v),\"t\":\(t.formatted(decimals: 6))"
        if let reason { line += ",\"reason\":\"\(reason)\"" }
        if let error { line += ",\"error\":\(jsonStringLiteral("\(error)"))" }
        trace.event(line + "}")
    }

    /// A `pause` or `unpause` line when the rate goes to or from 0, on the last vsync asked for (a
    /// picture pulled before it may still be drawn, and its frame line come after this one).
    func tracePauseLocked(from old: Float, to new: Float) {
        guard let trace = _trace, (old == 0) != (new == 0) else { return }
        let v = lastVsync ?? 0
        let t = traceSeconds(ofVsync: v)
        trace.event("{\"type\":\"event\",\"event\":\"\(new == 0 ? "pause" : "unpause")\",\"output\":\(jsonStringLiteral(outputName)),\"vsync\":\(v),\"t\":\(t.formatted(decimals: 6))}")
    }

    /// The timeline time of vsync `v` as trace lines give it (`t`).
    private func traceSeconds(ofVsync v: Int64) -> Double {
        refresh.map { MediaTime(value: v * $0.denominator, timescale: Int32(clamping: $0.numerator)).seconds } ?? 0
    }

    func itemStatusChanged(_ item: PlayerItem) {}
}
