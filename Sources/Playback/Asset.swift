import Foundation
import Synchronization

/// A key of an asset's lazily loaded properties, typed by its value (`AVAsyncProperty`):
/// `let (duration, tracks) = try await asset.load(.duration, .tracks)`.
public struct AssetKey<Value: Sendable>: Sendable {
    public let name: String
    let extract: @Sendable (AssetDescription) -> Value
}

extension AssetKey where Value == MediaTime {
    /// The length of the asset.
    public static var duration: AssetKey<MediaTime> { AssetKey(name: "duration") { $0.duration } }
}

extension AssetKey where Value == [AssetTrack] {
    /// Every track of the asset.
    public static var tracks: AssetKey<[AssetTrack]> { AssetKey(name: "tracks") { $0.tracks } }
}

extension AssetKey where Value == Bool {
    /// Whether the asset has a video track the backend can decode.
    public static var isPlayable: AssetKey<Bool> {
        AssetKey(name: "isPlayable") { $0.tracks.contains { $0.mediaType == .video } }
    }
}

/// A media file (`AVURLAsset`). Nothing is read when it is made; keys load lazily and
/// asynchronously, all from one probe of the file, and once a key is loaded its value never changes.
/// Safe to use from any thread.
public final class Asset: Sendable {
    public let url: URL
    public let backend: any MediaBackend

    /// The status of a typed key (`AVAsyncProperty.Status`). Asking never starts loading.
    public enum Status<Value: Sendable>: Sendable {
        case notYetLoaded
        case loading
        case loaded(Value)
        case failed(any Error)
    }

    /// The status of a key in the key-based form (`AVKeyValueStatus`).
    public enum KeyValueStatus: Sendable, Equatable {
        case unknown, loading, loaded, failed, cancelled
    }

    /// Names of the keys the key-based form knows.
    public static let keyNames: Set<String> = ["duration", "tracks", "isPlayable"]

    private enum KeyState {
        case loading
        case loaded
        case failed(any Error)
        case cancelled
    }

    private struct Waiter {
        let keys: [String]
        /// Called exactly once, from whichever thread finishes the load; nil: cancelled.
        let resume: @Sendable (Result<AssetDescription, any Error>?) -> Void
    }

    private struct State {
        var keys: [String: KeyState] = [:]
        var probeResult: Result<AssetDescription, any Error>?
        /// How long the probe took, in seconds (0 before it ends).
        var probeSeconds = 0.0
        var probing = false
        /// When the probe under way began opening the file (nil: none under way, or queued).
        var probeStarted: ContinuousClock.Instant?
        var waiters: [Waiter] = []

        /// Records the outcome for `names`. A loaded key is never changed again.
        mutating func settle(_ names: [String], with result: Result<AssetDescription, any Error>) {
            for name in names {
                if case .loaded? = keys[name] { continue }
                switch result {
                case .success: keys[name] = .loaded
                case .failure(let error): keys[name] = .failed(error)
                }
            }
        }
    }

    private let state = Mutex(State())

    /// The opened file the asset's readers share (`MediaSource`): `live` while any user holds it;
    /// `kept` from the probe until the first user takes it (or `KeptSources` lets it go).
    private struct Opened: @unchecked Sendable {
        // @unchecked: references read and written under the monitor's lock.
        weak var live: (any MediaSource)?
        var kept: (any MediaSource)?
        var opening = false
        /// The items of this asset that were put in a player: they hold the file the probe opens.
        var holders: [Holder] = []
    }

    private struct Holder {
        weak var item: PlayerItem?
    }

    private let opened = Monitor(Opened())

    /// How long a user waits for another thread's open of the file (the backend's own limits end
    /// an open sooner).
    static let openWait = 60.0

    public init(url: URL, backend: any MediaBackend) {
        self.url = url
        self.backend = backend
    }

    // MARK: Typed keys

    /// Loads one key.
    public func load<V>(_ key: AssetKey<V>) async throws -> V {
        let description = try await loaded([key.name])
        return key.extract(description)
    }

    /// Loads several keys at once and returns their values in order.
    public func load<each V>(_ keys: repeat AssetKey<each V>) async throws -> (repeat each V) {
        var names: [String] = []
        for key in repeat each keys { names.append(key.name) }
        let description = try await loaded(names)
        return (repeat (each keys).extract(description))
    }

    /// What is known of `key` now; never starts loading.
    public func status<V>(of key: AssetKey<V>) -> Status<V> {
        state.withLock { state in
            switch state.keys[key.name] {
            case nil, .cancelled?: return .notYetLoaded
            case .loading?: return .loading
            case .failed(let error)?: return .failed(error)
            case .loaded?:
                guard case .success(let description)? = state.probeResult else { return .notYetLoaded }
                return .loaded(key.extract(description))
            }
        }
    }

    /// Cancels every pending load: their keys become cancelled, and their callers get
    /// `CancellationError`. Keys already loaded stay loaded.
    public func cancelLoading() {
        let cancelled: [Waiter] = state.withLock { state in
            let pending = state.waiters
            state.waiters.removeAll()
            for waiter in pending {
                for key in waiter.keys { if case .loading? = state.keys[key] { state.keys[key] = .cancelled } }
            }
            return pending
        }
        for waiter in cancelled { waiter.resume(nil) }
    }

    /// Whether the probe has run and failed (a looped playlist probes such a file again with a
    /// new asset: `PlayerLooper`).
    var probeFailed: Bool {
        state.withLock { if case .failure? = $0.probeResult { return true } else { return false } }
    }

    /// Whether the probe failed only after a second or more (a timeout: slow storage, a FIFO).
    var probeFailedSlowly: Bool { state.withLock { $0.probeSeconds >= 1 } && probeFailed }

    /// Seconds the probe under way has been opening the file; nil when none is (not started,
    /// queued for a pool thread, or done).
    var openingFor: Double? {
        state.withLock { state in
            guard state.probeResult == nil, let started = state.probeStarted else { return nil }
            return (ContinuousClock.now - started).seconds
        }
    }

    var probeSucceeded: Bool {
        state.withLock { if case .success? = $0.probeResult { return true } else { return false } }
    }

    // MARK: Key-based form (the AV Foundation Programming Guide's)

    /// Loads `keys` and calls `completion` once, when every one of them is loaded, failed or
    /// cancelled (`loadValuesAsynchronously(forKeys:completionHandler:)`).
    public func loadValues(forKeys names: [String], completion: @escaping @Sendable () -> Void) {
        request(names) { _ in completion() }
    }

    /// The status of `key` and, when it failed, why (`statusOfValue(forKey:error:)`).
    public func statusOfValue(forKey name: String) -> (status: KeyValueStatus, error: (any Error)?) {
        guard Self.keyNames.contains(name) else {
            return (.failed, AssetError(url: url, reason: "\"\(name)\" is not a key of an asset (known: \(Self.keyNames.sorted().joined(separator: ", ")))"))
        }
        return state.withLock { state in
            switch state.keys[name] {
            case nil: return (.unknown, nil)
            case .loading?: return (.loading, nil)
            case .loaded?: return (.loaded, nil)
            case .failed(let error)?: return (.failed, error)
            case .cancelled?: return (.cancelled, nil)
            }
        }
    }

    // MARK: Loading

    /// Blocks the calling thread (never the presentation thread) until the asset is probed.
    /// `giveUp` is asked every 50 ms: true ends the wait with `CancellationError` (the item was
    /// stopped; the probe itself ends within its own I/O limits).
    func loadedDescription(keys names: [String] = ["duration", "tracks"], timeout: Double = 30,
                           giveUp: () -> Bool = { false }) throws -> AssetDescription {
        // The probe's outcome; nil inside: the load was cancelled.
        let done = Latch<Result<AssetDescription, any Error>?>()
        request(names) { done.set($0) }
        guard let outcome = done.wait(timeout: timeout, slice: 0.05, giveUp: giveUp) else {
            if giveUp() { throw CancellationError() }
            throw WaitTimeout(waitingFor: "probing \(url.path)", seconds: timeout)
        }
        guard let result = outcome else { throw CancellationError() }
        return try result.get()
    }

    private func loaded(_ names: [String]) async throws -> AssetDescription {
        let result = await awaitCallback { done in request(names, resume: done) }
        guard let result else { throw CancellationError() }
        return try result.get()
    }

    /// Marks `names` loading and calls `resume` once the probe is done (nil when cancelled).
    private func request(_ names: [String], resume: @escaping @Sendable (Result<AssetDescription, any Error>?) -> Void) {
        let unknown = names.filter { !Self.keyNames.contains($0) }
        if !unknown.isEmpty {
            let error = AssetError(url: url, reason: "\(unknown.map { "\"\($0)\"" }.joined(separator: ", ")) not a key of an asset")
            resume(.failure(error))
            return
        }
        let (done, startProbe): (Result<AssetDescription, any Error>?, Bool) = state.withLock { state in
            if let probeResult = state.probeResult {
                state.settle(names, with: probeResult)
                return (probeResult, false)
            }
            for name in names {
                switch state.keys[name] {
                case .loaded?, .failed?: break
                default: state.keys[name] = .loading
                }
            }
            state.waiters.append(Waiter(keys: names, resume: resume))
            let start = !state.probing
            state.probing = true
            return (nil, start)
        }
        if let done {
            resume(done)
            return
        }
        if startProbe {
            // A pool thread, not a dispatch worker: a probe blocks (a slow disk, a network mount),
            // and blocked workers would starve every other asset's loading. The pool is bounded:
            // a burst of assets (300 appended files) queues instead of starting a thread each.
            ThreadPool.probes.run { [self] in
                let started = ContinuousClock.now
                state.withLock { $0.probeStarted = started }
                let result = Result { () throws -> AssetDescription in
                    let source = try self.source()
                    let description = try source.describe()
                    self.keep(source)
                    return description
                }
                let took = ContinuousClock.now - started
                let ready: [Waiter] = state.withLock { state in
                    state.probeResult = result
                    state.probeSeconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                    state.probing = false
                    state.probeStarted = nil
                    let all = state.waiters
                    state.waiters.removeAll()
                    for waiter in all { state.settle(waiter.keys, with: result) }
                    return all
                }
                // Each caller a job of its own on a bounded pool: one that blocks holds one of its
                // threads, not the others (threads, not dispatch workers, which blocked callers
                // elsewhere can exhaust).
                for waiter in ready { ThreadPool.assetReady.run { waiter.resume(result) } }
            }
        }
    }
}

extension Asset {
    /// The asset's opened file, shared by every reader of its items: the one in use, the probe's,
    /// or else opened now. The caller holds it for as long as it reads (a parked preroll too), so
    /// the file stays open between its item's decoders.
    package func source() throws -> any MediaSource {
        let found = try opened.wait(until: { !$0.opening }, timeout: Self.openWait) { opened, timedOut throws -> (any MediaSource)? in
            guard !timedOut else { throw WaitTimeout(waitingFor: "another thread opening \(url.path)", seconds: Self.openWait) }
            if let kept = opened.kept {
                opened.kept = nil
                if kept.isUsable {
                    opened.live = kept
                    return kept
                }
            }
            if let live = opened.live, live.isUsable { return live }
            opened.opening = true
            return nil
        }
        if let found { return found }
        do {
            let source = try backend.openSource(url)
            opened.update {
                $0.live = source
                $0.opening = false
            }
            return source
        } catch {
            opened.update { $0.opening = false }
            throw error
        }
    }

    /// `item`, put in a player, holds the asset's opened file from now on (`PlayerItem.hold`):
    /// the one open now, or the probe's when it comes. Nothing is opened here.
    func addHolder(_ item: PlayerItem) {
        let open = opened.withLock { opened -> (any MediaSource)? in
            opened.holders.removeAll { $0.item == nil }
            opened.holders.append(Holder(item: item))
            if let kept = opened.kept {
                opened.kept = nil
                opened.live = kept
            }
            return opened.live.flatMap { $0.isUsable ? $0 : nil }
        }
        if let open { item.hold(open) }
    }

    /// The probe's source: held by the asset's items in a player, else kept for the first reader
    /// (`KeptSources` bounds how many assets keep one).
    private func keep(_ source: any MediaSource) {
        let items = opened.withLock { opened -> [PlayerItem] in
            opened.kept = source
            return opened.holders.compactMap(\.item)
        }
        var held = false
        for item in items where item.hold(source) { held = true }
        if held {
            opened.withLock { opened in
                if opened.kept === source {
                    opened.kept = nil
                    opened.live = source
                }
            }
        } else if source.holdsFile {
            KeptSources.shared.keep(self)
        }
    }

    /// Lets the probe's source go (too many assets keep one); the first reader opens the file again.
    func dropKeptSource() {
        let dropped = opened.withLock { opened -> (any MediaSource)? in
            defer { opened.kept = nil }
            return opened.kept
        }
        _ = dropped  // released here, outside the lock
    }
}
