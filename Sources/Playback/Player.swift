import Foundation
import Synchronization

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
    let lock = Monitor(())
    let isQueuePlayer: Bool
    let logger: Logger
    let decodeAhead: Int
    var queue: [PlayerItem] = []
    var _status = Status.unknown
    var _error: (any Error)?
    var _rate: Float = 0
    var _defaultRate: Float = 1
    var _timeControl = TimeControlStatus.paused
    var _waitingReason: WaitingReason?
    var _actionAtItemEnd: ActionAtItemEnd
    var _automaticallyWaits = true
    var observers: [Int: TimeObserver] = [:]
    var nextObserverID = 0
    var _trace: TraceWriter?
    var outputName = "output"
    var hasVideoOutput = false
    /// Counts attachments of a video output (so that a detached output cannot detach its successor).
    var videoOutputSerial = 0
    /// Where time observers without a queue are called (in order, one at a time).
    let callbackThread = CallbackThread()
    let changeBroadcast = Broadcast<Change>()
    let eventBroadcast = Broadcast<Event>()
    let audioSettings = PlayerAudioSettings()
    var loopers: [WeakLooper] = []

    // Timeline.
    var refresh: RefreshRate?
    var scheduler: CadenceScheduler?
    /// The output's clock waits for each due frame to be decoded (a virtual clock): decoding is
    /// never behind it, so its decoder never skips.
    var clockWaitsForDecoding = false
    var lastVsync: Int64?
    /// Timeline position `position` is at vsync `vsync`; nil while paused.
    var anchor: (vsync: Int64, position: MediaTime)?
    var pausedPosition = MediaTime.zero
    var run: Run?
    var pending: Pending?
    var shown: Shown?
    var hostStartVsync: Int64?
    var hostStartTime: MediaTime?
    var emptyRuns = 0
    /// Held start, starving, stall; the vsync that waits, a seam, a retry (PullState.swift).
    var pullState = PullState()
    /// On a clock that waits for decoding: the timeline time of the frame put back to wait for the
    /// one after it (which may be due on the same vsync), and how long it has waited.
    var lookahead: (t: MediaTime, waited: Double)?
    var _stallTimeout = 2.0
    var _slowOpenLimit: Double?
    /// The vsync whose picture started the timeline (the first frame after a held start, or one
    /// shown while paused): if the output shows it later, the timeline starts there instead,
    /// so that picture is not late and the frames after it keep their cadence from it.
    var timelineStartVsync: Int64?
    /// Times `didShow` moved the timeline with a picture that started it, or a stall moved on to
    /// frames after a gap: sound already in place is put in place again (`PlayerAudioOutput`).
    var timelineShifts = 0
    /// Of the recent frames, the share dropped because they were late (an average over about ten
    /// frames): what tells the decoder that presentation cannot keep up.
    var lateDropRate = 0.0
    /// Frames skipped by the decoders of this player's items (their feeders count).
    let decoderDrops = DropCounter()
    var lastObserved: (run: Int, time: MediaTime)?
    var _stats = PresentationStats()

    // Seams and idleness (Player+Seams.swift).
    /// Goes up with every API call that can change the picture (a waiting presentation loop wakes).
    var wakeCount: UInt64 = 0
    /// When the current item's primed start (its `preroll`) stops unless a seek takes it.
    var primerExpiry: ContinuousClock.Instant?
    /// The decode threads of this player's items that have not ended yet.
    let decodeThreads = ItemFeeder.ThreadCount()

    // Transitions (Transition.swift).
    /// The mix of the picture shown last, with the run it belongs to.
    var currentMix: (run: Int, mix: PictureMix)?

    /// One stretch of one item on the timeline: from its start (or a seek's target) to its end.
    final class Run {
        /// Names this run for those that keep a run's name past its life (the sound's match, time
        /// observers, a mix): unlike `ObjectIdentifier`, never a later run's as well.
        let serial = Run.serials.add(1, ordering: .relaxed).newValue
        private static let serials = Atomic(0)
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
        /// Its start-file line is in the trace: a run that started before the player had a trace
        /// (`play()` before a view took the player) gets it on its first vsync.
        var startTraced = false
        /// The transition this run came in with, while it lasts (Transition.swift).
        var entering: Entering?
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

    enum Pending {
        case frame(any PresentableFrame, t: MediaTime)
        case end(at: MediaTime, error: (any Error)?)
    }

    struct Shown {
        let frame: any PresentableFrame
        let run: Run
        var item: PlayerItem { run.item }
        let t: MediaTime
        var vsync: Int64
        /// The vsync the frame was due on (earlier than `vsync` when it was decoded late).
        var due: Int64
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
        callbackThread.end()
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
    public var isStalled: Bool { withLock { pullState.isStalled } }

    /// Seconds without any decoded frame, while the picture on screen is due to change, after
    /// which playback counts as stalled and the timeline waits (default 2). Frames that come late
    /// but come are not a stall: they are dropped, and the timeline keeps the clock.
    public var stallTimeout: Double {
        get { withLock { _stallTimeout } }
        set { withLock { _stallTimeout = newValue.isFinite ? max(0, newValue) : 2 } }
    }

    /// Marquee: seconds after which an item whose file is still opening (a network source that
    /// accepts and never answers, storage that hangs) counts as slow: the item behind it is
    /// prerolled then, and if the slow one is still opening at its turn it is passed over (it
    /// leaves the queue; a looped playlist tries it again on its next pass, its open going on
    /// within its own limits) so that the next one plays on time. nil, the default, waits for
    /// the next item as AVQueuePlayer does, and so does a clock that waits for decoding. A local
    /// file opens in milliseconds: half a second passes over only what hangs.
    public var slowOpenLimit: Double? {
        get { withLock { _slowOpenLimit } }
        set { withLock { _slowOpenLimit = newValue.map { $0.isFinite ? max(0, $0) : 0.5 } } }
    }

    /// The observable properties as KVO with `.initial` shows them: first their values now
    /// (`.status`, `.rate`, `.timeControlStatus`, `.currentItem`, in that order), then every change of
    /// any of them, in the order they happened. The stream is subscribed when this returns, under the
    /// lock the changes are made under: no change falls between the values now and the first one
    /// sent (`Player(item:)` became `readyToPlay` in its initializer: the first value says so).
    public func changes() -> AsyncStream<Change> {
        withLock { changeBroadcast.stream(initialValues: currentValuesLocked()) }
    }

    func currentValuesLocked() -> [Change] {
        [.status(_status), .rate(_rate), .timeControlStatus(_timeControl, _waitingReason), .currentItem(queue.first)]
    }

    /// `status` now, then each change of it (`observe(\.status, options: [.initial, .new])`).
    public func statusUpdates() -> AsyncCompactMapSequence<AsyncStream<Change>, Status> {
        changes().compactMap { @Sendable change in if case .status(let value) = change { value } else { nil } }
    }

    /// `rate` now, then each change of it.
    public func rateUpdates() -> AsyncCompactMapSequence<AsyncStream<Change>, Float> {
        changes().compactMap { @Sendable change in if case .rate(let value) = change { value } else { nil } }
    }

    /// `timeControlStatus` (with `reasonForWaitingToPlay`) now, then each change of it.
    public func timeControlStatusUpdates() -> AsyncCompactMapSequence<AsyncStream<Change>, (TimeControlStatus, WaitingReason?)> {
        changes().compactMap { @Sendable change in
            if case .timeControlStatus(let status, let reason) = change { (status, reason) } else { nil }
        }
    }

    /// `currentItem` now, then each change of it.
    public func currentItemUpdates() -> AsyncCompactMapSequence<AsyncStream<Change>, PlayerItem?> {
        changes().compactMap { @Sendable change -> PlayerItem?? in
            if case .currentItem(let item) = change { .some(item) } else { nil }
        }
    }

    /// Every item's notifications (`NotificationCenter`'s, with the item as object) sent after this
    /// call returns: the subscription is made here, not when the stream is first read. Make the
    /// stream before the code whose events it must see, and read it anywhere (a `Task` started
    /// afterwards misses nothing). Notifications are not replayed: one sent before this call is
    /// not in the stream (observe state with `changes()` or `PlayerItem.statusUpdates()`, which
    /// start with the value now).
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

    /// What happens when the current item plays to its end: `.advance` (a queue player's default:
    /// the next item plays), `.pause` (a player's default) or `.none` (the last frame stays, the
    /// player's rate does not change, and `currentTime()` stays at the item's end).
    ///
    /// `.advance` is for queue players only: AVFoundation raises an exception when a plain player is
    /// given it; here the setting is refused (the value stays what it was) and the player's logger
    /// says so. `setActionAtItemEnd(_:)` is the form that throws instead.
    public var actionAtItemEnd: ActionAtItemEnd {
        get { withLock { _actionAtItemEnd } }
        set {
            do {
                try setActionAtItemEnd(newValue)
            } catch {
                logger.error("actionAtItemEnd not changed", ["why": "\(error)", "kept": "\(actionAtItemEnd)"])
            }
        }
    }

    /// Sets `actionAtItemEnd`; throws `PlayerError.advanceNeedsAQueuePlayer` for `.advance` on a
    /// plain player (the value stays).
    public func setActionAtItemEnd(_ action: ActionAtItemEnd) throws {
        guard action != .advance || isQueuePlayer else { throw PlayerError.advanceNeedsAQueuePlayer }
        withLock { _actionAtItemEnd = action }
    }

    /// Moves the current item's time to exactly `time` (`AVPlayer.seek(to:)`); the forms with a
    /// completion, tolerances or `await` say when the frame there is on screen.
    public func seek(to time: MediaTime) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completion: { _ in })
    }

    /// Marquee: where start-file / end-file event lines go.
    public var trace: TraceWriter? {
        get { withLock { _trace } }
        set { withLock { _trace = newValue } }
    }

    public func play() { locked { setRateLocked(_defaultRate, &$0) } }
    public func pause() { locked { setRateLocked(0, &$0) } }

    /// The current item's time at the last vsync; at the item's end it stays there (never past the
    /// item's duration), whatever `actionAtItemEnd` is. Inside a time observer's callback: the time
    /// the callback is for (a boundary's block reads the time it crossed at, even when it runs a
    /// little after the player moved on).
    public func currentTime() -> MediaTime {
        if let time = CallbackMoment.current(of: ObjectIdentifier(self)) { return time }
        return withLock { itemTimeLocked() ?? .zero }
    }

    func currentTime(of item: PlayerItem) -> MediaTime? {
        withLock {
            if item === queue.first { return itemTimeLocked() }
            return item.pendingStart?.time ?? (queue.contains { $0 === item } ? .zero : nil)
        }
    }

    // MARK: Rate

    func setRateLocked(_ newRate: Float, _ outbox: inout Outbox) {
        let old = _rate
        guard newRate != old || hostStartVsync != nil else { return }
        if old != 0 || anchor != nil { pausedPosition = currentPositionLocked() }
        anchor = nil
        hostStartVsync = nil
        hostStartTime = nil
        _rate = newRate
        tracePauseLocked(from: old, to: newRate)
        wakeLocked()
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

    func updateTimeControlLocked() {
        let (status, reason): (TimeControlStatus, WaitingReason?)
        if _rate == 0 {
            (status, reason) = (.paused, nil)
        } else if queue.isEmpty {
            (status, reason) = (.waitingToPlayAtSpecifiedRate, .noItemToPlay)
        } else if _automaticallyWaits && (pullState.isStalled || (!showingRunLocked && !hasDecodedFrameLocked())) {
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
    var showingRunLocked: Bool { (run?.shownFrames ?? 0) > 0 }

    func hasDecodedFrameLocked() -> Bool {
        ensureRunLocked(at: currentPositionLocked())
        guard let run else { return false }
        if run.ended { return true }
        return peekLocked() != nil
    }

}

/// A player's weak reference to a looper that keeps its queue filled.
struct WeakLooper {
    weak var looper: PlayerLooper?
}
