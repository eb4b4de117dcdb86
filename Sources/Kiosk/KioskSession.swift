import Display
import Foundation
import Media
import Playback
import Render
import Synchronization

/// An output whose picture can be read back (for the control socket's `screenshot`).
public protocol ScreenshotSource {
    /// The picture now on the output, as cheaply as it can be copied (called on the presenting
    /// thread; the PNG is encoded on another).
    func readBack() throws -> RGBAImage
}

extension HeadlessOutput: ScreenshotSource {
    public func readBack() throws -> RGBAImage { try screenshotAsStored() }
}

/// An output the kiosk can present on: it draws `VideoFrame`s with a `PlayerLayer` into `bounds`.
public protocol KioskOutput: PresentationOutput where Frame == VideoFrame {
    var layer: PlayerLayer { get }
    var bounds: PixelRect { get }
}

extension HeadlessOutput: KioskOutput {}
extension KMSOutput: KioskOutput {}

/// One running kiosk: the playlist as a `QueuePlayer` (looped by a `PlayerLooper`), the status the
/// control socket reports, and the commands it sends. `run` presents on the calling thread;
/// `perform` may be called from any thread.
public final class KioskSession: @unchecked Sendable {
    // @unchecked: what changes after init is in `state` (a Mutex), or set before `run` (`onEvent`,
    // `onPicture`, `backend`, `clockSyncCheck`); the player, the status and the task queue are
    // thread-safe themselves. Never call into the player with `state` locked: the presentation
    // thread holds the player's lock while it waits for a decode
    // thread, and decode threads report here.
    public let status: KioskStatus
    public let player: QueuePlayer
    /// Sends control-socket events (`start-file`, `end-file`); set before `run`.
    public var onEvent: (@Sendable (JSONValue) -> Void)?
    /// Called on the presentation thread for each new picture of this session's output (time-pos
    /// moved): the control server reads observed properties again. Set before `run`.
    public var onPicture: (@Sendable () -> Void)?
    /// The events sent, in mpv's order; guarded by its own lock (also held while `onEvent` runs,
    /// so that events of the player's two streams leave in order).
    private let events = EventOrder()
    /// Wall sync's check of each new frame (presentation thread).
    private var clockSyncCheck: ((Int64, Player.Picture) -> Void)?

    private let logger: Logger
    private let configPath: String?
    /// Command-line overrides, applied again to every reloaded config.
    private let overrides: @Sendable (inout KioskConfig) -> Void
    /// What this session changes as it plays (commands, reloads, the player's reports), behind one lock.
    private struct State {
        var config: KioskConfig
        /// `config` before the choice of this output's region (what followers start from).
        var unselectedConfig: KioskConfig
        var looper: PlayerLooper?
        var loggedOpens = Set<String>()
        /// The failure last logged for each file: a file is reported once per reason, not every loop.
        var loggedErrors = [String: String]()
        /// The entries of a playlist folder last logged as skipped (not regular files).
        var loggedSkipped = Set<SkippedEntry>()
        var lastLoop = 0
        /// The name of the output presenting now (nil before `present`).
        var outputName: String?
        /// The sessions presenting this node's other wall outputs, and the further regions of a
        /// mosaic output.
        var followers: [KioskSession] = []
    }
    private let state: Mutex<State>
    private let stopped = Atomic(false)
    /// Set by `stop`: what the clock-quality thread waits on between its probes.
    private let stopRequested = Latch<Bool>()
    /// How many decoders this session's items have opened (a test's measure of seek/next bursts).
    let decoderOpens = Atomic(0)
    private let presentationTasks = PresentationTasks()
    /// Raised once a reader of this session has its first frames (`prerollFrames`), or reached its
    /// end, or a file failed: presentation starts then (`present`).
    private let firstFrames = Latch<Bool>()
    /// How many frames the first reader hands out before presentation starts: the first picture
    /// and the ones after it are ready when their vsyncs come.
    static let prerollFrames = 3
    /// How long presentation waits for them (seconds); then it starts anyway (the background
    /// shows until a picture comes).
    static let prerollLimit = 2.0
    private var backend: ReportingBackend!
    /// Where this session's output reports its state: `status.outputs[outputSlot]` (a follower
    /// writes into its leader's status; its own playlist state stays private).
    private let outputStatus: KioskStatus
    private let outputSlot: Int
    /// Which of the regions its output shows this session plays (0 but on a mosaic output).
    private let regionRank: Int
    private let node: String
    /// A probe, open or read of a file that takes longer than this (seconds) degrades health as
    /// slow storage.
    public static let slowStorageLimit = 2.0
    /// What this session's output can do, given when the session is made (its output has opened
    /// by then): the colour conversion, the texture limit and DMA-BUF import its decoders follow
    /// from their first frame.
    public let output: OutputCapabilities

    /// A session for an output that has opened: its players and decoders are made for `output`
    /// (what it said it can do as it opened), and playing starts here.
    /// - Parameter configPath: the file `reload` reads again (nil: reload is refused).
    /// - Parameter node: the wall node this process is (`--node`; nil: the host name). The session
    ///   presents the node's first wall output: the playlist of the region it shows.
    public convenience init(config: KioskConfig, configPath: String?, logger: Logger, node: String? = nil,
                            output: OutputCapabilities, overrides: @escaping @Sendable (inout KioskConfig) -> Void = { _ in }) {
        self.init(config: config, configPath: configPath, logger: logger, node: node ?? defaultWallNodeName(),
                  overrides: overrides, output: output, outputStatus: nil, outputSlot: 0)
    }

    /// A session whose media backend is `wrapBackend` of the FFmpeg one (tests: a decoder that
    /// blocks, a slow disk), with `slowStorageLimit` for what counts as a slow probe, open or read.
    convenience init(config: KioskConfig, logger: Logger, output: OutputCapabilities, slowStorageLimit: Double,
                     wrapBackend: @escaping (any MediaBackend) -> any MediaBackend) {
        self.init(config: config, configPath: nil, logger: logger, node: defaultWallNodeName(), overrides: { _ in },
                  output: output, outputStatus: nil, outputSlot: 0, slowStorageLimit: slowStorageLimit, wrapBackend: wrapBackend)
    }

    private init(config: KioskConfig, configPath: String?, logger: Logger, node: String,
                 overrides: @escaping @Sendable (inout KioskConfig) -> Void, output: OutputCapabilities,
                 outputStatus: KioskStatus?, outputSlot: Int, regionRank: Int = 0,
                 slowStorageLimit: Double = KioskSession.slowStorageLimit,
                 wrapBackend: ((any MediaBackend) -> any MediaBackend)? = nil) {
        self.output = output
        let status = KioskStatus()
        self.status = status
        self.outputStatus = outputStatus ?? status
        self.outputSlot = outputSlot
        self.regionRank = regionRank
        self.node = node
        let unselectedConfig = config
        let config = config.forWallOutput(outputSlot, node: node, regionRank: regionRank)
        state = Mutex(State(config: config, unselectedConfig: unselectedConfig))
        self.configPath = configPath
        self.overrides = overrides
        self.logger = logger
        player = QueuePlayer(logger: logger)
        // The output has opened: every decoder knows from its first frame what to give it.
        var ffmpeg = FFmpegBackend(hardware: config.hardwareDecoding, output: output,
                                   interop: DMABufInterop(support: output.dmabuf)) { [weak self] uri, info, path in
            self?.decoderOpened(uri: uri, info: info, path: path)
        }
        ffmpeg.onDownscale = { [weak self] uri, from, to in
            guard let self, state.withLock({ s in s.loggedOpens.insert("downscale|\(uri)").inserted }) else { return }
            logger.warning("picture larger than the output's largest texture; scaled down with swscale",
                           ["uri": uri, "from": from, "to": to])
        }
        ffmpeg.stillDuration = { [weak self] path in
            guard let self else { return nil }
            return state.withLock { s in s.config.playlist.first { $0.path == path }?.duration } ?? defaultStillDuration
        }
        ffmpeg.onConversion = { [weak self] uri, from, to in
            guard let self, state.withLock({ s in s.loggedOpens.insert("convert|\(uri)").inserted }) else { return }
            // Drawn correctly, at the cost of a CPU conversion per frame.
            logger.info("pixel format converted with swscale once per frame", ["uri": uri, "from": from, "to": to])
            status.update { $0.conversions[uri] = "\(from) -> \(to)" }
        }
        let firstFrames = firstFrames
        backend = ReportingBackend(inner: wrapBackend?(ffmpeg) ?? ffmpeg, slowLimit: slowStorageLimit, onFailure: { [weak self] url, error in
            firstFrames.set(true)
            self?.logFailure(uri: url.path, reason: "\(error)")
        }, onSlow: { [weak self] url, operation, seconds in
            self?.slowStorage(uri: url.path, operation: operation, seconds: seconds, limit: slowStorageLimit)
        }, onFramesReady: {
            firstFrames.set(true)
        }, onOpen: { [weak self] in
            self?.decoderOpens.add(1, ordering: .relaxed)
        })
        status.update {
            $0.replaceItems(Self.statusItems(config))
            $0.hwdecRequested = config.hardwareDecoding.rawValue
        }
        if case .directory = config.playlistOrigin {
            var skipped: [SkippedEntry] = []
            _ = try? expandPlaylist(config.playlistOrigin, skipped: &skipped)
            reportSkipped(skipped, origin: config.playlistOrigin)
        }
        watchPlayer()
        // With wall sync by the clock, playback starts when the output's vsyncs are known.
        if config.wall?.sync.mode != .clock {
            startPlaylist(config, afterCurrentItem: false)
            player.play()
        }
    }

    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Stops playback at the next vsync (this node's other outputs too).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        stopRequested.set(true)
        for follower in state.withLock({ s in s.followers }) { follower.stop() }
    }

    /// A session for another wall output of this node (`status.outputs[slot]`): the playlist of
    /// the region that output shows, on its own player, for its own output's thread. A node with
    /// several outputs plays by the clock (`KioskConfig.forWallOutput`), so all follow one
    /// timeline. Reloads and stops reach it through this one; other commands act on this session's
    /// player (under clock sync every output follows the clock).
    /// `output` is what that output said it can do as it opened (it opens before its session).
    public func makeFollower(slot: Int, output: OutputCapabilities, logger: Logger) -> KioskSession {
        makeFollower(slot: slot, regionRank: 0, output: output, logger: logger)
    }

    /// A session for the `regionRank`th region that output `slot` shows (a mosaic: the regions of
    /// one output draw through one layer, so they share its capabilities).
    func makeFollower(slot: Int, regionRank: Int, output: OutputCapabilities, logger: Logger) -> KioskSession {
        let follower = KioskSession(config: state.withLock { s in s.unselectedConfig }, configPath: nil, logger: logger, node: node,
                                    overrides: overrides, output: output, outputStatus: status, outputSlot: slot,
                                    regionRank: regionRank)
        state.withLock { s in s.followers.append(follower) }
        if isStopped { follower.stop() }
        return follower
    }

    // MARK: Playlist

    private func makeItems(_ config: KioskConfig, from first: Int = 0) -> [PlayerItem] {
        let list = config.playlist.enumerated().map { $0 }
        let ordered = Array(list[first...] + list[..<first])
        return ordered.map { index, entry in
            let item = PlayerItem(asset: Asset(url: URL(fileURLWithPath: entry.path), backend: backend))
            item.playlistIndex = index
            if let end = entry.end { item.forwardPlaybackEndTime = MediaTime(seconds: end, preferredTimescale: 90_000) }
            if let start = entry.start, start > 0 {
                item.seek(to: MediaTime(seconds: start, preferredTimescale: 90_000)) { _ in }
            }
            return item
        }
    }

    /// Queues `config`'s playlist from item `first`: looped, or once. With `afterCurrentItem` the
    /// item playing now finishes first (a reload takes over at the next item boundary).
    private func startPlaylist(_ config: KioskConfig, from first: Int = 0, afterCurrentItem: Bool) {
        var items = makeItems(config, from: first)
        if config.shuffle { items.shuffle() }
        let old = state.withLock { s -> PlayerLooper? in
            defer { s.looper = nil }
            return s.looper
        }
        old?.disableLooping()
        if config.loop {
            let newLooper = PlayerLooper(player: player, templateItems: items, afterCurrentItem: afterCurrentItem)
            state.withLock { s in s.looper = newLooper }
        } else {
            var after = afterCurrentItem ? player.currentItem : nil
            if !afterCurrentItem { player.removeAllItems() }
            for item in items {
                try? player.insert(item, after: after)
                after = item
            }
        }
    }

    // MARK: What the player says

    private func watchPlayer() {
        player.consumeEvents(onThread: "marquee-item-events") { [weak self] event in self?.itemEvent(event) }
        player.consumeChanges(onThread: "marquee-player-changes") { [weak self] change in self?.playerChange(change) }
        // Time observations come on the thread that drives the vsyncs, which must not wait here:
        // the latest one is handed to a status thread (one it has not read yet is superseded).
        let observed = Monitor<MediaTime?>(nil)
        _ = try? player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 4)) { time in
            observed.update { $0 = time }
        }
        let statusThread = Thread { [weak self] in
            while true {
                // The next observation, in slices of a second, until the session goes away.
                let time = observed.wait(until: { $0 != nil }, timeout: 1) { time, _ in
                    defer { time = nil }
                    return time
                }
                guard let self else { return }
                if let time { timeObserved(time) }
            }
        }
        statusThread.name = "marquee-status"
        statusThread.start()
    }

    private func decoderOpened(uri: String, info: VideoStreamInfo, path: DecodingPath) {
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
            guard let reason, state.withLock({ s in s.loggedOpens.insert("reason|\(what)|\(reason)").inserted }) else { continue }
            logger.log(serious ? .warning : .info, what, ["hwdec_current": path.hwdecCurrent, "hwdec_interop": path.interop, "reason": reason])
        }
        let key = "\(uri)|\(path.hwdecCurrent)|\(path.interop)"
        guard state.withLock({ s in s.loggedOpens.insert(key).inserted }) else { return }
        // The item change itself is the info line ("playing"); how a file decodes is detail.
        logger.debug("opened", ["uri": uri, "codec": info.codec, "size": "\(info.width)x\(info.height)",
                                "fps": info.frameRate.formatted(decimals: 3), "pixel_format": info.pixelFormat,
                                "threads": "\(info.threads)", "hwdec_current": path.hwdecCurrent, "hwdec_interop": path.interop])
    }

    private func itemEvent(_ event: Player.Event) {
        guard let index = event.item.playlistIndex else { return }
        let loop = state.withLock { s in s.looper }?.loopCount ?? 0
        switch event.event {
        case .didPlayToEndTime:
            status.update { s in
                guard index < s.items.count else { return }
                s.items[index].state = .played
                s.items[index].error = nil
            }
            state.withLock { s in _ = s.loggedErrors.removeValue(forKey: event.item.asset.url.path) }
            // end-file is sent when the next item starts (or the playlist ends): mpv's order.
        case .failedToPlayToEndTime(let error):
            let reason = "\(error)"
            status.update { s in
                guard index < s.items.count else { return }
                s.items[index].state = .failed
                s.items[index].error = reason
                s.items[index].failedInLoop = loop
            }
            logFailure(uri: event.item.asset.url.path, reason: reason)
            let id = status.snapshot.entryID(at: index) ?? index + 1
            events.failed(event.item, id: id, reason: reason, send: onEvent)
        default:
            break
        }
    }

    /// Logs that `uri` cannot be played, unless the same reason was logged for it already. Called
    /// by the backend as soon as a probe or open fails (before presentation reaches the item), and
    /// for failures mid-stream when the player reports them.
    private func logFailure(uri: String, reason: String) {
        guard state.withLock({ s in s.loggedErrors.updateValue(reason, forKey: uri) != reason }) else { return }
        let items = state.withLock { s in s.config.playlist.enumerated().filter { $0.element.path == uri }.map { "\($0.offset + 1)" } }
        logger.error("cannot play item; skipped", ["item": items.joined(separator: ","), "uri": uri, "error": reason])
    }

    /// A probe, open or read over `slowStorageLimit`: health is degraded for a while (the output's
    /// status, so that every output of a node counts), and the first one of a file in that while is logged.
    private func slowStorage(uri: String, operation: String, seconds: Double, limit: Double) {
        let now = ContinuousClock.now
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

    private func playerChange(_ change: Player.Change) {
        guard case .currentItem(let item) = change else { return }
        let loop = state.withLock { s in s.looper }?.loopCount ?? 0
        if state.withLock({ s -> Bool in
            defer { s.lastLoop = loop }
            return loop > s.lastLoop
        }) {
            rescanPlaylist()
        }
        let index = item?.playlistIndex
        status.update { s in
            s.position = index
            s.currentPath = item?.asset.url.path
            s.loopPass = loop
            if let index, index < s.items.count, s.items[index].state != .failed { s.items[index].state = .playing }
        }
        let snapshot = status.snapshot
        let id = index.flatMap { snapshot.entryID(at: $0) }
        events.changed(to: item, id: id, send: onEvent)
        // One info line per item change, items counted from 1 as STATUS= and marqueectl count them.
        if let index, let item {
            logger.info("playing", ["item": "\(index + 1)", "of": "\(snapshot.items.count)", "uri": snapshot.items.indices.contains(index)
                                        ? snapshot.items[index].uri : item.asset.url.path, "entry_id": id.map { "\($0)" } ?? "-"])
        }
    }

    private func timeObserved(_ time: MediaTime) {
        let stats = player.stats
        let item = player.currentItem
        let paused = player.rate == 0
        status.update { s in
            if let index = item?.playlistIndex, s.position != index {
                s.position = index
                s.currentPath = item?.asset.url.path
                if index < s.items.count, s.items[index].state != .failed { s.items[index].state = .playing }
            }
            // As mpv: no time-pos (nor duration) before the item is loaded.
            s.timePos = time.isNumeric && item?.status == .readyToPlay ? time.seconds : nil
            s.duration = item.map { $0.duration.isNumeric ? $0.duration.seconds : nil } ?? nil
            s.paused = paused
            let now = ContinuousClock.now
            for _ in 0..<min(max(stats.dropped - s.dropped, 0), 100) { s.recentDrops.append(now) }
            s.recentDrops.removeAll { now - $0 > .seconds(60) }
            s.dropped = stats.dropped
            s.delayed = stats.delayed
        }
    }

    /// A playlist read from a folder or an M3U file is read again at every loop pass; when it has
    /// changed, the new list takes over at the next item boundary.
    private func rescanPlaylist() {
        let current = state.withLock { s in s.config }
        guard current.playlistOrigin != .list else { return }
        let items: [KioskConfig.Item]
        var skipped: [SkippedEntry] = []
        do {
            items = try expandPlaylist(current.playlistOrigin, skipped: &skipped)
            reportSkipped(skipped, origin: current.playlistOrigin)
        } catch {
            logger.warning("cannot read the playlist again; the old one keeps playing", ["error": error.message])
            return
        }
        guard items.map(\.path) != current.playlist.map(\.path) else { return }
        var changed = current
        changed.playlist = items
        state.withLock { s in s.config = changed }
        status.update { $0.replaceItems(Self.statusItems(changed)) }
        startPlaylist(changed, afterCurrentItem: true)
        logger.info("playlist changed on disk; the new one starts at the next item boundary", ["items": "\(items.count)"])
    }

    /// The playlist as the status (and so the control socket) gives it: entries listed in the
    /// config as written; entries of a folder or an M3U file by their path, as mpv gives the
    /// entries of a folder or a playlist file it was handed.
    static func statusItems(_ config: KioskConfig) -> [KioskStatus.Item] {
        config.playlist.map { .init(uri: config.playlistOrigin == .list ? $0.uri : $0.path, path: $0.path) }
    }

    /// Logs the entries of a playlist folder that are not played (not regular files), each time
    /// that set changes.
    private func reportSkipped(_ skipped: [SkippedEntry], origin: KioskConfig.PlaylistOrigin) {
        guard case .directory(let folder) = origin, state.withLock({ s -> Bool in
            defer { s.loggedSkipped = Set(skipped) }
            return s.loggedSkipped != Set(skipped)
        }) else { return }
        for entry in skipped {
            logger.warning("not a regular file; skipped", ["folder": folder, "name": entry.name, "kind": entry.kind])
        }
    }

    // MARK: Commands

    /// Carries out a control command; may be called from any thread.
    public func perform(_ command: KioskCommand) -> KioskCommandResult {
        switch command {
        case .next:
            events.stopping()
            player.advanceToNextItem()
        case .previous:
            events.stopping()
            skip(-1)
        case .skip(let steps):
            events.stopping()
            skip(steps)
        case .play(let index):
            let config = state.withLock { s in s.config }
            guard config.playlist.indices.contains(index) else { return .failed("no playlist entry \(index)") }
            events.stopping()
            startPlaylist(config, from: index, afterCurrentItem: true)
            player.advanceToNextItem()
        case .load(let uris, let append):
            return load(uris, append: append)
        case .pause(let paused):
            if paused { player.pause() } else { player.play() }
            status.update { $0.paused = paused }
        case .seek(let seconds, let relative):
            let target = relative ? player.currentTime().seconds + seconds : seconds
            events.send(["event": "seek"], onEvent)
            player.seek(to: MediaTime(seconds: max(0, target), preferredTimescale: 90_000)) { [weak self] _ in
                guard let self else { return }
                events.send(["event": "playback-restart"], onEvent)
            }
        case .reload:
            return reload()
        case .screenshot(let output):
            if let output, let follower = state.withLock({ s in s.followers }).first(where: { f in f.state.withLock { $0.outputName } == output }) {
                return follower.perform(command)
            }
            return Self.screenshot(of: output, through: presentationTasks)
        case .quit:
            stop()
        }
        return .done
    }

    /// A screenshot of the output presenting through `tasks`: the presenting thread only copies the
    /// pixels (a few milliseconds at 1080p); the PNG is encoded on a thread of its own at nice 10,
    /// while the caller waits (at most 4 s for the copy and 30 s for the PNG).
    static func screenshot(of output: String?, through tasks: PresentationTasks) -> KioskCommandResult {
        let readBack = tasks.run(timeout: 4) { context -> Result<(RGBAImage, String), ScreenshotFailure> in
            if let output, output != context.name { return .failure(.init("no output named \(output) (this one is \(context.name))")) }
            guard let source = context.screenshots else { return .failure(.init("the \(context.name) output cannot take screenshots")) }
            do {
                return .success((try source.readBack(), context.name))
            } catch {
                return .failure(.init("screenshot of \(context.name) failed: \(error)"))
            }
        }
        switch readBack {
        case nil:
            return .failed("the output did not answer within 4 s")
        case .failure(let failure)?:
            return .failed(failure.message)
        case .success(let (image, name))?:
            // At low priority: the presenting and decoding threads come first for the CPU.
            let encoded = Latch<Result<Data, any Error>>()
            let encoder = Thread {
                lowerThisThreadsPriority()
                encoded.set(Result { try image.pngData() })
            }
            encoder.name = "marquee-screenshot"
            encoder.start()
            guard let result = encoded.wait(timeout: 30) else {
                return .failed("screenshot of \(name): the PNG was not encoded within 30 s")
            }
            switch result {
            case .success(let png): return .screenshot(png: png, width: image.width, height: image.height, output: name)
            case .failure(let error): return .failed("screenshot of \(name) failed: \(error)")
            }
        }
    }

    /// `loadfile`/`loadlist`: `uris` (relative ones from the working folder, as mpv takes them)
    /// become the playlist, from now, or join its end. The playlist is then a list (a folder or
    /// M3U playlist is no longer read again).
    private func load(_ uris: [String], append: Bool) -> KioskCommandResult {
        let folder = FileManager.default.currentDirectoryPath
        let added = uris.map { uri in
            KioskConfig.Item(uri: uri, path: uri.hasPrefix("/") ? uri : (folder as NSString).appendingPathComponent(uri))
        }
        let changed = state.withLock { s -> KioskConfig in
            s.config.playlist = append ? s.config.playlist + added : added
            s.config.playlistOrigin = .list
            return s.config
        }
        var firstID = 0
        status.update { s in
            let items = added.map { KioskStatus.Item(uri: $0.uri, path: $0.path) }
            if append {
                firstID = s.appendItems(items)
            } else {
                s.replaceItems(items)
                firstID = s.entryID(at: 0) ?? 0
            }
        }
        let count = changed.playlist.count
        if append {
            // The item playing goes on; the list, now longer, follows it.
            let current = player.currentItem?.playlistIndex ?? -1
            startPlaylist(changed, from: (current + 1) % count, afterCurrentItem: true)
        } else {
            events.stopping()
            startPlaylist(changed, from: 0, afterCurrentItem: true)
            player.advanceToNextItem()
        }
        logger.info(append ? "files appended to the playlist" : "playlist replaced", ["files": "\(uris.count)", "items": "\(count)"])
        return .loaded(entryID: firstID)
    }

    /// `steps` items on (back when negative): one step on keeps the next item's preroll; any other
    /// step queues the playlist from the target item, so the skipped items open no decoder.
    private func skip(_ steps: Int) {
        guard steps != 0 else { return }
        if steps == 1 { return player.advanceToNextItem() }
        let config = state.withLock { s in s.config }
        let count = config.playlist.count
        guard count > 0 else { return }
        let current = player.currentItem?.playlistIndex ?? 0
        let target = ((current + steps % count) % count + count) % count
        startPlaylist(config, from: target, afterCurrentItem: true)
        player.advanceToNextItem()
    }

    /// Reads the config file again. A broken one is refused (the old playlist keeps playing and
    /// health says why); a good one takes over at the next item boundary.
    public func reload() -> KioskCommandResult {
        guard let configPath else { return .failed("no config file to reload (started with the embedded default)") }
        var loaded: KioskConfig
        do {
            loaded = try KioskConfig.load(path: configPath)
            overrides(&loaded)
        } catch {
            status.update { $0.reloadError = "\(error)" }
            logger.error("reload refused; the old config keeps playing", ["config": configPath, "error": "\(error)"])
            return .failed("\(error)")
        }
        let old = state.withLock { s in s.config }
        // Every output of the node restarts on the same moment of the new timeline.
        let newConfig = adopt(loaded, restartAt: ClockSync.gridPoint(after: WallTime.now() + 600_000_000))
        if old.display.mode != newConfig.display.mode || old.display.output != newConfig.display.output {
            logger.warning("display settings change at the next start; the playlist changes now", ["config": configPath])
        }
        logger.info(newConfig.wall?.sync.mode == .clock ? "reloaded; the new playlist's timeline starts now, on the clock"
                                                        : "reloaded; the new playlist starts at the next item boundary",
                    ["config": configPath, "items": "\(newConfig.playlist.count)"])
        return .done
    }

    /// Plays a reloaded config's playlist (the one of this session's wall output), and has its
    /// followers do the same. Returns this session's part of the config.
    @discardableResult
    private func adopt(_ loaded: KioskConfig, restartAt: WallTime) -> KioskConfig {
        let newConfig = loaded.forWallOutput(outputSlot, node: node, regionRank: regionRank)
        state.withLock { s in
            s.config = newConfig
            s.unselectedConfig = loaded
        }
        status.update {
            $0.reloadError = nil
            $0.replaceItems(Self.statusItems(newConfig))
        }
        state.withLock { s in s.loggedErrors.removeAll() }
        for follower in state.withLock({ s in s.followers }) { follower.adopt(loaded, restartAt: restartAt) }
        if let sync = newConfig.wall?.sync, sync.mode == .clock {
            // A mosaic's further regions are restarted by the session of their output.
            guard regionRank == 0 else { return newConfig }
            // A new playlist is a new timeline: every node restarts at the clock's position on it
            // (on the presentation thread, which owns the wall sync).
            let restarted = presentationTasks.run(timeout: 4) { [self] context -> KioskCommandResult in
                do {
                    try startClockSync(newConfig, epoch: sync.epoch, clock: context.clock, at: restartAt)
                    // This output's further regions (a mosaic).
                    for region in state.withLock({ s in s.followers }) where region.regionRank > 0 {
                        try region.startClockSync(region.state.withLock { $0.config }, epoch: sync.epoch, clock: context.clock,
                                                  at: restartAt)
                    }
                    return .done
                } catch {
                    logger.error("wall sync: cannot restart on the reloaded playlist", ["error": "\(error)"])
                    return .failed("\(error)")
                }
            }
            if restarted == nil {
                logger.warning("wall sync: the output did not restart on the reloaded playlist within 4 s", ["output": state.withLock { $0.outputName } ?? "-"])
            }
        } else {
            startPlaylist(newConfig, afterCurrentItem: true)
        }
        return newConfig
    }

    // MARK: Presentation

    /// Presents on `output` until stopped, `exitAfter` passes, `shouldContinue` says no, or a
    /// playlist without loop has played out. Runs on the output's thread.
    /// `trace` gets a line per picture change (shared by the outputs of a node).
    public func present<Output: KioskOutput>(on output: Output, options: RunOptions, trace: TraceWriter?,
                                             shouldContinue: @escaping () -> Bool,
                                             onVsync: ((Int64) -> Void)? = nil) throws -> PresentationStats {
        let layer = output.layer
        // A mosaic output shows several regions: a session of its own plays each further one.
        let regions = (1..<max(1, layer.mosaicRegions.count)).map { rank in
            makeFollower(slot: outputSlot, regionRank: rank, output: self.output, logger: logger.with(["region": "\(rank)"]))
        }
        defer { for region in regions { region.player.removeAllItems() } }  // ends their decode threads
        let presenter = try PlayerPresenter(players: [player] + regions.map(\.player), output: output, trace: trace, logger: logger,
                                            exitAfter: options.exitAfter.map { MediaTime(seconds: $0, preferredTimescale: 1_000_000) })
        let context = PresentationContext(name: output.name, width: output.bounds.width, height: output.bounds.height,
                                          screenshots: output as? ScreenshotSource, clock: output.clock)
        state.withLock { s in s.outputName = output.name }
        let presentingSince = ContinuousClock.now
        updateOutput {
            $0 = .init(name: output.name, mode: "\(output.bounds.width)x\(output.bounds.height)@\(output.clock.refresh)")
            $0.lastBeat = presentingSince
            $0.dueSince = presentingSince
        }
        // Supervision: the players this output shows, idle only when all of them are.
        let shownPlayers = [player] + regions.map(\.player)
        var lastItem: ObjectIdentifier?
        presenter.willPresent = { [unowned self] lane, item in
            // The item's own gravity, else the display's: looked up when the item changes (a
            // mosaic's regions have theirs).
            guard lane == 0, regions.isEmpty, ObjectIdentifier(item) != lastItem else { return }
            lastItem = ObjectIdentifier(item)
            let index = item.playlistIndex ?? -1
            let config = state.withLock { $0.config }
            layer.gravity = config.playlist.indices.contains(index) ? config.playlist[index].gravity ?? config.display.gravity
                                                                    : config.display.gravity
        }
        var shownCount = 0
        presenter.didPresent = { [self] lane, shown, picture in
            // A new picture: what tells supervision that presentation progresses.
            let now = ContinuousClock.now, lasts = picture.frame?.duration.seconds ?? 0
            updateOutput { o in
                o.lastPicture = now
                o.pictureDuration = lasts.isFinite ? max(0, lasts) : 0
            }
            guard lane == 0 else { return regions[lane - 1].clockSyncCheck?(shown, picture) ?? () }
            if picture.isNew, picture.itemTime.isNumeric {
                // time-pos as mpv's: the time of the picture on screen, each new picture.
                let duration = picture.item.map { $0.duration.isNumeric ? $0.duration.seconds : nil } ?? nil
                status.update {
                    $0.timePos = picture.itemTime.seconds
                    if let duration { $0.duration = duration }
                }
                onPicture?()
            }
            shownCount += 1
            clockSyncCheck?(shown, picture)
        }
        var reportedNotDrawn = 0
        presenter.onVsync = { [presentationTasks, status, self] n in
            presentationTasks.drain(context)
            beat(idle: shownPlayers.allSatisfy { $0.rate == 0 } ? "paused"
                     : shownPlayers.allSatisfy { $0.currentItem == nil } ? "nothing to play" : nil)
            if n % 30 == 0 {
                // What the display measures (page-flip times) where it can; the mode's rate elsewhere.
                let flips = output.clock as? PageFlipClock
                let fps = flips?.measuredRefresh ?? output.clock.refresh.hertz
                let jitter = flips?.jitter ?? 0
                let rect = layer.videoRect.map { [$0.x, $0.y, $0.width, $0.height] }
                if outputSlot == 0 {
                    status.update {
                        $0.displayFPS = fps
                        $0.vsyncJitter = jitter
                    }
                }
                let notDrawn = layer.framesNotDrawn
                if notDrawn > reportedNotDrawn {
                    logger.warning("hardware frames could be neither imported nor copied; shown as background", ["frames": "\(notDrawn)"])
                    reportedNotDrawn = notDrawn
                }
                updateOutput { o in
                    o.videoRect = rect
                    o.framesNotDrawn = notDrawn
                }
            }
            onVsync?(n)
        }
        let (loop, current) = state.withLock { s in (s.config.loop, s.config) }
        if current.wall?.sync.mode != .clock {
            // The players started decoding when they were made, just now (after the output had
            // opened): the first pictures are decoded before the first vsync is asked for.
            // (Under wall sync the start is a moment on the clock, half a second or more ahead.)
            let deadline = ContinuousClock.now + .milliseconds(Int(Self.prerollLimit * 1000))
            for session in [self] + regions
            where session.firstFrames.wait(timeout: max(0, (deadline - ContinuousClock.now).seconds)) == nil {
                logger.info("no first frames within the preroll limit; presenting anyway",
                            ["limit_s": Self.prerollLimit.formatted(decimals: 1), "output": output.name])
                break
            }
        }
        if let sync = current.wall?.sync, sync.mode == .clock {
            try startClockSync(current, epoch: sync.epoch, clock: output.clock)
            for region in regions {
                try region.startClockSync(region.state.withLock { $0.config }, epoch: sync.epoch, clock: output.clock)
            }
            if outputSlot == 0 { watchClockQuality() }
        }
        return try presenter.run(stopWhenEmpty: !loop) { [self] in
            !isStopped && shouldContinue() && shownCount < options.exitAfterFrames ?? .max
        }
    }

    /// Asks the clock service how good the system clock is, now and every 30 s until stopped, on
    /// a thread of its own; health and `wall-sync` report it, and a change is logged.
    private func watchClockQuality(every interval: Double = 30) {
        status.update { $0.wallSync = "clock" }
        Thread.detachNewThread { [self] in
            var last: ClockQuality?
            while !isStopped {
                let quality = ClockQuality.probe()
                status.update { $0.clockQuality = quality }
                if quality.source != last?.source || quality.synchronized != last?.synchronized {
                    let fields: KeyValuePairs = ["source": quality.source, "detail": quality.detail,
                                                 "offset_ms": quality.offset.map { ($0 * 1000).formatted(decimals: 3) } ?? "-"]
                    if quality.synchronized || quality.source == "none" {
                        logger.info(quality.source == "none" ? "wall sync: no clock service to ask how good the clock is"
                                                             : "wall sync: the system clock is synchronised", fields)
                    } else {
                        logger.warning("wall sync: the system clock is not synchronised", fields)
                    }
                }
                last = quality
                // The next probe, or the stop, whichever comes first.
                _ = stopRequested.wait(timeout: interval)
            }
        }
    }

    /// Tells supervision that this output's presentation thread runs: once a vsync while it
    /// presents (`idle`: why no new picture is due now), every check while it waits for a display.
    /// When an idle time or a display wait ends, new pictures are due from then on.
    func beat(idle: String?, waitingForDisplay: Bool = false) {
        let now = ContinuousClock.now
        updateOutput { o in
            if idle != nil || o.idle != nil || waitingForDisplay || !o.connected { o.dueSince = now }
            o.idle = idle
            o.lastBeat = now
        }
    }

    /// Changes this session's entry in `outputStatus.outputs` (made when missing).
    func updateOutput(_ change: (inout KioskStatus.Output) -> Void) {
        guard regionRank == 0 else { return }  // a mosaic's further regions: the output is reported once
        outputStatus.update { s in
            while s.outputs.count <= outputSlot { s.outputs.append(.init(name: "-", mode: "-", connected: false)) }
            change(&s.outputs[outputSlot])
        }
    }

    /// Wall sync by the clock: probes every item for its length (the loop's timeline; an item
    /// whose first frame does not decode is left out, as every node leaves it out), starts the
    /// player at the clock's position of a moment half a second or more ahead (on a quarter-second
    /// grid shared by every output), and keeps it there frame by frame.
    func startClockSync(_ config: KioskConfig, epoch: WallTime, clock: any VsyncClock, at shared: WallTime? = nil) throws {
        var playable = config
        playable.playlist = []
        var indices: [Int] = [], durations: [MediaTime] = [], starts: [MediaTime] = []
        for (index, item) in config.playlist.enumerated() {
            // Probing a long playlist takes a while: the presentation thread is alive meanwhile.
            if index > 0 { beat(idle: "probing the playlist for the wall's timeline") }
            let url = URL(fileURLWithPath: item.path)
            guard let length = try? backend.probe(url).duration, length.isNumeric, (try? backend.checkFirstFrame(url)) != nil else { continue }
            let start = MediaTime(seconds: item.start ?? 0, preferredTimescale: 90_000)
            let end = item.end.map { MediaTime(seconds: $0, preferredTimescale: 90_000) } ?? length
            guard end > start else { continue }
            playable.playlist.append(item)
            indices.append(index)
            durations.append(end - start)
            starts.append(start)
        }
        guard !durations.isEmpty else {
            logger.error("wall sync: no item of the playlist can be played")
            return
        }
        let sync = ClockSync(timeline: try WallTimeline(epoch: epoch, durations: durations), playlistIndices: indices,
                             fileStarts: starts, logger: logger)
        let refresh = clock.refresh
        // The vsync playback starts moving on; until then the frame of that moment is held, and
        // is not checked against the clock.
        final class StartVsync: @unchecked Sendable { var value: Int64 = 0 }  // presentation thread only
        let moving = StartVsync()
        let start = { [self] (earliest: Int64, shared: WallTime?) in
            // A wall time shared by every output: while they wait for it they all hold the frame
            // of that moment.
            let (vsync, wall) = ClockSync.startPoint(earliest: earliest, at: shared, interval: refresh.interval.seconds,
                                                     wallTime: clock.wallTime(ofVsync:))
            moving.value = vsync
            let position = sync.timeline.position(at: wall)
            startPlaylist(playable, from: position.index, afterCurrentItem: false)
            player.automaticallyWaitsToMinimizeStalling = false
            try? player.setRate(1, time: starts[position.index] + position.itemTime, atHostTime: clock.time(ofVsync: vsync))
            logger.info("wall sync: starting on the clock's position", ["position": "\(position)", "vsync": "\(vsync)",
                                                                        "loop_s": sync.timeline.length.seconds.formatted(decimals: 3)])
        }
        start(clock.earliestVsync(after: -1), shared)
        clockSyncCheck = { [player, weak self] shown, picture in
            guard shown >= moving.value, let item = picture.item, let index = item.playlistIndex, index < starts.count,
                  let wall = clock.wallTime(ofVsync: shown) else { return }
            let action = sync.check(vsync: shown, wall: wall, index: index, itemTime: picture.itemTime - starts[index], refresh: refresh)
            switch action {
            case .none: break
            case .shift(let vsyncs): player.shiftTimeline(byVsyncs: vsyncs)
            case .restart: start(shown, nil)
            }
            self?.updateOutput { o in
                o.syncErrorMs = sync.lastError.map { $0 * 1000 }
                o.syncRepeated = sync.repeated
                o.syncSkipped = sync.skipped
                o.syncRestarts = sync.resyncs
            }
        }
    }
}

/// What a task on the presentation thread may use.
struct PresentationContext {
    let name: String
    let width: Int
    let height: Int
    let screenshots: ScreenshotSource?
    let clock: any VsyncClock
}

/// Gives the calling thread a nice value of 10. (On Linux the nice value is each thread's own, and
/// `who` 0 is the calling thread.)
private func lowerThisThreadsPriority() {
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
}

/// Why a screenshot could not be read back.
struct ScreenshotFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Work handed to the presentation thread (where the GL context is current), run between vsyncs.
/// It must be short (a copy, a restart): the PNG of a screenshot is encoded by the caller.
final class PresentationTasks: @unchecked Sendable {
    // @unchecked: the tasks (closures of the threads that hand them over) are kept in a Monitor.
    private let tasks = Monitor<[(PresentationContext) -> Void]>([])

    /// Runs `body` on the presentation thread and waits up to `timeout` seconds for its result
    /// (nil: none came in time).
    func run<Value: Sendable>(timeout: Double, _ body: @escaping (PresentationContext) -> Value) -> Value? {
        let done = Latch<Value>()
        tasks.withLock { $0.append { context in done.set(body(context)) } }
        return done.wait(timeout: timeout)
    }

    func drain(_ context: PresentationContext) {
        let pending = tasks.withLock { tasks -> [(PresentationContext) -> Void] in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in pending { task(context) }
    }
}

/// A media backend that reports every failure to probe or open a file as soon as it happens, and
/// every probe, open or read that takes longer than `slowLimit` seconds (slow storage).
struct ReportingBackend: MediaBackend {
    let inner: any MediaBackend
    let slowLimit: Double
    let onFailure: @Sendable (URL, any Error) -> Void
    let onSlow: @Sendable (URL, String, Double) -> Void
    /// Told when a reader has handed out its first `KioskSession.prerollFrames` frames, or its end.
    var onFramesReady: @Sendable () -> Void = {}
    /// Told of every reader (decoder) opened.
    var onOpen: @Sendable () -> Void = {}

    func probe(_ url: URL) throws -> AssetDescription { try reporting(url, "probe") { try inner.probe(url) } }

    func openReader(_ url: URL) throws -> any FrameReader {
        onOpen()
        return TimedReader(inner: try reporting(url, "open") { try inner.openReader(url) }, url: url, slowLimit: slowLimit, onSlow: onSlow,
                           onFramesReady: onFramesReady)
    }

    func checkFirstFrame(_ url: URL) throws { try reporting(url, "first frame") { try inner.checkFirstFrame(url) } }

    private func reporting<T>(_ url: URL, _ operation: String, _ body: () throws -> T) throws -> T {
        let start = ContinuousClock.now
        defer {
            let took = (ContinuousClock.now - start).seconds
            if took > slowLimit { onSlow(url, operation, took) }
        }
        do { return try body() } catch {
            onFailure(url, error)
            throw error
        }
    }
}

/// A reader that reports a read or seek taking longer than `slowLimit` seconds, and when it has
/// handed out its first `KioskSession.prerollFrames` frames (or its end, or an error).
final class TimedReader: FrameReader {
    let inner: any FrameReader
    let url: URL
    let slowLimit: Double
    let onSlow: @Sendable (URL, String, Double) -> Void
    private var onFramesReady: (@Sendable () -> Void)?
    private var handedOut = 0

    init(inner: any FrameReader, url: URL, slowLimit: Double, onSlow: @escaping @Sendable (URL, String, Double) -> Void,
         onFramesReady: (@Sendable () -> Void)? = nil) {
        self.inner = inner
        self.url = url
        self.slowLimit = slowLimit
        self.onSlow = onSlow
        self.onFramesReady = onFramesReady
    }

    func nextFrame() throws -> (any PresentableFrame)? {
        let start = ContinuousClock.now
        defer { timed("read", since: start) }
        do {
            let frame = try inner.nextFrame()
            handedOut += 1
            if frame == nil || handedOut >= KioskSession.prerollFrames { framesReady() }
            return frame
        } catch {
            framesReady()
            throw error
        }
    }

    private func framesReady() {
        onFramesReady?()
        onFramesReady = nil
    }

    func seek(to time: MediaTime) throws {
        let start = ContinuousClock.now
        defer { timed("seek", since: start) }
        try inner.seek(to: time)
    }

    var canceller: (@Sendable () -> Void)? { inner.canceller }

    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
        inner.setFrameDrop(drop, discardingFramesEndingBy: clock)
    }

    private func timed(_ operation: String, since start: ContinuousClock.Instant) {
        let took = (ContinuousClock.now - start).seconds
        if took > slowLimit { onSlow(url, operation, took) }
    }
}

/// The control socket's events in mpv's order: `end-file` of an item (reason `eof`, `stop` when a
/// command moved on, `error`) always before the next `start-file`, which is followed by
/// `file-loaded`, `video-reconfig` and `playback-restart`; an item that failed before it started
/// (skipped while the one before played) is reported as its `start-file` and `end-file` between
/// them; `idle` when the playlist has played out. The player reports item ends and item changes
/// on two streams: this puts them in order.
final class EventOrder: Sendable {
    /// Held while events are handed on.
    private struct State {
        weak var started: PlayerItem?
        var startedID: Int?
        var startedEnded = false
        var stopPending = false
        /// Failures of items that never started, sent at the next change.
        var pending: [JSONValue] = []
        /// The last item whose end-file went out (a late failure report of it is not sent again).
        var lastEnded: ObjectIdentifier?
    }
    private let state = Mutex(State())

    /// A command moves on (the item playing ends with reason `stop`).
    func stopping() { state.withLock { $0.stopPending = true } }

    func send(_ event: JSONValue, _ send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { _ in send?(event) }
    }

    /// The player's current item is now `item` (nil: nothing plays).
    func changed(to item: PlayerItem?, id: Int?, send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { s in
            if let item, item === s.started { return }
            var out: [JSONValue] = []
            if let startedID = s.startedID, !s.startedEnded {
                let failed = s.started?.status == .failed
                var end: [(key: String, value: JSONValue)] = [("event", "end-file"),
                                                             ("reason", .string(s.stopPending ? "stop" : failed ? "error" : "eof")),
                                                             ("playlist_entry_id", .number(Double(startedID)))]
                if failed && !s.stopPending, let error = s.started?.error { end.append(("file_error", .string("\(error)"))) }
                out.append(.object(end))
                s.lastEnded = s.started.map(ObjectIdentifier.init)
            }
            out += s.pending
            s.pending = []
            s.stopPending = false
            if let item, let id {
                s.started = item
                s.startedID = id
                s.startedEnded = false
                out += [["event": "start-file", "playlist_entry_id": .number(Double(id))], ["event": "file-loaded"],
                        ["event": "video-reconfig"], ["event": "playback-restart"]]
            } else {
                s.started = nil
                s.startedID = nil
                if item == nil { out.append(["event": "idle"]) }
            }
            for event in out { send?(event) }
        }
    }

    /// `item` could not be played to its end.
    func failed(_ item: PlayerItem, id: Int, reason: String, send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { s in
            let end: JSONValue = ["event": "end-file", "reason": "error", "playlist_entry_id": .number(Double(id)), "file_error": .string(reason)]
            if item === s.started {
                guard !s.startedEnded else { return }
                s.startedEnded = true
                s.lastEnded = ObjectIdentifier(item)
                send?(end)
            } else if s.lastEnded != ObjectIdentifier(item) {
                s.lastEnded = ObjectIdentifier(item)
                s.pending += [["event": "start-file", "playlist_entry_id": .number(Double(id))], end]
            }
        }
    }
}
