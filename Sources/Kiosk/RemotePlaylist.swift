import Foundation
import HTTPServer
import Media
import Network
import Playback
import Synchronization

/// Where one entry of a remote M3U's set stands in the cache.
enum RemoteEntryStatus: Sendable, Equatable {
    /// A complete copy, matching its SHA-256 where one is given.
    case ready
    /// Not yet: no copy, or one the cache has not checked against this set yet.
    case pending
    /// Given up on for this set (failed `RemotePlaylist.failuresToGiveUp` times in a row and the
    /// set has waited a `refresh`, or a copy that does not match its hash after a check): skipped
    /// as a bad item, still retried; it joins the playlist once it is cached.
    case bad(String)
}

/// When a remote M3U's new set takes over: only once every entry is ready or bad, so the screen
/// never shows half of a new set; the bad entries are left out.
enum RemoteSetSwitch: Sendable, Equatable {
    case wait(pending: Int)
    case take(playable: [Int], skipped: [Int])

    init(_ statuses: [RemoteEntryStatus]) {
        let pending = statuses.filter { $0 == .pending }.count
        if pending > 0 {
            self = .wait(pending: pending)
        } else {
            self = .take(playable: statuses.indices.filter { statuses[$0] == .ready }, skipped: statuses.indices.filter { statuses[$0] != .ready })
        }
    }
}

/// A playlist read from a remote M3U (`{"m3u": "https://..."}`, with `network.cache`): the list is
/// fetched through the cache's checked libcurl path (at most `RemoteM3U.largestFile` bytes) and
/// checked again every `refresh` with conditional requests; its entries are downloaded by the
/// cache; a changed list becomes the playlist only once its whole set is cached and verified
/// (`RemoteSetSwitch`), and only then is it kept as the last good copy, which plays at once after
/// a restart, whether or not the server answers.
final class RemotePlaylist: Sendable {
    typealias Fetch = @Sendable (_ url: String, _ part: String, _ current: RemoteValidators?) throws -> RemoteFetch.Outcome
    /// Failures in a row after which an entry no longer holds a new set back.
    static let failuresToGiveUp = 3

    /// The list whose set plays (a reload naming another list makes that one the `target`, which
    /// becomes `url` once its set is taken).
    var url: String { state.withLock { $0.url } }
    private let cache: RemoteMediaCache
    private let allow: NetworkAllowList
    private let fetch: Fetch
    private let resolve: @Sendable (String) throws -> [IPAddress]
    private let logger: Logger
    private let now: @Sendable () -> Double
    /// The last good copy of the list, and its validators beside it.
    var copyFile: String { copyFile(for: url) }
    /// The last good copy of the list at `url`.
    func copyFile(for url: String) -> String { (cache.file(for: url) as NSString).deletingPathExtension + ".playlist.m3u" }
    /// On a clock-synced wall of several nodes a whole new set is not taken here: it is held until
    /// the wall agrees on when (`WallSetAgreement`), then `takeHeld`.
    let holdsSets: Bool
    /// Beside the last good copy: the set's id and the wall time it took over (`ID NANOSECONDS`).
    var wallFile: String { copyFile + ".wall" }

    private struct Candidate {
        let list: RemoteM3U
        let text: Data
        let validators: RemoteValidators
        /// When it came: a copy the cache has checked since then is current for it.
        let since: Double
        /// The list it is from.
        let url: String
        /// Whole (every entry ready or given up on), held for the wall's agreement (`holdsSets`).
        var whole = false
        /// Agreed on by the wall: kept until it is taken, whatever the server says meanwhile.
        var pinned = false
        /// The set's id, hashed once: the wall's agreement asks for it every tick.
        let id: String

        init(list: RemoteM3U, text: Data, validators: RemoteValidators, since: Double, url: String) {
            (self.list, self.text, self.validators, self.since, self.url) = (list, text, validators, since, url)
            id = WallSetMessage.setID(of: text)
        }
    }

    private struct State {
        var url: String
        /// Another list named by a reload: its set takes over once whole (nil: none).
        var target: String?
        var copy: RemoteCopy
        var current: RemoteM3U?
        var candidate: Candidate?
        /// The URLs of the current set that play, as last told.
        var told: [String]?
        /// Waiting on a candidate, as last logged.
        var lastWait: Int?
        /// The current set's id (the SHA-256 of its list), and the wall time it took over on a
        /// wall's agreement (nil: it plays on the config's epoch).
        var currentID: String?
        var since: WallTime?
    }

    private let state: Mutex<State>
    private let stopped = Latch<Bool>()
    /// SHA-256 of copies checked: file -> (its size and inode, the hash).
    private let checkedHashes = Mutex<[String: (size: Int64, inode: UInt64, hash: String)]>([:])
    /// Told when the set that plays changes (the session reads its playlist again).
    let onChange = Mutex<(@Sendable () -> Void)?>(nil)
    /// Told the playlist's health: why it is degraded, or nil.
    let onHealth = Mutex<(@Sendable (String?) -> Void)?>(nil)

    init(url: String, cache: RemoteMediaCache, allow: NetworkAllowList, logger: Logger, holdsSets: Bool = false, fetch: @escaping Fetch,
         resolve: @escaping @Sendable (String) throws -> [IPAddress] = { try SystemResolver.addresses(of: $0) },
         now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        (self.cache, self.allow, self.logger, self.fetch, self.resolve, self.now) = (cache, allow, logger, fetch, resolve, now)
        self.holdsSets = holdsSets
        let copyFile = (cache.file(for: url) as NSString).deletingPathExtension + ".playlist.m3u"
        var copy = RemoteCopy(policy: .init(refresh: cache.settings.refresh))
        var current: RemoteM3U?, currentID: String?, since: WallTime?
        if let data = FileManager.default.contents(atPath: copyFile) {
            let list = RemoteM3U(text: String(decoding: data, as: UTF8.self), base: url, allow: allow, resolve: resolve)
            current = list
            currentID = WallSetMessage.setID(of: data)
            since = Self.readWallFile(copyFile + ".wall", id: currentID)
            copy.adopt(at: now())
            logger.info("remote playlist: its last good copy plays until the server is asked",
                        ["uri": url, "entries": "\(list.entries.count)", "wall_since": since.map { $0.unixSeconds.formatted(decimals: 6) } ?? "-"])
        }
        state = Mutex(State(url: url, copy: copy, current: current, currentID: currentID, since: since))
        if let current { tellCache(current: current, candidate: nil) }
    }

    /// The playlist of a session whose config names a remote M3U (nil: it names none, or there is
    /// no cache to keep it in).
    static func forSession(_ config: KioskConfig, cache: RemoteMediaCache?, reporter: PlaybackReporter, logger: Logger,
                           holdsSets: Bool = false) -> RemotePlaylist? {
        guard case .remoteM3U(let url) = config.playlistOrigin, let cache else { return nil }
        let limits = RemoteFetch.Limits(io: config.network.limits, maxBytes: RemoteM3U.largestFile, maxSeconds: 60)
        let playlist = RemotePlaylist(url: url, cache: cache, allow: config.network.allow, logger: logger, holdsSets: holdsSets) { url, part, current in
            try RemoteFetch.fetch(url, into: part, current: current, limits: limits)
        }
        playlist.onHealth.withLock { $0 = { [unowned playlist] reason in reporter.remoteFileHealth(uri: playlist.url, reason: reason) } }
        return playlist
    }

    /// Why a reloaded config cannot take over: it names a remote M3U other than the one this
    /// session fetches (`running`), which is taken up at the next start; nil: it can.
    /// Another remote M3U is taken up as a new set (`retarget`); only a run that started without
    /// one refuses it (its cache and fetches are set up at the start).
    static func reloadRefusal(_ loaded: KioskConfig, running: String?) -> String? {
        guard case .remoteM3U(let url) = loaded.playlistOrigin, running == nil else { return nil }
        return "playlist.m3u: the remote M3U \(url) is taken up at the next start, not by a reload (this run started without one)"
    }

    /// A reload names the list at `url`: when it is another one, its set is fetched and takes over
    /// once whole, as a changed list's does (the set playing plays on until then); the list playing
    /// again: any other list being taken up is dropped.
    func retarget(_ url: String) {
        let (changed, from) = state.withLock { s -> (Bool, String) in
            let target = url == s.url ? nil : url
            guard target != s.target else { return (false, s.url) }
            s.target = target
            // A set the wall agreed on stays: every node switches to it (the list named is taken up after).
            if s.candidate?.url != url, s.candidate?.pinned != true { s.candidate = nil }
            s.lastWait = nil
            s.copy.checkSoon()
            return (true, s.url)
        }
        guard changed else { return }
        logger.info(url == from ? "remote playlist: the list playing is kept; the one being taken up is dropped"
                                : "remote playlist: another list named; its set plays once all of it is cached, the current set until then",
                    ["uri": url, "playing": from])
    }

    /// The current set's entries that play now (cached, and matching their hash).
    func items() throws(PlaylistError) -> [KioskConfig.Item] {
        let (current, failure) = state.withLock { s -> (RemoteM3U?, String?) in
            if case .failed(_, _, let reason) = s.copy.state { return (s.current, reason) }
            return (s.current, nil)
        }
        guard let current else {
            throw PlaylistError(message: "the remote M3U \(url) has no good copy yet" + (failure.map { ": \($0)" } ?? ""))
        }
        let playing = playable(current)
        if playing.isEmpty {
            throw PlaylistError(message: "none of the \(current.entries.count) entries of the remote M3U \(url) is cached yet")
        }
        return playing.map { KioskConfig.Item(uri: $0, path: $0) }
    }

    private func playable(_ list: RemoteM3U) -> [String] {
        list.entries.filter { status(of: $0, since: .infinity) == .ready }.map(\.url)
    }

    /// Where `entry` stands; `since`: when its set came (a copy checked after it counts as current).
    func status(of entry: RemoteM3U.Entry, since: Double) -> RemoteEntryStatus {
        guard let state = cache.state(of: entry.url) else { return .pending }
        let failures = cache.failures(of: entry.url)
        // Failed often enough, and for long enough (a file still being uploaded gets a refresh).
        let givenUp = failures >= Self.failuresToGiveUp && now() - since >= cache.settings.refresh
        var reason = "failed \(failures) times"
        switch state {
        case .failed(_, _, let r), .stale(_, _, _, let r): reason = r
        default: break
        }
        if let copy = cache.copy(of: entry.url) {
            guard let expected = entry.sha256 else { return .ready }
            let actual = hash(of: cache.file(for: entry.url))
            if actual == expected { return .ready }
            if givenUp { return .bad(reason) }
            return copy.confirmed >= since ? .bad("its copy's SHA-256 is \(actual ?? "unreadable"), not \(expected)") : .pending
        }
        return givenUp ? .bad(reason) : .pending
    }

    /// The SHA-256 of a cached copy, hashed once per version of the file (its size and inode:
    /// a new copy is renamed into place, a new inode).
    private func hash(of file: String) -> String? {
        var info = stat()
        guard stat(file, &info) == 0 else { return nil }
        let key = (size: Int64(info.st_size), inode: UInt64(info.st_ino))
        if let known = checkedHashes.withLock({ $0[file] }), known.size == key.size, known.inode == key.inode { return known.hash }
        guard let digest = try? sha256(ofFile: file) else { return nil }
        let hash = hexString(digest)
        checkedHashes.withLock { $0[file] = (key.size, key.inode, hash) }
        return hash
    }

    /// The cache downloads both sets (the current one first), each checked against its hash.
    private func tellCache(current: RemoteM3U?, candidate: RemoteM3U?) {
        // The new set's hash wins where both name a URL.
        let all = (current?.entries ?? []) + (candidate?.entries ?? [])
        cache.expectedSHA256.withLock { expected in
            for entry in all { expected[entry.url] = entry.sha256 }
        }
        var seen = Set<String>()
        cache.wantAlso(all.map(\.url).filter { seen.insert($0).inserted })
    }

    func start(tick: Double = 0.25) {
        startThread(named: "marquee-m3u") { [weak self] in
            self?.onChange.withLock { $0 }?()
            while let self, self.stopped.wait(timeout: tick) == nil { self.step() }
        }
    }

    func stop() { _ = stopped.set(true) }

    /// One look: the list fetched when due; a waiting set taken once it is whole; the session told
    /// when what plays changed.
    func step() {
        let at = now()
        if state.withLock({ $0.copy.tick(at: at) }) == .download { refresh() }
        settleCandidate()
        let (current, told) = state.withLock { ($0.current, $0.told) }
        if let current {
            let playing = playable(current)
            if playing != told {
                state.withLock { $0.told = playing }
                onChange.withLock { $0 }?()
            }
        }
        let source = "remote playlist \(url)"
        let health = state.withLock { $0.copy.degradation(source: source, now: now()) }
        let copy = state.withLock { $0.copy.copy }
        onHealth.withLock { $0 }?(health.map { $0 + Self.since(health: $0, copy: copy, now: now()) })
    }

    /// The wall-clock time the playlist was last confirmed, for health ("since when").
    private static func since(health: String, copy: RemoteCopy.Copy?, now: Double) -> String {
        guard let copy else { return "" }
        let at = Date().addingTimeInterval(copy.confirmed - now)
        return "; last good since \(ISO8601DateFormatter().string(from: at))"
    }

    private func refresh() {
        let (playing, target) = state.withLock { ($0.url, $0.target) }
        let url = target ?? playing, copyFile = self.copyFile(for: playing)
        let part = copyFile + "." + UUID().uuidString.prefix(8) + ".part"
        defer { RemoteFetch.discardPart(part) }
        let (hasCopy, waiting) = state.withLock { ($0.current != nil, $0.candidate.flatMap { $0.url == url ? $0.validators : nil }) }
        do {
            // A set waiting for its downloads: the server is asked whether the list is still that
            // one (not modified: nothing downloaded), else whether it is still the last good copy.
            let validators = waiting.flatMap { $0.isEmpty ? nil : $0 } ?? (hasCopy && target == nil ? RemoteFetch.validators(of: copyFile) : nil)
            switch try fetch(url, part, validators) {
            case .notModified:
                state.withLock { $0.copy.notModified(at: now()) }
            case .downloaded(_, let validators, _):
                let text = try Data(contentsOf: URL(fileURLWithPath: part))
                let same = target == nil && FileManager.default.contents(atPath: copyFile) == text
                let (waiting, pinned) = state.withLock { ($0.candidate?.text == text && $0.candidate?.url == url, $0.candidate?.pinned == true) }
                state.withLock { $0.copy.verified(at: now(), changed: !same) }
                if pinned {
                    // The wall switches to the set it agreed on; what the server says now is taken up after.
                } else if same {
                    try? RemoteFetch.keep(validators, beside: copyFile)
                    state.withLock { $0.candidate = nil }
                } else if !waiting {
                    let list = RemoteM3U(text: String(decoding: text, as: UTF8.self), base: url, allow: allow, resolve: resolve)
                    for line in list.warnings { logger.warning("remote playlist: hash tag ignored", ["uri": url, "line": line]) }
                    for line in list.skipped { logger.warning("remote playlist: entry skipped, never requested", ["uri": url, "entry": line]) }
                    let taken = state.withLock { s -> RemoteM3U?? in
                        // Unless a reload changed the list meanwhile.
                        guard s.url == playing, s.target == target else { return nil }
                        s.candidate = Candidate(list: list, text: text, validators: validators, since: now(), url: url)
                        s.lastWait = nil
                        return .some(s.current)
                    }
                    guard let current = taken else { return }
                    tellCache(current: current, candidate: list)
                    logger.info(current == nil ? "remote playlist fetched; it plays once all of it is cached"
                                               : "remote playlist changed; the new set plays once all of it is cached",
                                ["uri": url, "entries": "\(list.entries.count)", "skipped": "\(list.skipped.count)"])
                }
            }
        } catch {
            let reason = "\(error)"
            let first = state.withLock { s -> Bool in
                let wasFailing = s.copy.previousFailures > 0
                s.copy.failed(at: now(), reason: reason)
                return !wasFailing
            }
            if first {
                logger.warning(hasCopy ? "remote playlist not refreshed; its last good set plays" : "remote playlist cannot be fetched; nothing of it plays yet",
                               ["uri": url, "error": reason])
            }
        }
    }

    /// Takes the waiting set once each of its entries is ready or given up on.
    private func settleCandidate() {
        guard let candidate = state.withLock({ $0.candidate }) else { return }
        let statuses = candidate.list.entries.map { status(of: $0, since: candidate.since) }
        switch RemoteSetSwitch(statuses) {
        case .wait(let pending):
            let changed = state.withLock { s -> Bool in
                defer { s.lastWait = pending }
                return s.lastWait != pending
            }
            if changed { logger.info("remote playlist: new set waiting for its downloads", ["uri": url, "pending": "\(pending)"]) }
        case .take(let playable, let skipped):
            if holdsSets {
                let first = state.withLock { s -> Bool in
                    defer { s.candidate?.whole = true }
                    return s.candidate?.whole == false
                }
                if first {
                    logger.info("remote playlist: new set cached; it waits for the wall's other nodes to have it",
                                ["uri": url, "set": String(candidate.id.prefix(12)), "entries": "\(playable.count)", "skipped": "\(skipped.count)"])
                }
                return
            }
            take(candidate, statuses: statuses, playable: playable, skipped: skipped, since: nil)
        }
    }

    /// The new set whole here and held for the wall (`holdsSets`): its id and the entries that play.
    func heldSet() -> (id: String, items: [KioskConfig.Item])? {
        guard let candidate = state.withLock({ $0.candidate }), candidate.whole else { return nil }
        let items = candidate.list.entries.filter { status(of: $0, since: candidate.since) == .ready }.map { KioskConfig.Item(uri: $0.url, path: $0.url) }
        return (candidate.id, items)
    }

    /// The wall agreed on set `id`: it is kept until taken. False: it is no longer held.
    func pin(_ id: String) -> Bool {
        state.withLock { s in
            guard s.candidate?.id == id, s.candidate?.whole == true else { return false }
            s.candidate?.pinned = true
            return true
        }
    }

    /// The list a reload named, not taken up yet, and the list of the new set waiting (nil: none).
    var waiting: (target: String?, candidate: String?) { state.withLock { ($0.target, $0.candidate?.url) } }

    /// The set the current one is (nil: none yet), and the wall time it took over (nil: on the config's epoch).
    var currentSet: (id: String?, since: WallTime?) { state.withLock { ($0.currentID, $0.since) } }

    /// The wall switched to the held set `id` at `since`: it becomes the current set and the last
    /// good copy, with `since` beside it (a restart rejoins it there). False: it is not held.
    @discardableResult
    func takeHeld(_ id: String, since: WallTime) -> Bool {
        guard let candidate = state.withLock({ $0.candidate }), candidate.id == id else { return false }
        let statuses = candidate.list.entries.map { status(of: $0, since: candidate.since) }
        // Taken whatever its entries say now (one may be pending again): the wall plays it already.
        let playable = statuses.indices.filter { statuses[$0] == .ready }
        take(candidate, statuses: statuses, playable: playable, skipped: statuses.indices.filter { statuses[$0] != .ready }, since: since)
        return true
    }

    static func readWallFile(_ path: String, id: String?) -> WallTime? {
        guard let id, let data = FileManager.default.contents(atPath: path), data.count < 200 else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, fields[0] == id, let ns = Int64(fields[1]), ns > 0 else { return nil }
        return WallTime(nanoseconds: ns)
    }

    private func take(_ candidate: Candidate, statuses: [RemoteEntryStatus], playable: [Int], skipped: [Int], since: WallTime?) {
        for i in skipped {
            if case .bad(let reason) = statuses[i] {
                logger.warning("remote playlist: entry skipped as a bad item", ["uri": candidate.list.entries[i].url, "error": reason])
            }
        }
        // Kept as the last good copy first: a restart plays this set.
        let copyFile = self.copyFile(for: candidate.url), wallFile = copyFile + ".wall"
        let aside = copyFile + ".new"
        do {
            try candidate.text.write(to: URL(fileURLWithPath: aside))
            guard rename(aside, copyFile) == 0 else {
                throw MediaError(uri: copyFile, call: "rename", code: errno, reason: String(cString: strerror(errno)))
            }
            try RemoteFetch.keep(candidate.validators, beside: copyFile)
            if let since {
                try Data("\(candidate.id) \(since.nanoseconds)\n".utf8).write(to: URL(fileURLWithPath: wallFile), options: .atomic)
            } else {
                try? FileManager.default.removeItem(atPath: wallFile)
            }
        } catch {
            logger.error("remote playlist: cannot keep its copy; the new set plays without one", ["file": copyFile, "error": "\(error)"])
        }
        state.withLock { s in
            s.current = candidate.list
            s.candidate = nil
            s.lastWait = nil
            s.currentID = candidate.id
            s.since = since
            // The list the last reload named stays the one taken up next (a pinned set may be of another).
            let named = s.target ?? s.url
            s.url = candidate.url
            s.target = named == candidate.url ? nil : named
            if s.target != nil { s.copy.checkSoon() }
        }
        tellCache(current: candidate.list, candidate: nil)
        logger.info("remote playlist: new set cached; it plays from the next item boundary",
                    ["uri": candidate.url, "entries": "\(playable.count)", "skipped": "\(skipped.count)"])
    }
}
