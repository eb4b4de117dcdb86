import Foundation
import Synchronization

/// The playback state of one asset in one player (`AVPlayerItem`). An item belongs to at most one
/// player at a time; to queue the same asset twice, make two items.
public final class PlayerItem: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: `pendingStart` and `preroll` are guarded by the player's lock; the rest of the
    // mutable state is in `state`.
    public enum Status: Sendable, Equatable { case unknown, readyToPlay, failed }

    /// Notifications about the item (their object is the item).
    public enum Event: Sendable, CustomStringConvertible {
        case didPlayToEndTime
        case failedToPlayToEndTime(any Error)
        /// Time jumped: a seek, or any other discontinuity.
        case timeJumped
        /// Frames did not arrive in time; the picture froze.
        case playbackStalled
        case newErrorLogEntry(String)

        public var description: String {
            switch self {
            case .didPlayToEndTime: "didPlayToEndTime"
            case .failedToPlayToEndTime(let error): "failedToPlayToEndTime(\(error))"
            case .timeJumped: "timeJumped"
            case .playbackStalled: "playbackStalled"
            case .newErrorLogEntry(let text): "newErrorLogEntry(\(text))"
            }
        }
    }

    public let asset: Asset
    /// Keys loaded when the item is attached to a player; one failing fails the item.
    public let automaticallyLoadedAssetKeys: [String]

    private struct State {
        var status = Status.unknown
        var error: (any Error)?
        var duration = MediaTime.indefinite
        var tracks: [AssetTrack] = []
        var forwardPlaybackEndTime = MediaTime.invalid
        var playlistIndex: Int?
        var transition = Transition.cut
        var loadingStarted = false
        weak var owner: Player?
        /// The opened file, held while the item is in a player (`source()`).
        var source: (any MediaSource)?
    }

    private let state = Mutex(State())
    var isAttachedLoading: Bool { state.withLock { $0.loadingStarted } }
    private let statusBroadcast = Broadcast<Status>(name: "item status updates")
    private let eventBroadcast = Broadcast<Event>(name: "item events")

    /// The player the item is in.
    var owner: Player? {
        get { state.withLock { $0.owner } }
        set {
            let released = state.withLock { state -> (any MediaSource)? in
                state.owner = newValue
                guard newValue == nil else { return nil }
                defer { state.source = nil }
                return state.source
            }
            _ = released  // closed here, outside the lock, unless a reader still holds it
        }
    }

    /// The item's opened file (`Asset.source()`): its runs, its prerolls, its sound and the passes
    /// of a loop read it, and it stays open while the item is in a player (between a run's end
    /// and a loop's next pass, nothing else may hold it), so the item opens its file once.
    /// Holds `source` (its asset's opened file) while the item is in a player; false when it is in none.
    @discardableResult
    func hold(_ source: any MediaSource) -> Bool {
        state.withLock { state in
            guard state.owner != nil else { return false }
            if state.source == nil { state.source = source }
            return true
        }
    }

    package func source() throws -> any MediaSource {
        let source = try asset.source()
        state.withLock { if $0.owner != nil { $0.source = source } }
        return source
    }
    /// Where the item starts when it begins to play (set by an item-level seek before it plays,
    /// or by a looper's time range); guarded by the player's lock.
    var pendingStart: (time: MediaTime, toleranceBefore: MediaTime, completion: (@Sendable (Bool) -> Void)?)?
    /// The decode thread of the item's next run, started ahead of time (guarded by the player's lock).
    var preroll: ItemFeeder?
    /// Serial number for traces when no playlist index is set.
    let serial: Int
    private static let serials = Atomic(0)

    public init(asset: Asset, automaticallyLoadedAssetKeys: [String] = []) {
        self.asset = asset
        self.automaticallyLoadedAssetKeys = automaticallyLoadedAssetKeys
        serial = Self.serials.add(1, ordering: .relaxed).newValue
    }

    public convenience init(url: URL, backend: any MediaBackend) {
        self.init(asset: Asset(url: url, backend: backend))
    }

    public var description: String { "PlayerItem(\(asset.url.lastPathComponent))" }

    /// unknown until the item is in a player and its asset's duration and tracks have loaded.
    public var status: Status { state.withLock { $0.status } }
    /// Why the item failed; nil unless `status == .failed`.
    public var error: (any Error)? { state.withLock { $0.error } }
    /// Indefinite until loaded.
    public var duration: MediaTime { state.withLock { $0.duration } }
    /// Empty until loaded.
    public var tracks: [AssetTrack] { state.withLock { $0.tracks } }
    /// The size of the picture as shown (after the track's rotation); zero until loaded.
    public var presentationSize: VideoSize {
        state.withLock {
            guard let video = $0.tracks.first(where: { $0.mediaType == .video }) else { return .zero }
            let size = video.naturalSize
            return video.preferredTransform.rotationDegrees % 180 == 90
                ? VideoSize(width: size.height, height: size.width) : size
        }
    }

    /// Where playback of the item ends; invalid (the default) means its duration. Reaching it ends
    /// the item exactly as reaching the real end does.
    public var forwardPlaybackEndTime: MediaTime {
        get { state.withLock { $0.forwardPlaybackEndTime } }
        set { state.withLock { $0.forwardPlaybackEndTime = newValue } }
    }

    /// Marquee: the item's place in a playlist, written in traces and logs.
    public var playlistIndex: Int? {
        get { state.withLock { $0.playlistIndex } }
        set { state.withLock { $0.playlistIndex = newValue } }
    }

    /// Marquee: how this item follows the one before it (the loop point included); `cut` by
    /// default. Read when the item starts.
    public var transition: Transition {
        get { state.withLock { $0.transition } }
        set { state.withLock { $0.transition = newValue } }
    }

    package var traceIndex: Int { playlistIndex ?? serial }

    /// The item's time now (read it when needed; observe time with a periodic time observer).
    public func currentTime() -> MediaTime {
        owner?.currentTime(of: self) ?? pendingStartTime
    }

    private var pendingStartTime: MediaTime {
        owner?.withLock { pendingStart?.time } ?? .zero
    }

    /// Every status change, starting with the status now.
    public func statusUpdates() -> AsyncStream<Status> {
        // Under the lock that changes the status: a change is either in the initial value or sent
        // to the new stream, never lost between the two.
        state.withLock { statusBroadcast.stream(initial: $0.status) }
    }

    /// The item's notifications sent after this call returns (the subscription is made here, not
    /// when the stream is first read: make it before attaching the item, read it in a `Task`).
    public func events() -> AsyncStream<Event> { eventBroadcast.stream() }

    /// Whether anything reads the item's notifications now.
    var hasEventSubscribers: Bool { eventBroadcast.subscriberCount > 0 }

    /// Moves the item's time to `time` (`AVPlayerItem.seek(to:completionHandler:)`). Finishes with
    /// false when `time` is outside the seekable range [0, duration] or the item cannot play.
    /// On an item not yet playing, the seek sets where it will start.
    public func seek(to time: MediaTime, toleranceBefore: MediaTime = .zero, toleranceAfter: MediaTime = .zero,
                     completion: @escaping @Sendable (Bool) -> Void) {
        let duration = self.duration
        guard time.isNumeric, time >= .zero, !duration.isNumeric || time <= duration, status != .failed else {
            completion(false)
            return
        }
        guard let owner else {
            completion(false)
            return
        }
        owner.seek(item: self, to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completion: completion)
    }

    @discardableResult
    public func seek(to time: MediaTime, toleranceBefore: MediaTime = .zero, toleranceAfter: MediaTime = .zero) async -> Bool {
        await awaitCallback { done in seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completion: done) }
    }

    // MARK: Internal state changes

    func post(_ event: Event) { eventBroadcast.send(event) }

    /// Starts loading the keys an item needs when it is attached to a player.
    func attached(to player: Player) {
        let first: Bool = state.withLock { state in
            defer { state.loadingStarted = true }
            return !state.loadingStarted
        }
        owner = player
        asset.addHolder(self)
        // A subscriber that falls behind is ended (Broadcast); the player's log says so.
        let logger = player.logger, item = description
        let report: @Sendable (BroadcastOverflow) -> Void = { overflow in
            logger.error("events lost", ["item": item, "why": overflow.description])
        }
        statusBroadcast.reportLosses(to: report)
        eventBroadcast.reportLosses(to: report)
        guard first else { return }
        let keys = Array(Set(["duration", "tracks"] + automaticallyLoadedAssetKeys))
        asset.loadValues(forKeys: keys) { [weak self] in
            guard let self else { return }
            var failure: (any Error)?
            for key in keys {
                let (status, error) = self.asset.statusOfValue(forKey: key)
                if status == .failed { failure = error; break }
            }
            if let failure {
                self.fail(failure)
            } else if case .loaded(let tracks) = self.asset.status(of: .tracks), case .loaded(let duration) = self.asset.status(of: .duration) {
                if !tracks.contains(where: { $0.mediaType == .video }) {
                    self.fail(AssetError(url: self.asset.url, reason: "no video track"))
                } else {
                    self.becomeReady(duration: duration, tracks: tracks)
                }
            }
        }
    }

    func becomeReady(duration: MediaTime, tracks: [AssetTrack]) {
        let changed: Bool = state.withLock { state in
            guard state.status == .unknown else { return false }
            state.duration = duration
            state.tracks = tracks
            state.status = .readyToPlay
            statusBroadcast.send(.readyToPlay)
            return true
        }
        if changed { owner?.itemStatusChanged(self) }
    }

    /// Failed is terminal.
    func fail(_ error: any Error) {
        let changed: Bool = state.withLock { state in
            guard state.status != .failed else { return false }
            state.status = .failed
            state.error = error
            statusBroadcast.send(.failed)
            return true
        }
        if changed { owner?.itemStatusChanged(self) }
    }
}
