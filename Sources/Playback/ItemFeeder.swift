import Foundation
import Synchronization

/// What an item's decode thread hands to the player.
enum FeedEvent: @unchecked Sendable {
    // @unchecked: a frame is handed from the decode thread to the presentation thread and is then
    // used there only.
    /// The asset is probed and playable.
    case ready(AssetDescription)
    case frame(any PresentableFrame)
    /// The stream (or the item's forward end time) is reached. `skippedTo`: the decoder was
    /// skipping frames when it reached the end, which is then the stream's duration (the last
    /// frame handed over ends earlier).
    case end(skippedTo: MediaTime?)
    case failed(any Error)
}

/// Decodes one run of an item (from its start, or from a seek's target, to its end) on a thread of
/// its own into a bounded queue, so that decoding runs ahead of presentation by at most `capacity`
/// frames. The player starts the next item's feeder while the current item plays, so that item's
/// first frame is decoded before it is due.
final class ItemFeeder: @unchecked Sendable {
    // @unchecked: the thread owns the reader; the player touches only `queue` (thread-safe) and
    // `stopped` (atomic).
    let queue: FrameQueue<FeedEvent>
    private let asset: Asset
    /// Opens (or shares) the item's file: `PlayerItem.source()`.
    private let openSource: @Sendable () throws -> any MediaSource
    /// Where decoding starts (a seek's target; zero: the item's start).
    let start: MediaTime
    private let toleranceBefore: MediaTime
    private let end: MediaTime
    private let stopped = Atomic(false)
    private let failed = Atomic(false)
    /// Ends the reader's waits (`FrameReader.canceller`) once it is open.
    private let cancelReader = Mutex<(@Sendable () -> Void)?>(nil)
    /// How many frames the player lets decoding run ahead, and the size of this item's frames
    /// once the first is decoded (0 before).
    private let ahead: Mutex<(frames: Int, frameBytes: Int)>
    let name: String
    /// Where the player's clock is in this item's time (nil: not playing), how much earlier a
    /// frame must start to have missed that vsync, and the recent share of frames presentation
    /// dropped for lateness: what the decoder's frame drop follows.
    private let presentation = Mutex<(clock: MediaTime?, missedBy: MediaTime, lateDropRate: Double)>((nil, .zero, 0))
    /// Counts the frames the decoder skipped.
    private let drops: DropCounter
    /// The owner's count of its running decode threads (besides the process's, `running`).
    private let threads: ThreadCount?

    /// At most this much memory of frames waits in the queue: big frames (4K, or a frame scaled
    /// down to RGBA on the decode thread) run fewer frames ahead than the player asks, but at
    /// least 1. 1080p 4:2:0 (3 MB a frame, as decoded: the cpu colour conversion happens as the
    /// layer uploads it) runs 2 ahead, 1080p RGBA and 4K 1. Each frame queued is one more buffer
    /// in its decoder's pool, which keeps it until the decoder closes. The player holds two more
    /// (the next frame, taken from the queue a vsync or more before it is due, and the one shown),
    /// so the decode thread still has two frames' time to make its next one while they wait.
    static let aheadBytes = 8 << 20

    /// A preroll's decoder, closed once its first frames are queued (`parks`), waits here until the
    /// feeder before it lets its decoder go (`handDecoder(to:)`) or the item plays (`setAhead`).
    /// `stopped` is kept here too, so that a stop ends the wait at once: a parked preroll of an
    /// item replaced or removed (a queue changed again and again) no longer lingers for its timeout.
    private let parking: Monitor<(parks: Bool, resumed: Bool, stopped: Bool)>
    /// The frames a parking preroll's reader gives before it closes: its capacity less the ready
    /// event's place (a preroll reader is never asked for more: `MediaBackend.openPrerollReader`).
    private let prerollFrames: Int
    /// Whether this feeder's decoder is gone (the end reached, stopped, failed), and the parked
    /// feeders to resume then.
    private let handOver = Mutex<(released: Bool, next: [ItemFeeder])>((false, []))

    /// - Parameters:
    ///   - start: the time to seek to first (zero: the start of the file).
    ///   - toleranceBefore: frames ending before `start - toleranceBefore` are skipped.
    ///   - end: frames at or after it are not delivered (invalid: the end of the file).
    ///   - drops: where the frames the decoder skips are counted.
    ///   - parks: a preroll: its decoder closes once its first `capacity` frames are queued, and
    ///     opens again (skipping the frames already queued) when it is resumed: only one decoder's
    ///     buffers and frame threads live at a time, not the playing item's and the next one's.
    init(asset: Asset, start: MediaTime, toleranceBefore: MediaTime, end: MediaTime, capacity: Int, name: String,
         drops: DropCounter = DropCounter(), threads: ThreadCount? = nil, parks: Bool = false,
         source: (@Sendable () throws -> any MediaSource)? = nil) {
        openSource = source ?? { [asset] in try asset.source() }
        parking = Monitor((parks, false, false))
        self.drops = drops
        self.threads = threads
        self.asset = asset
        self.start = start
        self.toleranceBefore = toleranceBefore
        self.end = end
        self.name = name
        queue = FrameQueue(capacity: capacity)
        ahead = Mutex((capacity, 0))
        prerollFrames = max(1, capacity - 1)
    }

    /// The player's clock in this item's time at its last vsync (nil while it does not play), how
    /// much earlier than it a frame must start to have missed that vsync (half a vsync: the
    /// cadence rounds), and the share of recent frames it dropped for lateness (0...1).
    func report(clock: MediaTime?, missedBy: MediaTime = .zero, lateDropRate: Double) {
        presentation.withLock { $0 = (clock, missedBy, lateDropRate) }
        if clock != nil, !playing.exchange(true, ordering: .relaxed) {
            ahead.withLock { applyAhead(&$0) }  // started: the start's floor goes
        }
    }

    /// Frames a run's reader may hand out before its item plays, whatever their size: what a
    /// player may wait for before it starts (a kiosk's first frames), with the ready event.
    static let startFrames = 3
    /// True once the player's clock has run in this feeder's item.
    private let playing = Atomic(false)

    /// Lets decoding run up to `frames` frames ahead (fewer for big frames: `aheadBytes`). A parked
    /// preroll is resumed: its item plays.
    func setAhead(_ frames: Int) {
        resume()
        ahead.withLock { applyAhead(&$0, frames: frames) }
    }

    /// A parked preroll opens its decoder again (see `parks`); nothing otherwise.
    func resume() { parking.update { $0.resumed = true } }

    /// Resumes `next` (a parked preroll) once this feeder's decoder is gone, or now when it already
    /// is: the next item's decoder then opens while this item's last queued frames are shown.
    func handDecoder(to next: ItemFeeder) {
        let now = handOver.withLock { state -> Bool in
            if !state.released { state.next.append(next) }
            return state.released
        }
        if now { next.resume() }
    }

    /// This feeder's decoder is gone: the feeders waiting for it are resumed, unless it was
    /// stopped (a seek's feeder or the next item takes over: the player hands them on, or they
    /// resume when their item plays).
    private func releaseDecoder() {
        let waiting = handOver.withLock { state -> [ItemFeeder] in
            state.released = true
            defer { state.next = [] }
            return state.next
        }
        if !isStopped { for feeder in waiting { feeder.resume() } }
    }

    /// A preroll that parks and has not been resumed: its first frames come from a preroll reader.
    private var isParking: Bool { parking.withLock { $0.parks && !$0.resumed } }

    /// Waits for `resume()`; false once stopped.
    private func waitForResume() -> Bool {
        while !isStopped {
            if parking.wait(until: { $0.resumed || $0.stopped }, timeout: 0.5) { return !isStopped }
        }
        return false
    }

    private func applyAhead(_ state: inout (frames: Int, frameBytes: Int), frames: Int? = nil, frameBytes: Int? = nil) {
        state.frames = frames ?? state.frames
        state.frameBytes = frameBytes ?? state.frameBytes
        // A parked preroll keeps the count it was made with (its item's first frames).
        let parked = parking.withLock { $0.parks && !$0.resumed }
        // Until its item plays, a run that is not a preroll may queue its first frames.
        let floor = parking.withLock({ $0.parks }) || playing.load(ordering: .relaxed) ? 1 : Self.startFrames + 1
        let bound = state.frameBytes > 0 && !parked ? max(floor, Self.aheadBytes / state.frameBytes) : state.frames
        let capacity = min(state.frames, bound)
        if capacity != queue.capacity { queue.setCapacity(capacity) }
    }

    func start(logger: Logger) {
        Self.running.enter()
        threads?.enter()
        startThread(named: "marquee-decode") { [self] in
            defer {
                // The reader (and its decoder) is gone by now.
                threads?.leave()
                Self.running.leave()
            }
            run(logger: logger)
            releaseDecoder()
        }
    }

    /// The decode threads of every player in the process that have not ended yet.
    static let running = ThreadCount()

    final class ThreadCount: Sendable {
        private let count = Monitor(0)

        func enter() { count.withLock { $0 += 1 } }

        func leave() { count.update { $0 -= 1 } }

        /// Waits up to `timeout` seconds for the count to reach 0; how many are still running.
        func waitForNone(timeout: Double) -> Int { waitForAtMost(0, timeout: timeout) }

        /// Waits up to `timeout` seconds for the count to fall to `limit` or below; how many run.
        func waitForAtMost(_ limit: Int, timeout: Double) -> Int {
            _ = count.wait(until: { $0 <= limit }, timeout: timeout)
            return count.withLock { $0 }
        }

        /// How many run now.
        var value: Int { count.withLock { $0 } }
    }

    /// Ends decoding; the thread exits within one queue timeout, releasing its reader.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.close()
        cancelReader.withLock { $0 }?()
        parking.update { $0.stopped = true }  // ends a parked preroll's wait now
    }

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// True once decoding has failed: the player prerolls past such an item, so that the item after
    /// it is ready in time.
    var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// Waits until the queue has room (or is closed): the next frame is decoded only then, so no
    /// decoded frame waits in hand while the queue is full. False once stopped.
    private func waitForRoom() -> Bool {
        while !isStopped {
            if queue.waitForRoom(timeout: 0.5) { return !isStopped }
        }
        return false
    }

    private func send(_ event: FeedEvent) -> Bool {
        while !isStopped {
            switch queue.push(event, timeout: 0.5) {
            case .pushed: return true
            case .closed: return false
            case .timedOut: continue  // presentation is showing earlier frames; keep waiting
            }
        }
        return false
    }

    /// Counts the frames skipped before `frame` (the gap since the last one, while skipping) and
    /// tells the reader what to skip next.
    private func adjustFrameDrop(after frame: any PresentableFrame, expected: inout MediaTime?, policy: inout FrameDropPolicy,
                                 reader: any FrameReader, logger: Logger) {
        let duration = frame.duration.seconds
        // Frames skipped just before the decoder stopped skipping still come out of its threads
        // after that: gaps count for a while after as well.
        if policy.recentlySkipping, let expected, duration > 0 {
            let gap = ((frame.pts - expected).seconds / duration).rounded()
            if gap >= 1 && gap < 1e6 { drops.add(Int(gap)) }
        }
        let resumedAt = expected.map { min($0, frame.pts) } ?? frame.pts
        expected = frame.pts + frame.duration
        let (clock, missedBy, lateDropRate) = presentation.withLock { $0 }
        let lead = clock.map { (frame.pts - $0 + missedBy).seconds } ?? .infinity
        let resumedLead = clock.map { (resumedAt - $0 + missedBy).seconds } ?? .infinity
        let before = policy.level
        let level = policy.update(lead: lead, resumedLead: resumedLead, frameDuration: duration, lateDropRate: lateDropRate)
        guard level != before else { return }
        // While skipping, frames that are late by the time they are decoded (ending by the
        // clock's vsync: a later frame is due there) are discarded too.
        let presentationClock: @Sendable () -> MediaTime? = { [weak self] in self?.presentation.withLock { $0.clock } }
        reader.setFrameDrop(level, discardingFramesEndingBy: level == .none ? nil : presentationClock)
        logger.debug("decoder frame drop", ["uri": asset.url.mediaLocation, "skip": "\(level)",
                                            "lead": lead.isFinite ? lead.formatted(decimals: 3) : "none"])
    }

    private func run(logger: Logger) {
        do {
            let description = try asset.loadedDescription(giveUp: { isStopped })
            guard description.tracks.contains(where: { $0.mediaType == .video }) else {
                throw AssetError(url: asset.url, reason: "no video track")
            }
            StartupMarks.mark("probed")
            guard send(.ready(description)) else { return }
            // The item's opened file, held for the whole run: a parked preroll's reader closes,
            // the file stays open for the reader that follows it.
            let source = try openSource()
            // A preroll's first frames come from a light reader (`MediaBackend.openPrerollReader`),
            // closed once they are queued; its item's own reader opens when it is resumed.
            var prerolling = isParking
            var reader: (any FrameReader)? = try openReader(source, preroll: prerolling)
            StartupMarks.mark("decoder-open")
            let skipBefore = start - toleranceBefore
            var sizedFor = 0
            var policy = FrameDropPolicy()
            var expected: MediaTime?
            // Frames handed over, and how many of them a reopened decoder has yet to pass again.
            var handed = 0
            var repeating = 0
            while !isStopped, reader != nil {
                if prerolling && (!isParking || handed >= prerollFrames || !queue.waitForRoom(timeout: 0)) {
                    // Resumed, or the first frames are queued (the queue holds them, and its ready
                    // event until the player takes it): the preroll's decoder goes; once
                    // the item before has let its own go (or this one plays), the item's own
                    // decoder opens and skips the frames already given.
                    reader = nil
                    cancelReader.withLock { $0 = nil }
                    guard waitForResume() else { return }
                    logger.debug("decoder opens after its preroll", ["uri": asset.url.mediaLocation, "skip": "\(handed)"])
                    prerolling = false
                    reader = try openReader(source, preroll: false)
                    repeating = handed
                }
                // Frames decoded again after a reopen are not queued: they need no room.
                guard repeating > 0 || waitForRoom() else { return }
                guard let frame = try reader?.nextFrame(), !(end.isNumeric && frame.pts >= end) else {
                    // The end: the decoder (and its reference frames) goes now, while the frames
                    // already queued are still being shown; the next item's may open.
                    reader = nil
                    cancelReader.withLock { $0 = nil }
                    releaseDecoder()
                    _ = send(.end(skippedTo: policy.level > .none ? description.duration : nil))
                    break
                }
                if start > .zero && frame.pts + frame.duration <= skipBefore { continue }
                if repeating > 0 {
                    repeating -= 1
                    continue
                }
                handed += 1
                if let open = reader {
                    adjustFrameDrop(after: frame, expected: &expected, policy: &policy, reader: open, logger: logger)
                }
                let bytes = frame.byteCount
                if bytes > 0 && bytes != sizedFor {
                    sizedFor = bytes
                    ahead.withLock { applyAhead(&$0, frameBytes: bytes) }
                }
                StartupMarks.mark("first-decoded")
                guard send(.frame(frame)) else { return }
            }
        } catch {
            if isStopped { return }  // a cancelled read: the item was skipped, nothing failed
            logger.debug("decode failed", ["uri": asset.url.mediaLocation, "error": "\(error)"])
            failed.store(true, ordering: .relaxed)
            _ = send(.failed(error))
        }
    }
}

extension ItemFeeder {
    /// The item's reader, opened and positioned at `start`; stopping the feeder cancels its waits.
    fileprivate func openReader(_ source: any MediaSource, preroll: Bool) throws -> any FrameReader {
        let reader = try preroll ? source.openPrerollReader() : source.openReader()
        if let cancel = reader.canceller {
            cancelReader.withLock { $0 = cancel }
            if isStopped { cancel() }  // stopped while it opened
        }
        if start.isNumeric && start > .zero { try reader.seek(to: start) }
        reader.follow(clock: { [weak self] in self?.presentation.withLock { $0.clock } }, dropped: { [drops] in drops.add($0) })
        return reader
    }
}

/// Frames skipped by decoders, counted across a player's items (any thread).
final class DropCounter: Sendable {
    private let value = Atomic(0)
    func add(_ frames: Int) { value.add(frames, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// What a decoder skips, from how far the frames it decodes lead the presentation clock (mpv's
/// decoder framedrop, in steps): frames that keep missing their vsync (`patience` in a row, or one
/// more than two frames late) skip non-reference frames; frames more than `catchUp` late skip
/// everything to the next keyframe; presentation dropping frames for lateness (it cannot show them
/// all) also skips non-reference frames. One late frame (an item's first ones while its decoder
/// opens, a hiccup) is not decoding falling behind. It relaxes one step at a time, once decoded
/// frames lead the clock again. Every change happens right after a decoded frame, so a keyframe
/// skip ends on the keyframe it reached.
struct FrameDropPolicy {
    private(set) var level = DecoderFrameDrop.none
    /// Seconds behind past which decoding skips to the next keyframe (at least 4 frames).
    var catchUp = 0.5
    /// Frames in a row that missed their vsync before non-reference frames are skipped.
    var patience = 3
    private var lateInARow = 0
    /// Frames decoded since the level went back to `.none`.
    private var sinceSkipping = Int.max

    /// True while skipping, and for the frames a decoder's threads may still hold after it stopped.
    var recentlySkipping: Bool { level > .none || sinceSkipping < 16 }

    /// - Parameters:
    ///   - lead: seconds the frame just decoded is ahead of the last moment it can still be shown
    ///     (negative: late; infinite: no clock, nothing is behind).
    ///   - resumedLead: the same for where decoding resumed after the previous frame (lower than
    ///     `lead` when frames between were skipped or discarded as late); `lead` when not given.
    ///   - frameDuration: that frame's duration in seconds.
    ///   - lateDropRate: the share of recent frames presentation dropped for lateness.
    mutating func update(lead: Double, resumedLead: Double? = nil, frameDuration: Double, lateDropRate: Double) -> DecoderFrameDrop {
        let behind = min(lead, resumedLead ?? lead)
        let frame = frameDuration.isFinite && frameDuration > 0 ? frameDuration : 1.0 / 30
        let presentationBehind = lateDropRate > 0.2
        let presentationKeepsUp = lateDropRate < 0.05
        lateInARow = behind < 0 ? lateInARow + 1 : 0
        if sinceSkipping < Int.max { sinceSkipping += 1 }
        switch level {
        case .nonKey:
            // Only keyframes come out now: caught up once one is not late.
            if lead >= 0 { level = .nonReference }
        case .none, .nonReference:
            if behind < -max(catchUp, 4 * frame) {
                level = .nonKey
            } else if (behind < 0 && (lateInARow >= patience || behind < -2 * frame)) || presentationBehind {
                level = .nonReference
            } else if level == .nonReference && lead >= 2 * frame && presentationKeepsUp {
                level = .none
                sinceSkipping = 0
            }
        }
        return level
    }
}
