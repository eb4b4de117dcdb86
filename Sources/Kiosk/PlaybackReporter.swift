import Foundation
import Media
import Playback
import Synchronization

/// Reports what a session's player and decoders do: into its status (and its output's, as its
/// wall role says), the log (each problem once per reason) and the control socket's events.
final class PlaybackReporter: @unchecked Sendable {
    // @unchecked: `onEvent` is set before the session runs; what changes after is behind `logged`,
    // and the statuses and the event order are thread-safe themselves.
    let status: KioskStatus
    let role: WallRole
    let logger: Logger
    /// The events sent, in mpv's order; guarded by its own lock (also held while `onEvent` runs,
    /// so that events of the player's two streams leave in order).
    let events = EventOrder()
    /// Sends control-socket events (`start-file`, `end-file`); set before the session runs.
    var onEvent: (@Sendable (JSONValue) -> Void)?
    /// The playlist playing now, for the item numbers of a failure's log line; set before the
    /// session runs.
    var playlist: @Sendable () -> [KioskConfig.Item] = { [] }
    /// What was logged already.
    private struct Logged {
        var opens = Set<String>()
        /// The failure last logged for each file: a file is reported once per reason, not every loop.
        var errors = [String: String]()
        /// The entries of a playlist folder last logged as skipped (not regular files).
        var skipped = Set<SkippedEntry>()
        var lastLoop = 0
    }
    private let logged = Mutex(Logged())

    init(status: KioskStatus, role: WallRole, logger: Logger) {
        self.status = status
        self.role = role
        self.logger = logger
    }

    /// Where this session's output reports its state (`outputs[role.slot]`).
    var outputStatus: KioskStatus { role.outputStatus(own: status) }

    /// Whether `key` is reported for the first time (then it is remembered).
    func firstTime(_ key: String) -> Bool {
        logged.withLock { $0.opens.insert(key).inserted }
    }

    /// A new playlist: its files' failures are logged again.
    func forgetFailures() {
        logged.withLock { $0.errors.removeAll() }
    }

    func decoderOpened(uri: String, info: VideoStreamInfo, path: DecodingPath) {
        status.update {
            $0.hwdecCurrent = path.hwdecCurrent
            $0.hwdecInterop = path.interop
            $0.hwdecFallback = path.fallbackReason
            $0.hwdecDegraded = path.degraded
        }
        // Why hardware decoding or DMA-BUF import is not used: logged once per reason, not with
        // every file (the same long reason applies to every item). A named hardware path not in use
        // is a warning, and so is a failed DMA-BUF import; auto finding none is not.
        for (what, reason, serious) in [("hardware decoding not in use", path.fallbackReason, path.degraded),
                                        ("DMA-BUF import not in use", path.interopReason, path.interopFellBack)] {
            guard let reason, firstTime("reason|\(what)|\(reason)") else { continue }
            logger.log(serious ? .warning : .info, what, ["hwdec_current": path.hwdecCurrent, "hwdec_interop": path.interop, "reason": reason])
        }
        guard firstTime("\(uri)|\(path.hwdecCurrent)|\(path.interop)") else { return }
        // The item change itself is the info line ("playing"); how a file decodes is detail.
        logger.debug("opened", ["uri": uri, "codec": info.codec, "size": "\(info.width)x\(info.height)",
                                "fps": info.frameRate.formatted(decimals: 3), "pixel_format": info.pixelFormat,
                                "threads": "\(info.threads)", "hwdec_current": path.hwdecCurrent, "hwdec_interop": path.interop])
    }

    /// An item played to its end or failed, in loop pass `loop`.
    func itemEvent(_ event: Player.Event, loop: Int) {
        guard let index = event.item.playlistIndex else { return }
        switch event.event {
        case .didPlayToEndTime:
            status.update { s in
                guard index < s.items.count else { return }
                s.items[index].state = .played
                s.items[index].error = nil
            }
            logged.withLock { s in _ = s.errors.removeValue(forKey: event.item.asset.url.mediaLocation) }
            // end-file is sent when the next item starts (or the playlist ends): mpv's order.
        case .failedToPlayToEndTime(let error):
            let reason = "\(error)"
            status.update { s in
                guard index < s.items.count else { return }
                s.items[index].state = .failed
                s.items[index].error = reason
                s.items[index].failedInLoop = loop
            }
            logFailure(uri: event.item.asset.url.mediaLocation, reason: reason)
            let id = status.snapshot.entryID(at: index) ?? index + 1
            events.failed(event.item, id: id, reason: reason, send: onEvent)
        default:
            break
        }
    }

    /// Logs that `uri` cannot be played, unless the same reason was logged for it already. Called
    /// by the backend as soon as a probe or open fails (before presentation reaches the item), and
    /// for failures mid-stream when the player reports them.
    func logFailure(uri: String, reason: String) {
        guard logged.withLock({ s in s.errors.updateValue(reason, forKey: uri) != reason }) else { return }
        let items = playlist().enumerated().filter { $0.element.path == uri }.map { "\($0.offset + 1)" }
        logger.error("cannot play item; skipped", ["item": items.joined(separator: ","), "uri": uri, "error": reason])
    }

    /// A probe, open or read over `limit`: health is degraded for a while (the output's status,
    /// so that every output of a node counts), and the first one of a file in that while is logged.
    func slowStorage(uri: String, operation: String, seconds: Double, limit: Double, now: ContinuousClock.Instant = .now) {
        var first = false
        outputStatus.update { s in
            if var slow = s.slowStorage[uri], (now - slow.last).seconds < KioskStatus.slowStorageWindow {
                slow.count += 1
                if seconds > slow.seconds { (slow.seconds, slow.operation) = (seconds, operation) }
                slow.last = now
                s.slowStorage[uri] = slow
            } else {
                first = true
                s.slowStorage[uri] = .init(operation: operation, seconds: seconds, limit: limit, count: 1, last: now)
            }
        }
        if first {
            logger.warning("slow storage: a file took long to read", ["uri": uri, "operation": operation,
                                                                        "seconds": seconds.formatted(decimals: 2),
                                                                        "limit": limit.formatted(decimals: 1)])
        }
    }

    /// Whether loop pass `loop` is one not seen before (then it is remembered).
    func beginsLoopPass(_ loop: Int) -> Bool {
        logged.withLock { s -> Bool in
            defer { s.lastLoop = loop }
            return loop > s.lastLoop
        }
    }

    /// The player's current item is now `item` (nil: nothing plays), in loop pass `loop`.
    func itemChanged(to item: PlayerItem?, loop: Int) {
        let index = item?.playlistIndex
        status.update { s in
            s.position = index
            s.currentPath = item?.asset.url.mediaLocation
            s.loopPass = loop
            if let index, index < s.items.count, s.items[index].state != .failed { s.items[index].state = .playing }
        }
        let snapshot = status.snapshot
        let id = index.flatMap { snapshot.entryID(at: $0) }
        events.changed(to: item, id: id, send: onEvent)
        // One info line per item change, items counted from 1 as STATUS= and marqueectl count them.
        if let index, let item {
            logger.info("playing", ["item": "\(index + 1)", "of": "\(snapshot.items.count)", "uri": snapshot.items.indices.contains(index)
                                        ? snapshot.items[index].uri : item.asset.url.mediaLocation, "entry_id": id.map { "\($0)" } ?? "-"])
        }
    }

    /// The player's periodic time observation: `time` of `item`, with the player's `stats`.
    func timeObserved(_ time: MediaTime, item: PlayerItem?, paused: Bool, stats: PresentationStats,
                      now: ContinuousClock.Instant = .now) {
        status.update { s in
            if let index = item?.playlistIndex, s.position != index {
                s.position = index
                s.currentPath = item?.asset.url.mediaLocation
                if index < s.items.count, s.items[index].state != .failed { s.items[index].state = .playing }
            }
            // As mpv: no time-pos (nor duration) before the item is loaded.
            s.timePos = time.isNumeric && item?.status == .readyToPlay ? time.seconds : nil
            s.duration = item.map { $0.duration.isNumeric ? $0.duration.seconds : nil } ?? nil
            s.paused = paused
            for _ in 0..<min(max(stats.dropped - s.dropped, 0), 100) { s.recentDrops.append(now) }
            s.recentDrops.removeAll { now - $0 > .seconds(60) }
            s.dropped = stats.dropped
            s.cadenceDropped = stats.cadenceDropped
            s.decoderDropped = stats.decoderDropped
            s.delayed = stats.delayed
        }
    }

    /// Logs the entries of a playlist folder that are not played (not regular files), each time
    /// that set changes.
    func reportSkipped(_ skipped: [SkippedEntry], origin: KioskConfig.PlaylistOrigin) {
        guard case .directory(let folder) = origin, logged.withLock({ s -> Bool in
            defer { s.skipped = Set(skipped) }
            return s.skipped != Set(skipped)
        }) else { return }
        for entry in skipped {
            logger.warning("not a regular file; skipped", ["folder": folder, "name": entry.name, "kind": entry.kind])
        }
    }

    /// Tells supervision that this output's presentation thread runs: once a vsync while it
    /// presents (`idle`: why no new picture is due now), every check while it waits for a display.
    /// When an idle time or a display wait ends, new pictures are due from then on.
    func beat(idle: String?, waitingForDisplay: Bool = false, now: ContinuousClock.Instant = .now) {
        updateOutput { o in
            if idle != nil || o.idle != nil || waitingForDisplay || !o.connected { o.dueSince = now }
            o.idle = idle
            o.lastBeat = now
        }
    }

    /// Changes this session's entry in `outputStatus.outputs` (made when missing).
    func updateOutput(_ change: (inout KioskStatus.Output) -> Void) {
        guard role.reportsOutput else { return }  // a mosaic's further regions: the output is reported once
        outputStatus.update { s in
            while s.outputs.count <= role.slot { s.outputs.append(.init(name: "-", mode: "-", connected: false)) }
            change(&s.outputs[role.slot])
        }
    }

    /// Why `config`'s playlist has nothing to play, when it is a folder or M3U playlist that is
    /// empty now (the status thread reads it again and says more); nil otherwise.
    /// What the status says of `config` before it plays: its items, the schedule, the decoding
    /// asked for, and an empty playlist.
    static func describeStart(_ s: inout KioskStatus.Snapshot, _ config: KioskConfig, schedule: KioskStatus.ScheduleState?) {
        s.schedule = schedule
        s.replaceItems(statusItems(config))
        s.hwdecRequested = config.hardwareDecoding.rawValue
        s.playlistProblem = emptyPlaylistProblem(config)
    }

    static func emptyPlaylistProblem(_ config: KioskConfig) -> String? {
        guard config.playlist.isEmpty, !config.playlistUnread else { return nil }
        switch config.playlistOrigin {
        case .list: return nil
        case .directory(let folder): return "the folder \(folder) has no media files yet"
        case .m3u(let file): return "the M3U file \(file) lists nothing yet"
        case .remoteM3U(let url): return "the remote M3U \(url) has nothing cached yet"
        }
    }

    /// The playlist as the status (and so the control socket) gives it: entries listed in the
    /// config as written; entries of a folder or an M3U file by their path, as mpv gives the
    /// entries of a folder or a playlist file it was handed.
    static func statusItems(_ config: KioskConfig, range: Range<Int>? = nil) -> [KioskStatus.Item] {
        config.playlist[range ?? config.playlist.indices].map { entry in
            var item = KioskStatus.Item(uri: config.playlistOrigin == .list ? entry.uri : entry.path, path: entry.path)
            let transition = config.transition(into: entry)
            item.transition = transition.kind == .cut ? nil : transition
            return item
        }
    }
}
