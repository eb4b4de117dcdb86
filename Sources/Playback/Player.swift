import Foundation

/// Plays items on a timeline paced by a display's vsyncs (`AVPlayer`).
///
/// The display drives time: its `PlayerVideoOutput` asks, once per vsync, which frame to show on
/// that vsync (`picture(forVsync:)`). Items are laid end to end on one timeline, and each frame is
/// given the vsync `round(t * refresh)` of its timeline time `t` (`CadenceScheduler`), so the
/// cadence is exact and item changes and loops are gapless. Decoding runs on a thread per item
/// into a bounded queue; the next item's thread starts while the current item plays.
///
/// The timeline keeps the presentation clock: a frame that cannot be shown on its vsync (a later
/// frame is due by then) is dropped and counted, and when decoding falls behind the clock the
/// decoder skips frames (`DecoderFrameDrop`). Only a stall, no frame decoded at all for
/// `stallTimeout`, holds the timeline until frames come again (`playbackStalled`).
///
/// API calls are safe from any thread. Time observer callbacks and seek completions run on the
/// thread that pulls the vsync (or on the observer's queue when one is given), never with the
/// player's lock held. A player nobody pulls does not advance.
public class Player: @unchecked Sendable {
    // @unchecked: every mutable property is guarded by `lock`.
    public enum Status: Sendable, Equatable { case unknown, readyToPlay, failed }
    public enum TimeControlStatus: Sendable, Equatable { case paused, waitingToPlayAtSpecifiedRate, playing }
    public enum WaitingReason: Sendable, Equatable { case toMinimizeStalls, evaluatingBufferingRate, noItemToPlay }
    public enum ActionAtItemEnd: Sendable, Equatable { case advance, pause, none }

    /// A change of an observable property, with its new value.
    public enum Change: Sendable {
        case status(Status)
        case rate(Float)
        case currentItem(PlayerItem?)
        case timeControlStatus(TimeControlStatus, WaitingReason?)
    }

    /// An item's notification, as the player's stream of them shows it.
    public struct Event: Sendable {
        public let item: PlayerItem
        public let event: PlayerItem.Event
    }

    // MARK: State (all guarded by `lock`)

    /// Guards the player's state; held only while it is read or changed, never across a wait.
    private let lock = Monitor(())
    let isQueuePlayer: Bool
    let logger: Logger
    let decodeAhead: Int
    var queue: [PlayerItem] = []
    private var _status = Status.unknown
    private var _error: (any Error)?
    private var _rate: Float = 0
    private var _defaultRate: Float = 1
    private var _timeControl = TimeControlStatus.paused
    private var _waitingReason: WaitingReason?
    var _actionAtItemEnd: ActionAtItemEnd
    private var _automaticallyWaits = true
    private var observers: [Int: TimeObserver] = [:]
    private var nextObserverID = 0
    private var _trace: TraceWriter?
    var outputName = "output"
    var hasVideoOutput = false
    private let changeBroadcast = Broadcast<Change>()
    private let eventBroadcast = Broadcast<Event>()
    var loopers: [WeakLooper] = []

    // Timeline.
    var refresh: RefreshRate?
    private var scheduler: CadenceScheduler?
    private var lastVsync: Int64?
    /// Timeline position `position` is at vsync `vsync`; nil while paused.
    private var anchor: (vsync: Int64, position: MediaTime)?
    private var pausedPosition = MediaTime.zero
    private var run: Run?
    private var pending: Pending?
    private var shown: Shown?
    private var hostStartVsync: Int64?
    private var hostStartTime: MediaTime?
    private var emptyRuns = 0
    private var retryAtVsync: Int64?
    private var stalled = false
    /// The vsync whose picture waits for a frame being decoded (it may be asked for again).
    private var waitingVsync: Int64?
    /// The first vsync the picture was due to change with no frame decoded, and how long pulls
    /// have waited for one since; nil while frames come.
    private var starved: (since: Int64, waited: Double)?
    /// Where the timeline stands while stalled.
    private var stallPosition = MediaTime.zero
    private var _stallTimeout = 2.0
    /// True from the start of playback until its first frame is shown: the timeline waits for it
    /// (initial loading is not a stall).
    private var holdingStart = false
    /// Of the recent frames, the share dropped because they were late (an average over about ten
    /// frames): what tells the decoder that presentation cannot keep up.
    private var lateDropRate = 0.0
    /// Frames skipped by the decoders of this player's items (their feeders count).
    let decoderDrops = DropCounter()
    private var lastObserved: (run: ObjectIdentifier, time: MediaTime)?
    private var _stats = PresentationStats()

    /// One stretch of one item on the timeline: from its start (or a seek's target) to its end.
    final class Run {
        let item: PlayerItem
        let feeder: ItemFeeder
        /// Timeline position where the run begins.
        let start: MediaTime
        /// Item time at `start` (where the seek landed); nil until the first frame arrives.
        var origin: MediaTime?
        var lastEnd = MediaTime.zero
        var frames = 0
        var shownFrames = 0
        var ended = false
        var seek: SeekRequest?
        init(item: PlayerItem, feeder: ItemFeeder, start: MediaTime) {
            self.item = item
            self.feeder = feeder
            self.start = start
        }
    }

    struct SeekRequest {
        let target: MediaTime
        let toleranceBefore: MediaTime
        let toleranceAfter: MediaTime
        let completion: (@Sendable (Bool) -> Void)?
    }

    private enum Pending {
        case frame(any PresentableFrame, t: MediaTime)
        case end(at: MediaTime, error: (any Error)?)
    }

    private struct Shown {
        let frame: any PresentableFrame
        let run: Run
        var item: PlayerItem { run.item }
        let t: MediaTime
        let vsync: Int64
    }

    /// Work to do once the lock is released: callbacks never run under it.
    struct Outbox {
        var actions: [() -> Void] = []
        mutating func add(_ action: @escaping () -> Void) { actions.append(action) }
        func run() { for action in actions { action() } }
    }

    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try lock.withLock { (_: inout ()) throws(E) -> R in try body() }
    }

    func locked<R, E: Error>(_ body: (inout Outbox) throws(E) -> R) throws(E) -> R {
        var outbox = Outbox()
        defer { outbox.run() }   // after the lock is released
        return try lock.withLock { (_: inout ()) throws(E) -> R in try body(&outbox) }
    }

    // MARK: Creating

    /// - Parameters:
    ///   - logger: the process's logger.
    ///   - decodeAhead: how many frames each item's decode thread may run ahead (fewer when its
    ///     frames are big: at most 32 MB of them, and at least 2).
    public convenience init(logger: Logger = Logger(level: .error), decodeAhead: Int = 6) {
        self.init(isQueuePlayer: false, logger: logger, decodeAhead: decodeAhead)
    }

    public convenience init(item: PlayerItem?, logger: Logger = Logger(level: .error)) throws {
        self.init(logger: logger)
        try replaceCurrentItem(with: item)
    }

    init(isQueuePlayer: Bool, logger: Logger, decodeAhead: Int) {
        self.isQueuePlayer = isQueuePlayer
        self.logger = logger
        self.decodeAhead = max(1, decodeAhead)
        _actionAtItemEnd = isQueuePlayer ? .advance : .pause
    }

    deinit {
        run?.feeder.stop()
        for item in queue { item.preroll?.stop() }
        changeBroadcast.finish()
        eventBroadcast.finish()
    }

    // MARK: Observable properties

    public var status: Status { withLock { _status } }
    public var error: (any Error)? { withLock { _error } }
    public var currentItem: PlayerItem? { withLock { queue.first } }
    public var timeControlStatus: TimeControlStatus { withLock { _timeControl } }
    /// Why the player waits; nil unless `timeControlStatus == .waitingToPlayAtSpecifiedRate`.
    public var reasonForWaitingToPlay: WaitingReason? { withLock { _waitingReason } }
    public var stats: PresentationStats {
        withLock {
            var stats = _stats
            stats.decoderDropped = decoderDrops.count
            return stats
        }
    }

    /// True while playback is stalled: no frame has been decoded for `stallTimeout` and the
    /// timeline waits (also `timeControlStatus == .waitingToPlayAtSpecifiedRate`, and the item's
    /// `playbackStalled` event when it began).
    public var isStalled: Bool { withLock { stalled } }

    /// Seconds without any decoded frame, while the picture on screen is due to change, after
    /// which playback counts as stalled and the timeline waits (default 2). Frames that come late
    /// but come are not a stall: they are dropped, and the timeline keeps the clock.
    public var stallTimeout: Double {
        get { withLock { _stallTimeout } }
        set { withLock { _stallTimeout = newValue.isFinite ? max(0, newValue) : 2 } }
    }

    /// Every change of status, rate, currentItem and timeControlStatus from now on.
    public func changes() -> AsyncStream<Change> { changeBroadcast.stream() }
    /// Every item's notifications, from now on.
    public func events() -> AsyncStream<Event> { eventBroadcast.stream() }

    /// Waits up to `timeout` seconds for the decode threads of every player in the process to end
    /// (after `removeAllItems()`, or once the items have played out), so that a process exits
    /// with no decoder running. Returns how many were still running (0: all ended).
    public static func waitForDecodeThreadsToEnd(timeout: Double) -> Int {
        ItemFeeder.running.waitForNone(timeout: timeout)
    }

    /// 0 is paused; setting another value plays at that rate.
    public var rate: Float {
        get { withLock { _rate } }
        set { locked { setRateLocked(newValue, &$0) } }
    }

    /// The rate `play()` uses (1.0).
    public var defaultRate: Float {
        get { withLock { _defaultRate } }
        set { withLock { _defaultRate = newValue } }
    }

    public var automaticallyWaitsToMinimizeStalling: Bool {
        get { withLock { _automaticallyWaits } }
        set { withLock { _automaticallyWaits = newValue } }
    }

    public var actionAtItemEnd: ActionAtItemEnd { withLock { _actionAtItemEnd } }

    /// `.advance` is for queue players only.
    public func setActionAtItemEnd(_ action: ActionAtItemEnd) throws {
        guard action != .advance || isQueuePlayer else { throw PlayerError.advanceNeedsAQueuePlayer }
        withLock { _actionAtItemEnd = action }
    }

    /// Marquee: where start-file / end-file event lines go.
    public var trace: TraceWriter? {
        get { withLock { _trace } }
        set { withLock { _trace = newValue } }
    }

    public func play() { locked { setRateLocked(_defaultRate, &$0) } }
    public func pause() { locked { setRateLocked(0, &$0) } }

    /// The current item's time at the last vsync.
    public func currentTime() -> MediaTime { withLock { itemTimeLocked() ?? .zero } }

    func currentTime(of item: PlayerItem) -> MediaTime? {
        withLock {
            if item === queue.first { return itemTimeLocked() }
            return item.pendingStart?.time ?? (queue.contains { $0 === item } ? .zero : nil)
        }
    }

    // MARK: Items

    /// Makes `item` the current item at once (for a queue player: in place of the current item).
    /// Passing the current item does nothing.
    public func replaceCurrentItem(with item: PlayerItem?) throws {
        try locked { outbox in
            if item === queue.first { return }
            if let item, let owner = item.owner, owner !== self { throw PlayerError.itemInAnotherPlayer }
            if let old = queue.first {
                stopCurrentRunLocked(reason: "stop")
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

    /// The current run ends now (replaced, removed): its thread stops, the trace says why.
    func stopCurrentRunLocked(reason: String, error: (any Error)? = nil) {
        if let run {
            run.feeder.stop()
            traceFile("end-file", item: run.item, reason: reason, error: error)
            run.seek?.completion.map { c in DispatchQueue.global().async { c(false) } }
        }
        pausedPosition = currentPositionLocked()
        anchor = nil
        run = nil
        pending = nil
        endStallLocked()
    }

    /// Frames come again (or the run they were awaited for is gone).
    private func endStallLocked() {
        starved = nil
        stalled = false
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
        if _status == .unknown && queue.first != nil {
            _status = .readyToPlay
            changeBroadcast.send(.status(.readyToPlay))
        }
        changeBroadcast.send(.currentItem(queue.first))
        lastObserved = nil
        updateTimeControlLocked()
        fireJumpLocked(&outbox)
    }

    // MARK: Rate

    private func setRateLocked(_ newRate: Float, _ outbox: inout Outbox) {
        let old = _rate
        guard newRate != old || hostStartVsync != nil else { return }
        if old != 0 || anchor != nil { pausedPosition = currentPositionLocked() }
        anchor = nil
        hostStartVsync = nil
        hostStartTime = nil
        _rate = newRate
        changeBroadcast.send(.rate(newRate))
        updateTimeControlLocked()
        fireJumpLocked(&outbox)
    }

    /// Plays at `rate` so that item time `time` is shown at host time `hostTime` (the display
    /// clock's time: vsync n is at n / refresh). Invalid `time`: from the current time; invalid
    /// `hostTime`: at the next vsync.
    /// Marquee: moves every frame still to come by `vsyncs` (positive: later, so the picture on
    /// screen is shown one vsync longer; negative: sooner, so one vsync is skipped). This is how a
    /// wall keeps a display whose clock runs slightly fast or slow on the shared timeline.
    public func shiftTimeline(byVsyncs vsyncs: Int64) {
        locked { _ in
            if let a = anchor { anchor = (a.vsync + vsyncs, a.position) }
        }
    }

    public func setRate(_ rate: Float, time: MediaTime, atHostTime hostTime: MediaTime) throws {
        try locked { outbox in
            guard !_automaticallyWaits else { throw PlayerError.setRateWhileWaitingToMinimizeStalls }
            if time.isNumeric, let item = queue.first {
                seekLocked(item: item, SeekRequest(target: time, toleranceBefore: .zero, toleranceAfter: .zero, completion: nil), &outbox)
            }
            setRateLocked(rate, &outbox)
            if hostTime.isNumeric && rate != 0 { hostStartTime = hostTime }
        }
    }

    private func updateTimeControlLocked() {
        let (status, reason): (TimeControlStatus, WaitingReason?)
        if _rate == 0 {
            (status, reason) = (.paused, nil)
        } else if queue.isEmpty {
            (status, reason) = (.waitingToPlayAtSpecifiedRate, .noItemToPlay)
        } else if _automaticallyWaits && (stalled || (!showingRunLocked && !hasDecodedFrameLocked())) {
            (status, reason) = (.waitingToPlayAtSpecifiedRate, .toMinimizeStalls)
        } else {
            (status, reason) = (.playing, nil)
        }
        if status != _timeControl || reason != _waitingReason {
            _timeControl = status
            _waitingReason = reason
            changeBroadcast.send(.timeControlStatus(status, reason))
        }
    }

    /// True while the current run has frames on screen: playback is under way, whether or not the
    /// next frame has been decoded yet.
    private var showingRunLocked: Bool { (run?.shownFrames ?? 0) > 0 }

    private func hasDecodedFrameLocked() -> Bool {
        ensureRunLocked(at: currentPositionLocked())
        guard let run else { return false }
        if run.ended { return true }
        return peekLocked() != nil
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

    public func seek(to time: MediaTime, toleranceBefore: MediaTime = .zero, toleranceAfter: MediaTime = .zero) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter) { continuation.resume(returning: $0) }
        }
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

    private func seekLocked(item: PlayerItem, _ request: SeekRequest, _ outbox: inout Outbox) {
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
        let feeder = makeFeeder(item, start: target, toleranceBefore: request.toleranceBefore)
        let newRun = Run(item: item, feeder: feeder, start: position)
        newRun.seek = SeekRequest(target: target, toleranceBefore: request.toleranceBefore,
                                  toleranceAfter: request.toleranceAfter, completion: request.completion)
        run = newRun
        pausedPosition = position
        anchor = nil
        endStallLocked()
        lastObserved = nil
        post(.timeJumped, item: item)
    }

    /// Seconds past its end after which a frame that was decoded too late is dropped rather than
    /// shown (when nothing newer is ready, a frame a little late is better than none).
    static let lateLimit = 0.25

    /// How many frames the next item's decode thread decodes before the item plays.
    static let prerollAhead = 2

    private func makeFeeder(_ item: PlayerItem, start: MediaTime, toleranceBefore: MediaTime, capacity: Int? = nil) -> ItemFeeder {
        let feeder = ItemFeeder(asset: item.asset, start: start, toleranceBefore: toleranceBefore,
                                end: item.forwardPlaybackEndTime, capacity: capacity ?? decodeAhead, name: item.asset.url.lastPathComponent,
                                drops: decoderDrops)
        feeder.start(logger: logger)
        return feeder
    }

    // MARK: Time observers

    /// Calls `block` every `interval` of item time while playing, and once on every play, pause,
    /// seek and item change. nil `queue`: on the thread that drives the vsyncs (or makes the change).
    public func addPeriodicTimeObserver(forInterval interval: MediaTime, queue: DispatchQueue? = nil,
                                        using block: @escaping @Sendable (MediaTime) -> Void) throws -> TimeObserverToken {
        guard interval.isNumeric, interval > .zero else { throw PlayerError.nonPositiveInterval }
        return addObserver(.periodic(interval: interval, callback: block), queue: queue)
    }

    /// Calls `block` when normal playback crosses one of `times`; a seek that jumps over a time never
    /// calls it.
    public func addBoundaryTimeObserver(forTimes times: [MediaTime], queue: DispatchQueue? = nil,
                                        using block: @escaping @Sendable () -> Void) throws -> TimeObserverToken {
        guard !times.isEmpty else { throw PlayerError.emptyBoundaryTimes }
        return addObserver(.boundary(times: times.sorted(), callback: block), queue: queue)
    }

    private func addObserver(_ kind: TimeObserver.Kind, queue: DispatchQueue?) -> TimeObserverToken {
        withLock {
            nextObserverID += 1
            let token = TimeObserverToken(id: nextObserverID, player: ObjectIdentifier(self))
            let observer = TimeObserver(token: token, kind: kind, queue: queue)
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

    private func slot(_ time: MediaTime, _ interval: MediaTime) -> Int64 {
        let ratio = (time.seconds / interval.seconds)
        return ratio.isFinite ? Int64((ratio + 1e-9).rounded(.down)) : 0
    }

    /// Time jumped or playback started or stopped: every periodic observer fires once.
    private func fireJumpLocked(_ outbox: inout Outbox) {
        let time = itemTimeLocked() ?? .zero
        for observer in observers.values {
            guard case .periodic(let interval, _) = observer.kind else { continue }
            observer.lastSlot = slot(time, interval)
            outbox.add { observer.firePeriodic(time) }
        }
    }

    private func fireProgressLocked(_ outbox: inout Outbox) {
        guard _rate != 0, let run, let now = itemTimeLocked() else { return }
        let runID = ObjectIdentifier(run)
        let previous = lastObserved.flatMap { $0.run == runID ? $0.time : nil }
        lastObserved = (runID, now)
        for observer in observers.values {
            switch observer.kind {
            case .periodic(let interval, _):
                let s = slot(now, interval)
                if s != observer.lastSlot {
                    observer.lastSlot = s
                    outbox.add { observer.firePeriodic(now) }
                }
            case .boundary(let times, _):
                guard let previous, now > previous else { continue }
                for time in times where previous < time && time <= now {
                    outbox.add { observer.fireBoundary() }
                }
            }
        }
    }

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
    }

    func attachOutput(refresh: RefreshRate, name: String) throws {
        try withLock {
            guard !hasVideoOutput else { throw PlayerError.secondVideoOutput }
            hasVideoOutput = true
            self.refresh = refresh
            scheduler = CadenceScheduler(refresh: refresh)
            outputName = name
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
        let queue: FrameQueue<FeedEvent>? = withLock {
            guard pending == nil, let run, !run.ended else { return nil }
            return run.feeder.queue
        }
        guard let queue else { return true }
        return queue.waitForElement(timeout: timeout)
    }

    /// The output showed the last picture on vsync `actual`, later than asked. The timeline keeps
    /// the clock: the frames due meanwhile are dropped at the next pull.
    func didShow(onVsync actual: Int64) {
        withLock {
            guard let last = lastVsync, actual > last else { return }
            _stats.delayed += 1
            lastVsync = actual
            _stats.lastVsync = actual
        }
    }

    private func currentPicture(isNew: Bool, waiting: Bool = false) -> Picture {
        Picture(frame: shown?.frame, item: shown?.item, isNew: isNew, itemTime: itemTimeLocked() ?? .zero, isWaiting: waiting)
    }

    private func pullLocked(_ n: Int64, waited: Double, _ outbox: inout Outbox) -> Picture {
        // A vsync is asked once, or again while its picture waits for a frame being decoded.
        if let last = lastVsync, n < last || (n == last && waitingVsync != n) { return currentPicture(isNew: false) }
        waitingVsync = nil
        let hadPicture = shown != nil
        lastVsync = n
        _stats.lastVsync = n
        if let retry = retryAtVsync {
            if n < retry { return currentPicture(isNew: false) }
            retryAtVsync = nil
        }
        ensureRunLocked(at: pausedPositionOrNow(n))
        startPrerollsLocked()
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
                    show(frame, t: t, vsync: n, run: run, &outbox)
                    return currentPicture(isNew: true)
                }
                if next == nil {
                    waitingVsync = n
                    return currentPicture(isNew: false, waiting: true)
                }
            }
            return currentPicture(isNew: false)
        }
        if anchor == nil {
            // Playback starts (play, seek, a new item by an API call): the timeline starts with
            // the first frame, unless it was told a host time to start at.
            holdingStart = hostStartVsync == nil
            anchor = (hostStartVsync ?? n, pausedPosition)
            hostStartVsync = nil
        }
        if holdingStart, let a = anchor {
            anchor = (n, a.position)
            if peekLocked() != nil { holdingStart = false }  // it starts now
        } else if stalled {
            // A stall holds the timeline where the missing frame belongs.
            anchor = (n, stallPosition)
        }

        var selected: (frame: any PresentableFrame, t: MediaTime, vsync: Int64, run: Run)?
        var steps = 0
        loop: while steps < 100_000, let current = run, !current.ended {
            steps += 1
            let next = peekLocked()
            if next == nil {
                // Nothing decoded yet: only a wait when the picture on screen has had its time.
                if let s = selected ?? shown.map({ ($0.frame, $0.t, $0.vsync, $0.run) }),
                   s.run === current, vsyncOf(s.t + s.frame.duration) > n { break loop }
                if selected == nil {
                    if !holdingStart { starvingLocked(n, waited: waited, run: current, &outbox) }
                    waitingVsync = n
                }
                break loop
            }
            starved = nil
            switch next! {
            case .frame(let frame, let t):
                let due = vsyncOf(t)
                if due > n { break loop }
                if let s = selected {
                    // A later frame is due by now: `s` cannot be shown on a vsync of its own.
                    _stats.dropped += 1
                    noteDropLocked(late: s.vsync < due)
                }
                pending = nil
                selected = (frame, t, due, current)
            case .end(let end, let error):
                if vsyncOf(end) > n { break loop }
                pending = nil
                endStallLocked()
                if !endRunLocked(at: end, error: error, vsync: n, &outbox) {
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
            show(s.frame, t: s.t, vsync: n, run: s.run, &outbox)
        } else if run == nil && queue.isEmpty {
            shown = nil
            return currentPicture(isNew: hadPicture)
        }
        reportClockLocked(n)
        fireProgressLocked(&outbox)
        return currentPicture(isNew: selected != nil, waiting: waitingVsync == n)
    }

    /// No frame for vsync `n` although the picture on screen has had its time. Past
    /// `stallTimeout` (counted in vsyncs, or in time waited for a clock that waits for decoding)
    /// playback is stalled: the timeline waits at the missing frame's place, and it is reported.
    private func starvingLocked(_ n: Int64, waited: Double, run current: Run, _ outbox: inout Outbox) {
        let since = starved?.since ?? n
        let total = (starved?.waited ?? 0) + waited
        starved = (since, total)
        guard !stalled, let refresh else { return }
        let vsyncs = Double(n - since + 1) / refresh.hertz
        guard max(vsyncs, total) >= _stallTimeout else { return }
        stalled = true
        _stats.stalls += 1
        // The missing frame starts where the one on screen ends (or where the run starts).
        if let s = shown, s.run === current {
            stallPosition = s.t + s.frame.duration
        } else {
            stallPosition = position(atVsync: since)
        }
        anchor = (n, stallPosition)
        post(.playbackStalled, item: current.item)
        logger.warning("playback stalled", ["item": "\(current.item.traceIndex)", "vsync": "\(n)",
                                            "seconds": max(vsyncs, total).formatted(decimals: 3)])
        updateTimeControlLocked()
        fireJumpLocked(&outbox)
    }

    /// Counts a frame taken from the queue into the recent share of late drops.
    private func noteDropLocked(late: Bool) {
        lateDropRate = lateDropRate * 0.9 + (late ? 0.1 : 0)
    }

    /// Tells the current run's decoder where the clock is, so that it skips frames when behind.
    private func reportClockLocked(_ n: Int64) {
        guard let run else { return }
        guard _rate != 0, !stalled, anchor != nil else {
            run.feeder.report(clock: nil, lateDropRate: 0)
            return
        }
        let base = run.origin ?? run.seek?.target ?? .zero
        let elapsed = position(atVsync: n) - run.start
        run.feeder.report(clock: base + elapsed, lateDropRate: lateDropRate)
    }

    private func show(_ frame: any PresentableFrame, t: MediaTime, vsync n: Int64, run: Run, _ outbox: inout Outbox) {
        shown = Shown(frame: frame, run: run, t: t, vsync: n)
        run.shownFrames += 1
        _stats.presented += 1
        emptyRuns = 0
        holdingStart = false
        if stalled { logger.info("playback resumed", ["item": "\(run.item.traceIndex)", "vsync": "\(n)"]) }
        endStallLocked()
        if _rate != 0 { updateTimeControlLocked() }
        if run.shownFrames == 1 {
            if let seek = run.seek {
                // The seek is done once its frame is on screen.
                if let completion = seek.completion { outbox.add { completion(true) } }
                run.seek = nil
                fireJumpLocked(&outbox)
            }
            lastObserved = (ObjectIdentifier(run), itemTimeLocked() ?? .zero)
        }
    }

    /// The item of the current run has ended at timeline position `end`. Returns true when
    /// playback goes on with the next item within this vsync.
    private func endRunLocked(at end: MediaTime, error: (any Error)?, vsync n: Int64, _ outbox: inout Outbox) -> Bool {
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
            run = nil
            pending = nil
            changeBroadcast.send(.currentItem(queue.first))
            lastObserved = nil
            if emptyRuns > queue.count + 1 {
                // Nothing in the queue can be played: show the background, try again in a second.
                emptyRuns = 0
                if let refresh { retryAtVsync = n + max(1, refresh.numerator / refresh.denominator) }
                logger.warning("nothing playable; retrying in 1 s", ["items": "\(queue.count)"])
                return false
            }
            guard let next = queue.first else {
                updateTimeControlLocked()
                return false
            }
            startRunLocked(next, at: end)
            fireJumpLocked(&outbox)
            return true
        case .pause:
            pausedPosition = end
            anchor = nil
            _rate = 0
            changeBroadcast.send(.rate(0))
            updateTimeControlLocked()
            fireJumpLocked(&outbox)
            return false
        case .none:
            return false  // the last frame stays; time keeps running
        }
    }

    private func ensureRunLocked(at position: MediaTime) {
        guard run == nil, let item = queue.first else { return }
        if !item.isAttachedLoading { item.attached(to: self) }
        startRunLocked(item, at: position)
    }

    private func startRunLocked(_ item: PlayerItem, at position: MediaTime) {
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
        traceFile("start-file", item: item, reason: nil, error: nil)
    }

    /// The next item's decode thread starts while the current item plays (and the one after it
    /// too when the next one is known to have failed): once the current item's first frame is
    /// shown, so that it does not compete with that frame for the CPU.
    private func startPrerollsLocked() {
        if let run, run.shownFrames == 0, !run.ended, run.item.status != .failed, !run.feeder.hasFailed { return }
        var index = 1
        while index < queue.count && index <= 3 {
            let item = queue[index]
            if item.preroll == nil {
                // Only its first frames until it plays: enough to start without a gap, and the
                // memory of one queue, not two.
                item.preroll = makeFeeder(item, start: item.pendingStart?.time ?? .zero,
                                          toleranceBefore: item.pendingStart?.toleranceBefore ?? .zero,
                                          capacity: min(decodeAhead, Self.prerollAhead))
            }
            guard item.status == .failed || item.preroll?.hasFailed == true else { break }
            index += 1
        }
    }

    /// The next decoded event of the current run, if the decode thread has one ready (never waits).
    private func peekLocked() -> Pending? {
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
    private func landing(of frame: any PresentableFrame, seek: SeekRequest?) -> MediaTime {
        guard let seek else { return frame.pts }
        let low = seek.target - seek.toleranceBefore, high = seek.target + seek.toleranceAfter
        return frame.pts >= low && frame.pts <= high ? frame.pts : seek.target
    }

    /// Timeline position where the run ends: its last frame's end (or `streamEnd`, where the
    /// decoder skipped the last frames), or the forward end time.
    private func endPosition(_ run: Run, streamEnd: MediaTime? = nil) -> MediaTime {
        guard run.frames > 0, let origin = run.origin else { return run.start }
        var end = run.lastEnd
        if let streamEnd, streamEnd.isNumeric, streamEnd > end { end = streamEnd }
        let fpet = run.item.forwardPlaybackEndTime
        if fpet.isNumeric && fpet < end { end = fpet }
        let length = end - origin
        return run.start + (length > .zero ? length : .zero)
    }

    // MARK: Time arithmetic

    private func vsyncOf(_ t: MediaTime) -> Int64 {
        guard let anchor, let scheduler else { return .max }
        let offset = t - anchor.position
        // A container's timestamps can put t anywhere: out of range is never due, and sums saturate.
        guard offset.isNumeric else { return .max }
        let steps = _rate == 1 ? scheduler.vsyncOffset(for: offset)
            : Int64(saturating: (offset.seconds * scheduler.refresh.hertz / Double(_rate)).rounded())
        let (sum, overflow) = anchor.vsync.addingReportingOverflow(steps)
        return overflow ? (steps > 0 ? .max : .min) : sum
    }

    private func position(atVsync n: Int64) -> MediaTime {
        guard let anchor, let refresh else { return pausedPosition }
        let elapsed = n - anchor.vsync
        if _rate == 1 { return anchor.position + refresh.interval * elapsed }
        return anchor.position + MediaTime(seconds: Double(elapsed) / refresh.hertz * Double(_rate), preferredTimescale: 90_000)
    }

    private func pausedPositionOrNow(_ n: Int64) -> MediaTime { anchor == nil ? pausedPosition : position(atVsync: n) }

    private func currentPositionLocked() -> MediaTime {
        guard let lastVsync else { return pausedPosition }
        return position(atVsync: lastVsync)
    }

    /// The current item's time at the last vsync.
    private func itemTimeLocked() -> MediaTime? {
        guard let run else { return queue.first?.pendingStart?.time ?? (queue.isEmpty ? nil : .zero) }
        guard let origin = run.origin, run.shownFrames > 0 else { return run.seek?.target ?? .zero }
        let elapsed = currentPositionLocked() - run.start
        return origin + (elapsed > .zero ? elapsed : .zero)
    }

    // MARK: Notifications and trace

    func post(_ event: PlayerItem.Event, item: PlayerItem) {
        item.post(event)
        eventBroadcast.send(Event(item: item, event: event))
    }

    private func traceFile(_ name: String, item: PlayerItem, reason: String?, error: (any Error)?, vsync: Int64? = nil) {
        guard let trace = _trace else { return }
        let v = vsync ?? lastVsync ?? 0
        let t = refresh.map { MediaTime(value: v * $0.denominator, timescale: Int32(clamping: $0.numerator)).seconds } ?? 0
        var line = "{\"type\":\"event\",\"event\":\"\(name)\",\"item\":\(item.traceIndex),\"uri\":\(jsonStringLiteral(item.asset.url.path)),\"output\":\(jsonStringLiteral(outputName)),\"vsync\":\(v),\"t\":\(t.formatted(decimals: 6))"
        if let reason { line += ",\"reason\":\"\(reason)\"" }
        if let error { line += ",\"error\":\(jsonStringLiteral("\(error)"))" }
        trace.event(line + "}")
    }

    func itemStatusChanged(_ item: PlayerItem) {}
}

/// A player's weak reference to a looper that keeps its queue filled.
struct WeakLooper {
    weak var looper: PlayerLooper?
}
