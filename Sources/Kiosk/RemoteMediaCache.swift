import Foundation
import HTTPServer
import Media
import Network
import Playback
import Synchronization

/// `network.cache`: where remote files are kept, how much they may take, how often each is checked.
public struct RemoteCacheSettings: Sendable, Equatable {
    /// The folder; nil: `$CACHE_DIRECTORY` (systemd's `CacheDirectory=`), else
    /// `$XDG_CACHE_HOME/marquee`, else `~/.cache/marquee`.
    public var folder: String?
    /// All cached files together, and so any one of them, in bytes.
    public var maxSize: Int64 = 2 << 30
    /// Seconds between checks of a cached file against its server.
    public var refresh = 300.0
    /// The longest one download may take (seconds).
    public static let downloadLimit = 600.0

    public init() {}

    public var resolvedFolder: String {
        if let folder { return folder }
        let env = ProcessInfo.processInfo.environment
        if let dir = env["CACHE_DIRECTORY"], !dir.isEmpty { return dir.split(separator: ":").first.map(String.init) ?? dir }
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/marquee" }
        return NSHomeDirectory() + "/.cache/marquee"
    }
}

extension KioskConfig {
    /// The items `network.cache` keeps on disk: `http(s)` files, that is, not HLS playlists and
    /// not items with a `duration` (a live item's time on screen); nil without `network.cache`.
    var cachedRemoteURLs: [String] {
        guard network.cache != nil else { return [] }
        var seen = Set<String>()
        return playlist.compactMap { item -> String? in
            guard RemoteMediaCache.isCacheable(item.path), item.duration == nil, seen.insert(item.path).inserted else { return nil }
            return item.path
        }
    }
}

/// Remote files played from local copies. A background thread downloads one file at a time into
/// a temporary file, verifies it (its whole announced length, then a probe with a duration and a
/// first frame that decodes), and renames it over the copy: a cut or corrupt download never
/// plays, and a reader already open keeps the file it opened. Each copy is checked again every
/// `refresh` seconds (downloaded again and compared); while the server cannot be reached the copy
/// plays on, stale. An item whose first copy is not complete is passed over.
public final class RemoteMediaCache: Sendable {
    /// Downloads `url` into the file at the path; returns its length (a whole download each time).
    public typealias Fetch = @Sendable (_ url: String, _ path: String) throws -> Int64
    /// Fetches `url` into the part file at the path, conditionally on the copy's validators when
    /// given, resuming a cut part where it can (`RemoteFetch.fetch`).
    public typealias ConditionalFetch = @Sendable (_ url: String, _ part: String, _ current: RemoteValidators?) throws -> RemoteFetch.Outcome
    /// Throws unless the file at the path is media that plays.
    public typealias Verify = @Sendable (_ path: String) throws -> Void

    struct Entry {
        var copy: RemoteCopy
        let file: String
    }

    let folder: String
    let settings: RemoteCacheSettings
    private let fetch: ConditionalFetch
    private let verify: Verify
    private let now: @Sendable () -> Double
    private let logger: Logger
    private let entries = Mutex<[String: Entry]>([:])
    /// The URLs of the playlist, in its order: downloaded first, evicted last.
    private let wanted = Mutex<[String]>([])
    /// The config playlist's URLs, and those a remote M3U wants besides (`RemotePlaylist`: its
    /// next set, downloaded before it plays): `wanted` is both.
    private let listed = Mutex<(playlist: [String], also: [String])>(([], []))
    /// SHA-256 (lower-case hex) each download of a URL must have before it is renamed into place.
    let expectedSHA256 = Mutex<[String: String]>([:])
    private let stopped = Latch<Bool>()
    /// Told when a copy is swapped in (the first, or a changed one): the playlist takes it at the
    /// next item boundary.
    let onSwap = Mutex<(@Sendable ([String]) -> Void)?>(nil)
    /// Copies swapped in and not yet told (`step`).
    private let pendingSwaps = Mutex<[String]>([])
    /// Told when a file's health changes: why it is degraded, or nil.
    let onHealth = Mutex<(@Sendable (String, String?) -> Void)?>(nil)

    static func isCacheable(_ path: String) -> Bool {
        let lower = path.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return false }
        let bare = lower.split(separator: "?").first.map(String.init) ?? lower
        return !bare.hasSuffix(".m3u8") && !bare.hasSuffix(".m3u")
    }

    /// A cache whose every check downloads the whole file (`fetch`), with no validators.
    public convenience init(settings: RemoteCacheSettings, fetch: @escaping Fetch, verify: @escaping Verify, logger: Logger,
                            now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) throws {
        try self.init(settings: settings, conditionalFetch: { url, part, _ in
            let bytes = try fetch(url, part)
            return .downloaded(bytes: bytes, validators: RemoteValidators(), transferred: bytes)
        }, verify: verify, logger: logger, now: now)
    }

    public init(settings: RemoteCacheSettings, conditionalFetch fetch: @escaping ConditionalFetch, verify: @escaping Verify, logger: Logger,
                now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) throws {
        self.settings = settings
        folder = settings.resolvedFolder
        (self.fetch, self.verify, self.logger, self.now) = (fetch, verify, logger, now)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw AssetError(url: URL(fileURLWithPath: folder), reason: "network.cache: cannot make the cache folder: \(error.localizedDescription)")
        }
        // A part with validators beside it is a cut download that resumes; any other is not
        // complete and cannot be checked: gone (unless a sibling cache downloads into it now).
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasSuffix(".part") {
            let part = folder + "/" + name
            guard RemoteFetch.validators(of: part) == nil, let lock = PartLock(part) else { continue }
            RemoteFetch.discardPart(part)
            _ = lock
        }
    }

    /// The cache of a kiosk: FFmpeg's downloads and checks, with the config's allow-list and limits.
    /// `network.cache`'s downloads for `config`'s remote files, reporting to `reporter` (nil: no
    /// cache, or its folder cannot be made: logged, and those items stream as uncached ones do).
    static func forSession(_ config: KioskConfig, reporter: PlaybackReporter, logger: Logger) -> RemoteMediaCache? {
        let cache: RemoteMediaCache?
        do {
            cache = try make(config, logger: logger)
        } catch {
            logger.error("network.cache cannot be used; remote files stream", ["error": "\(error)"])
            return nil
        }
        cache?.onHealth.withLock { $0 = { url, reason in reporter.remoteFileHealth(uri: url, reason: reason) } }
        return cache
    }

    static func make(_ config: KioskConfig, logger: Logger) throws -> RemoteMediaCache? {
        guard let settings = config.network.cache else { return nil }
        let limits = RemoteFetch.Limits(io: config.network.limits, maxBytes: settings.maxSize, maxSeconds: RemoteCacheSettings.downloadLimit)
        var checker = FFmpegBackend()
        checker.limits = config.network.limits
        let probe = checker
        return try RemoteMediaCache(settings: settings, conditionalFetch: { url, part, current in
            try RemoteFetch.fetch(url, into: part, current: current, limits: limits)
        }, verify: { path in
            let url = URL(fileURLWithPath: path)
            let description = try probe.probe(url)
            guard description.duration.isNumeric, description.duration.seconds > 0 else {
                throw AssetError(url: url, reason: "no duration: a live stream, not a file to cache")
            }
            try probe.checkFirstFrame(url)
        }, logger: logger)
    }

    /// The local file of `url`: its hash, and the extension FFmpeg may use to guess the format.
    func file(for url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let path = url.split(separator: "?").first.map(String.init) ?? url
        let ext = (path as NSString).pathExtension.filter { $0.isLetter || $0.isNumber }.prefix(8)
        return folder + "/" + String(hash, radix: 16) + (ext.isEmpty ? "" : "." + ext)
    }

    /// The playlist's cached URLs: downloaded in this order; a copy left by an earlier run plays
    /// at once and is checked first.
    public func want(_ urls: [String]) {
        let all = listed.withLock { l in
            l.playlist = urls
            return urls + l.also.filter { !urls.contains($0) }
        }
        wantAll(all)
    }

    /// URLs wanted besides the playlist's (a remote M3U's sets), downloaded after it.
    func wantAlso(_ urls: [String]) {
        let all = listed.withLock { l in
            l.also = urls
            return l.playlist + urls.filter { !l.playlist.contains($0) }
        }
        wantAll(all)
    }

    private func wantAll(_ urls: [String]) {
        let at = now()
        let policy = RemoteCopy.Policy(refresh: settings.refresh)
        entries.withLock { entries in
            for url in urls where entries[url] == nil {
                let file = file(for: url)
                var copy = RemoteCopy(policy: policy)
                if FileManager.default.fileExists(atPath: file) { copy.adopt(at: at) }
                entries[url] = Entry(copy: copy, file: file)
            }
        }
        wanted.withLock { $0 = urls }
    }

    /// Whether `url` plays from this cache.
    public func isCached(_ url: String) -> Bool { wanted.withLock { $0.contains(url) } }

    /// The complete copy of `url` to open now, or nil while there is none. Marks it played (its
    /// modification time: least recently played goes first when the cache is full).
    public func localFile(for url: String) -> String? {
        guard let file = entries.withLock({ $0[url].flatMap { $0.copy.copy == nil ? nil : $0.file } }) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file)
        return file
    }

    /// The state of `url`'s copy.
    public func state(of url: String) -> RemoteCopy.State? { entries.withLock { $0[url]?.copy.state } }

    /// Failed downloads or checks of `url` in a row (0 once one succeeds).
    func failures(of url: String) -> Int { entries.withLock { $0[url]?.copy.previousFailures ?? 0 } }

    /// The copy of `url` that plays now, if any.
    func copy(of url: String) -> RemoteCopy.Copy? { entries.withLock { $0[url]?.copy.copy } }

    /// Runs the downloads on a thread of their own until `stop`; `tick` seconds between looks.
    public func start(tick: Double = 0.25) {
        startThread(named: "marquee-cache") { [weak self] in
            // Work due is done back to back; the wait comes once none is.
            var idle = true
            while let self, idle ? self.stopped.wait(timeout: tick) == nil : !self.stopped.isSet { idle = !self.step() }
        }
    }

    public func stop() { _ = stopped.set(true) }

    /// One look: the download due first (files with no copy yet before refreshes, then the one
    /// waiting longest; none starves), done, verified and swapped in.
    /// Returns whether it downloaded; with none due, the copies swapped in meanwhile are told
    /// (`onSwap`) all at once: the playlist takes a new set at one boundary, not at each file.
    @discardableResult
    public func step() -> Bool {
        let at = now()
        let urls = wanted.withLock { $0 }
        let chosen = entries.withLock { entries -> (url: String, file: String)? in
            let due = urls.enumerated().compactMap { i, url in entries[url]?.copy.due(at: at).map { (url, i, $0.hasCopy, $0.since) } }
            guard let first = due.min(by: { ($0.2 ? 1 : 0, $0.3, $0.1) < ($1.2 ? 1 : 0, $1.3, $1.1) }),
                  entries[first.0]?.copy.tick(at: at) == .download, let file = entries[first.0]?.file else { return nil }
            return (first.0, file)
        }
        guard let (url, file) = chosen else {
            if let swapped = pendingSwaps.withLock({ p -> [String]? in defer { p = [] }; return p.isEmpty ? nil : p }) {
                onSwap.withLock { $0 }?(swapped)
            }
            return false
        }
        // The file's part, where a cut download resumes; a name of its own while a sibling cache
        // (a wall's sessions in one process) downloads into that one.
        let lock = PartLock(file + ".part")
        let temporary = lock?.path ?? file + "." + UUID().uuidString.prefix(8) + ".part"
        defer { if lock == nil || RemoteFetch.fileSize(temporary) == 0 { RemoteFetch.discardPart(temporary) } }
        var reason: String?
        var changed = false
        var unchanged = false
        do {
            let current = FileManager.default.fileExists(atPath: file) ? RemoteFetch.validators(of: file) : nil
            switch try fetch(url, temporary, current) {
            case .notModified:
                unchanged = true
                RemoteFetch.discardPart(temporary)
            case .downloaded(let bytes, let validators, _):
                entries.withLock { $0[url]?.copy.downloaded(at: now()) }
                do {
                    try verify(temporary)
                    if let expected = expectedSHA256.withLock({ $0[url] }) {
                        let actual = hexString(try sha256(ofFile: temporary))
                        guard actual == expected else { throw HashMismatch(url: url, expected: expected, actual: actual) }
                    }
                } catch {
                    RemoteFetch.discardPart(temporary)
                    throw error
                }
                changed = !FileManager.default.contentsEqual(atPath: temporary, andPath: file)
                if changed {
                    makeRoom(for: bytes, keeping: url)
                    // The old copy's validators go first: a copy is never paired with another's.
                    unlink(RemoteFetch.validatorsFile(of: file))
                    guard rename(temporary, file) == 0 else {
                        throw AssetError(url: URL(fileURLWithPath: file), reason: "rename failed: \(String(cString: strerror(errno)))")
                    }
                }
                RemoteFetch.discardPart(temporary)
                try? RemoteFetch.keep(validators, beside: file)
            }
        } catch {
            reason = "\(error)"
        }
        let (copy, health) = entries.withLock { entries -> (RemoteCopy?, String?) in
            guard var entry = entries[url] else { return (nil, nil) }
            if let reason {
                entry.copy.failed(at: now(), reason: reason)
            } else if unchanged {
                entry.copy.notModified(at: now())
            } else {
                entry.copy.verified(at: now(), changed: changed)
            }
            entries[url] = entry
            return (entry.copy, entry.copy.degradation(source: url, now: now()))
        }
        onHealth.withLock { $0 }?(url, health)
        if let reason {
            logger.warning(copy?.copy == nil ? "remote file not cached; passed over until it is" : "remote file not refreshed; its cached copy plays",
                           ["uri": url, "error": reason])
        } else if changed {
            logger.info(copy?.copy?.version == 1 ? "remote file cached" : "remote file changed; the new copy plays from the next item boundary",
                        ["uri": url, "file": file])
            // The first copy of all is told at once: the screen need not wait for the rest.
            let first = entries.withLock { e in !e.contains { $0.key != url && $0.value.copy.copy != nil } }
            if first { onSwap.withLock { $0 }?([url]) } else { pendingSwaps.withLock { $0.append(url) } }
        }
        return true
    }

    /// Files leave, least recently played first, until `bytes` more fit under `maxSize`: files of
    /// the playlist only once no other is left, and never `url`'s own.
    func makeRoom(for bytes: Int64, keeping url: String) {
        let fm = FileManager.default
        let keep = file(for: url)
        let playlist = Set(wanted.withLock { $0 }.map(file(for:)))
        // Cut downloads of files the playlist no longer has will not be resumed: gone first
        // (unless a sibling cache downloads into one now).
        for name in (try? fm.contentsOfDirectory(atPath: folder)) ?? [] where name.hasSuffix(".part") {
            let part = folder + "/" + name
            guard !playlist.contains(String(part.dropLast(5))), let lock = PartLock(part) else { continue }
            RemoteFetch.discardPart(part)
            _ = lock
        }
        var files: [(path: String, size: Int64, played: Date)] = ((try? fm.contentsOfDirectory(atPath: folder)) ?? []).compactMap { name in
            let path = folder + "/" + name
            guard !name.hasSuffix(".part"), !name.hasSuffix(".meta"), !name.hasSuffix(".new"), path != keep,
                  let a = try? fm.attributesOfItem(atPath: path) else { return nil }
            return (path, (a[.size] as? NSNumber)?.int64Value ?? 0, a[.modificationDate] as? Date ?? .distantPast)
        }
        var total = files.reduce(0) { $0 + $1.size } + bytes
        files.sort { (playlist.contains($0.path) ? 1 : 0, $0.played) < (playlist.contains($1.path) ? 1 : 0, $1.played) }
        for f in files where total > settings.maxSize {
            try? fm.removeItem(atPath: f.path)
            unlink(RemoteFetch.validatorsFile(of: f.path))
            total -= f.size
            logger.info("cached file evicted (network.cache.maxSize)", ["file": f.path, "bytes": "\(f.size)"])
            let at = now()
            entries.withLock { entries in
                for (u, e) in entries where e.file == f.path {
                    entries[u]?.copy.evicted(at: at, reason: "evicted: the playlist's files take more than network.cache.maxSize")
                }
            }
        }
    }
}

/// A part file held for one download (`flock`, released when this goes): two caches on one folder
/// never write into the same part. nil: another holds it (or it cannot be opened).
final class PartLock {
    let path: String
    private let fd: Int32

    init?(_ path: String) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        (self.path, self.fd) = (path, fd)
    }

    deinit { close(fd) }
}

/// The media layer that opens a cached item's local copy instead of its URL (every probe and
/// reader), and refuses it while it has none: the player passes it over.
struct CachedBackend: MediaBackend {
    let inner: any MediaBackend
    let cache: RemoteMediaCache

    func local(_ url: URL) throws -> URL {
        guard !url.isFileURL, cache.isCached(url.absoluteString) else { return url }
        guard let file = cache.localFile(for: url.absoluteString) else {
            throw AssetError(url: url, reason: "not cached yet (network.cache): passed over until its copy is complete")
        }
        return URL(fileURLWithPath: file)
    }

    func probe(_ url: URL) throws -> AssetDescription { try inner.probe(local(url)) }
    func openReader(_ url: URL) throws -> any FrameReader { try inner.openReader(local(url)) }
    func openPrerollReader(_ url: URL) throws -> any FrameReader { try inner.openPrerollReader(local(url)) }
    func checkFirstFrame(_ url: URL) throws { try inner.checkFirstFrame(local(url)) }
    func openAudioReader(_ url: URL) throws -> (any AudioReader)? { try inner.openAudioReader(local(url)) }
    func openSource(_ url: URL) throws -> any MediaSource { try inner.openSource(local(url)) }
    func opensOneAtATime(_ url: URL) -> Bool { inner.opensOneAtATime(url) }
}

/// A download whose SHA-256 is not the one its remote playlist gave: never renamed into place.
struct HashMismatch: Error, CustomStringConvertible {
    let url: String
    let expected: String
    let actual: String
    var description: String { "\(url): SHA-256 mismatch: expected \(expected), got \(actual); the download was deleted" }
}
