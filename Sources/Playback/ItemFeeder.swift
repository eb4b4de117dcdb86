import Foundation
import Synchronization

/// What an item's decode thread hands to the player.
enum FeedEvent: @unchecked Sendable {
    // @unchecked: a frame is handed from the decode thread to the presentation thread and is then
    // used there only.
    /// The asset is probed and playable.
    case ready(AssetDescription)
    case frame(any PresentableFrame)
    /// The stream (or the item's forward end time) is reached.
    case end
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
    private let start: MediaTime
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

    /// At most this much memory of frames waits in the queue: big frames (4K, or RGBA from the
    /// decode thread's conversion) run fewer frames ahead than the player asks, but at least 2
    /// (or the player's count, when it asks for fewer).
    static let aheadBytes = 32 << 20

    /// - Parameters:
    ///   - start: the time to seek to first (zero: the start of the file).
    ///   - toleranceBefore: frames ending before `start - toleranceBefore` are skipped.
    ///   - end: frames at or after it are not delivered (invalid: the end of the file).
    init(asset: Asset, start: MediaTime, toleranceBefore: MediaTime, end: MediaTime, capacity: Int, name: String) {
        self.asset = asset
        self.start = start
        self.toleranceBefore = toleranceBefore
        self.end = end
        self.name = name
        queue = FrameQueue(capacity: capacity)
        ahead = Mutex((capacity, 0))
    }

    /// Lets decoding run up to `frames` frames ahead (fewer for big frames: `aheadBytes`).
    func setAhead(_ frames: Int) { ahead.withLock { applyAhead(&$0, frames: frames) } }

    private func applyAhead(_ state: inout (frames: Int, frameBytes: Int), frames: Int? = nil, frameBytes: Int? = nil) {
        state.frames = frames ?? state.frames
        state.frameBytes = frameBytes ?? state.frameBytes
        let bound = state.frameBytes > 0 ? max(2, Self.aheadBytes / state.frameBytes) : state.frames
        let capacity = min(state.frames, bound)
        if capacity != queue.capacity { queue.setCapacity(capacity) }
    }

    func start(logger: Logger) {
        Self.running.enter()
        let thread = Thread { [self] in
            defer { Self.running.leave() }  // the reader (and its decoder) is gone by now
            run(logger: logger)
        }
        thread.name = "marquee-decode"
        thread.start()
    }

    /// The decode threads of every player in the process that have not ended yet.
    static let running = ThreadCount()

    final class ThreadCount: @unchecked Sendable {
        // @unchecked: `count` is guarded by `condition`.
        private let condition = NSCondition()
        private var count = 0

        func enter() { condition.withLock { count += 1 } }

        func leave() {
            condition.withLock {
                count -= 1
                condition.broadcast()
            }
        }

        /// Waits up to `timeout` seconds for the count to reach 0; how many are still running.
        func waitForNone(timeout: Double) -> Int {
            let deadline = Date(timeIntervalSinceNow: timeout)
            return condition.withLock {
                while count > 0 && condition.wait(until: deadline) {}
                return count
            }
        }
    }

    /// Ends decoding; the thread exits within one queue timeout, releasing its reader.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.close()
        cancelReader.withLock { $0 }?()
    }

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// True once decoding has failed: the player prerolls past such an item, so that the item after
    /// it is ready in time.
    var hasFailed: Bool { failed.load(ordering: .relaxed) }

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

    private func run(logger: Logger) {
        do {
            let description = try asset.loadedDescription(giveUp: { isStopped })
            guard description.tracks.contains(where: { $0.mediaType == .video }) else {
                throw AssetError(url: asset.url, reason: "no video track")
            }
            guard send(.ready(description)) else { return }
            var reader: (any FrameReader)? = try asset.backend.openReader(asset.url)
            if let cancel = reader?.canceller {
                cancelReader.withLock { $0 = cancel }
                if isStopped { cancel() }  // stopped while it opened
            }
            if start.isNumeric && start > .zero { try reader?.seek(to: start) }
            let skipBefore = start - toleranceBefore
            var sizedFor = 0
            while !isStopped, let open = reader {
                let frame = try open.nextFrame()
                if let frame, !(end.isNumeric && frame.pts >= end) {
                    if start > .zero && frame.pts + frame.duration <= skipBefore { continue }
                    let bytes = frame.byteCount
                    if bytes > 0 && bytes != sizedFor {
                        sizedFor = bytes
                        ahead.withLock { applyAhead(&$0, frameBytes: bytes) }
                    }
                    guard send(.frame(frame)) else { return }
                    continue
                }
                // The end: the decoder (and its reference frames) goes now, while the frames
                // already queued are still being shown.
                reader = nil
                cancelReader.withLock { $0 = nil }
                _ = send(.end)
            }
        } catch {
            if isStopped { return }  // a cancelled read: the item was skipped, nothing failed
            logger.debug("decode failed", ["uri": asset.url.path, "error": "\(error)"])
            failed.store(true, ordering: .relaxed)
            _ = send(.failed(error))
        }
    }
}
