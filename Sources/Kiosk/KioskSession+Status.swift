import Foundation
import Media
import Playback
import Synchronization

extension KioskSession {
    // MARK: What the player says

    func watchPlayer() {
        player.consumeEvents(onThread: "marquee-item-events") { [weak self] event in self?.itemEvent(event) }
        player.consumeChanges(onThread: "marquee-player-changes") { [weak self] change in self?.playerChange(change) }
        // Time observations come on the player's callback thread, which should not wait here: the
        // latest one is handed to a status thread (one it has not read yet is superseded).
        let observed = Monitor<MediaTime?>(nil)
        _ = try? player.addPeriodicTimeObserver(forInterval: MediaTime(value: 1, timescale: 4)) { time in
            observed.update { $0 = time }
        }
        startThread(named: "marquee-status") { [weak self] in
            var lastRead: ContinuousClock.Instant?
            while true {
                if let self, lastRead.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                    // A playlist with nothing in it (an empty folder, an M3U not there yet) is read
                    // again every second; a folder once at start, to log what it leaves out.
                    let first = lastRead == nil
                    lastRead = .now
                    let config = state.withLock { s in s.config }
                    if case .directory = config.playlistOrigin, first { rescanPlaylist() }
                    else if config.playlistUnread, !rescanning.load(ordering: .relaxed) {
                        // A config's M3U left for now (a million lines take seconds): read on a
                        // thread of its own, so this one goes on updating the status.
                        startThread(named: "marquee-load") { [weak self] in self?.rescanPlaylist() }
                    } else if config.playlistOrigin != .list && config.playlist.isEmpty { rescanPlaylist() }
                }
                // The next observation, in slices of a second, until the session goes away.
                let time = observed.wait(until: { $0 != nil }, timeout: 1) { time, _ in
                    defer { time = nil }
                    return time
                }
                guard let self else { return }
                if let time { timeObserved(time) }
            }
        }
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

    func itemEvent(_ event: Player.Event) {
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
    func logFailure(uri: String, reason: String) {
        guard state.withLock({ s in s.loggedErrors.updateValue(reason, forKey: uri) != reason }) else { return }
        let items = state.withLock { s in s.config.playlist.enumerated().filter { $0.element.path == uri }.map { "\($0.offset + 1)" } }
        logger.error("cannot play item; skipped", ["item": items.joined(separator: ","), "uri": uri, "error": reason])
    }

    /// A probe, open or read over `slowStorageLimit`: health is degraded for a while (the output's
    /// status, so that every output of a node counts), and the first one of a file in that while is logged.
    func slowStorage(uri: String, operation: String, seconds: Double, limit: Double) {
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

    func playerChange(_ change: Player.Change) {
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

    func timeObserved(_ time: MediaTime) {
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
            s.cadenceDropped = stats.cadenceDropped
            s.decoderDropped = stats.decoderDropped
            s.delayed = stats.delayed
        }
    }

    /// A playlist read from a folder or an M3U file is read again at every loop pass; when it has
    /// changed, the new list takes over at the next item boundary.
    func rescanPlaylist() {
        // One reader at a time: the other one's result is as new.
        guard rescanning.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { rescanning.store(false, ordering: .releasing) }
        var current = state.withLock { s in s.config }
        guard current.playlistOrigin != .list else { return }
        // A long list not read yet: its first entries play while the rest is read.
        if current.playlistUnread, let head = playHead(of: current) { current = head }
        let items: [KioskConfig.Item]
        var skipped: [SkippedEntry] = []
        do {
            items = try expandPlaylist(current.playlistOrigin, skipped: &skipped)
            reportSkipped(skipped, origin: current.playlistOrigin)
        } catch {
            // Logged once per reason: an empty folder is read every second until files come.
            let message = error.message
            let first = state.withLock { s -> Bool in
                defer { s.loggedPlaylistProblem = message }
                return s.loggedPlaylistProblem != message
            }
            if current.playlist.isEmpty {
                status.update { $0.playlistProblem = message }
                if first { logger.warning("nothing to play: the playlist cannot be read; it is read again every second", ["error": message]) }
            } else if first {
                logger.warning("cannot read the playlist again; the old one keeps playing", ["error": message])
            }
            return
        }
        state.withLock { s in s.loggedPlaylistProblem = nil }
        guard current.playlistUnread || items.map(\.path) != current.playlist.map(\.path) else { return }
        var changed = current
        changed.playlist = items
        changed.playlistUnread = false
        let head = current.playlist.count
        if current.playlistUnread, head > 0, head < items.count, current.loop, !current.shuffle,
           items[..<head].map(\.path) == current.playlist.map(\.path) {
            // The head plays: the rest joins the end of the looped list, nothing queued changes.
            guard state.withLock({ s -> Bool in
                guard s.config.playlistUnread, s.config.playlist.count == head, s.config.playlistOrigin == current.playlistOrigin else { return false }
                s.config = changed
                return true
            }) else { return }
            // Numbered outside the status lock (the presenting thread takes it every vsync).
            var rest = Self.statusItems(changed, range: head..<items.count)
            var firstID = 0
            status.update { s in
                firstID = s.nextEntryID
                s.nextEntryID += rest.count
            }
            for i in rest.indices { rest[i].id = firstID + i }
            status.update { [rest] s in s.items.append(contentsOf: rest) }
            state.withLock { s in s.looper }?.append(templates: templates(changed, range: head..<items.count))
            logger.info("playlist read", ["items": "\(items.count)"])
            return
        }
        // Only if no reload, command or schedule change replaced the playlist meanwhile.
        guard state.withLock({ s -> Bool in
            guard s.config.playlist.map(\.path) == current.playlist.map(\.path), s.config.playlistOrigin == current.playlistOrigin,
                  s.config.playlistUnread == current.playlistUnread else { return false }
            s.config = changed
            return true
        }) else { return }
        status.update {
            $0.replaceItems(Self.statusItems(changed))
            $0.playlistProblem = nil
        }
        startPlaylist(changed, afterCurrentItem: true)
        logger.info(current.playlist.isEmpty ? "playlist has items now; playing" : "playlist changed on disk; the new one starts at the next item boundary",
                    ["items": "\(items.count)"])
    }

    /// Why `config`'s playlist has nothing to play, when it is a folder or M3U playlist that is
    /// empty now (the status thread reads it again and says more); nil otherwise.
    static func emptyPlaylistProblem(_ config: KioskConfig) -> String? {
        guard config.playlist.isEmpty, !config.playlistUnread else { return nil }
        switch config.playlistOrigin {
        case .list: return nil
        case .directory(let folder): return "the folder \(folder) has no media files yet"
        case .m3u(let file): return "the M3U file \(file) lists nothing yet"
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

    /// Logs the entries of a playlist folder that are not played (not regular files), each time
    /// that set changes.
    func reportSkipped(_ skipped: [SkippedEntry], origin: KioskConfig.PlaylistOrigin) {
        guard case .directory(let folder) = origin, state.withLock({ s -> Bool in
            defer { s.loggedSkipped = Set(skipped) }
            return s.loggedSkipped != Set(skipped)
        }) else { return }
        for entry in skipped {
            logger.warning("not a regular file; skipped", ["folder": folder, "name": entry.name, "kind": entry.kind])
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
        guard role.reportsOutput else { return }  // a mosaic's further regions: the output is reported once
        outputStatus.update { s in
            while s.outputs.count <= role.slot { s.outputs.append(.init(name: "-", mode: "-", connected: false)) }
            change(&s.outputs[role.slot])
        }
    }
}

extension KioskSession {
    /// How many entries of a long list not read yet (`KioskConfig.playlistUnread`) play while the
    /// rest is read.
    static let playlistHead = 1000

    /// Reads the first `playlistHead` entries of `config`'s unread M3U and plays them (looped,
    /// in order; a shuffled or unlooped list waits for the whole). Returns the config they play
    /// as (still unread), or nil when nothing was started.
    func playHead(of config: KioskConfig) -> KioskConfig? {
        guard config.loop, !config.shuffle, config.playlist.isEmpty else { return nil }
        var skipped: [SkippedEntry] = []
        guard let head = try? expandPlaylist(config.playlistOrigin, skipped: &skipped, first: Self.playlistHead),
              !head.isEmpty else { return nil }
        var started = config
        started.playlist = head
        // Only if nothing replaced the playlist meanwhile.
        guard state.withLock({ s -> Bool in
            guard s.config.playlistUnread, s.config.playlist.isEmpty, s.config.playlistOrigin == config.playlistOrigin else { return false }
            s.config = started
            return true
        }) else { return nil }
        status.update {
            $0.replaceItems(Self.statusItems(started))
            $0.playlistProblem = nil
        }
        startPlaylist(started, afterCurrentItem: true)
        logger.info("playlist being read; its first entries play", ["items": "\(head.count)"])
        return started
    }
}
