import Foundation
import Synchronization
import Playback

/// What the kiosk is doing, as the control socket reports it. Written by the playback threads,
/// read by the control server; every access takes the lock, so it is cheap to update per frame.
public final class KioskStatus: Sendable {
    public struct Item: Sendable, Equatable {
        public enum State: String, Sendable { case pending, playing, played, failed }
        /// As the config writes it.
        public var uri: String
        /// The file it names.
        public var path: String?
        public var state: State = .pending
        public var error: String? {
            get { rare?.fields.error }
            set { update { $0.error = newValue } }
        }
        /// The loop pass in which it last failed.
        public var failedInLoop: Int? {
            get { rare?.fields.failedInLoop }
            set { update { $0.failedInLoop = newValue } }
        }
        /// mpv's `playlist_entry_id`: given when the entry joins the playlist, from 1 up, never
        /// reused (0: none given; `Snapshot.entryID` then counts from the position).
        public var id = 0
        /// How the item follows the one before it, when not a cut (the `playlist` property's
        /// `transition`).
        public var transition: Transition? {
            get { rare?.fields.transition }
            set { update { $0.transition = newValue } }
        }

        public init(uri: String, path: String? = nil, state: State = .pending, error: String? = nil) {
            self.uri = uri
            self.path = path
            self.state = state
            self.error = error
        }

        /// What most entries lack (an error, a transition), kept apart: a million-entry playlist's
        /// status costs a few words an entry.
        private var rare: Rare?

        private struct Fields: Equatable {
            var error: String?
            var failedInLoop: Int?
            var transition: Transition?
        }

        private final class Rare: Sendable {
            let fields: Fields
            init(_ fields: Fields) { self.fields = fields }
        }

        /// A new box for each change: entries share an unchanged one (a value, as the fields were).
        private mutating func update(_ change: (inout Fields) -> Void) {
            var fields = rare?.fields ?? Fields()
            change(&fields)
            rare = fields == Fields() ? nil : Rare(fields)
        }

        public static func == (a: Item, b: Item) -> Bool {
            a.uri == b.uri && a.path == b.path && a.state == b.state && a.id == b.id
                && (a.rare?.fields ?? Fields()) == (b.rare?.fields ?? Fields())
        }
    }

    public struct Output: Sendable, Equatable {
        public var name: String
        public var mode: String
        public var videoRect: [Int]?
        public var connected = true
        /// Wall sync by the clock: how far the last frame shown was from its place on the
        /// timeline (ms, positive: late), and the corrections made (repeated and skipped frames,
        /// restarts at the clock's position).
        public var syncErrorMs: Double?
        public var syncRepeated = 0
        public var syncSkipped = 0
        public var syncRestarts = 0
        /// Hardware frames shown as background because they could be neither imported nor copied.
        public var framesNotDrawn = 0
        /// A KMS output's scan-out (`gl` or `planes`) and why it was chosen.
        public var scanout: String?
        public var scanoutReason: String?
        /// Supervision (`KioskStatus.supervision`): when the output's presentation thread last went
        /// round its loop (each vsync, or each check while it waits for a display); nil before it
        /// presents.
        public var lastBeat: ContinuousClock.Instant?
        /// When the output last showed a new picture, and how long that picture lasts (seconds).
        public var lastPicture: ContinuousClock.Instant?
        public var pictureDuration: Double = 0
        /// Why the output rightly shows no new picture now (`paused`, `nothing to play`); nil while
        /// new pictures are due (a display that is not connected is `connected` false).
        public var idle: String?
        /// Since when new pictures are due: the start of presentation, or the end of the last idle
        /// time or display wait.
        public var dueSince: ContinuousClock.Instant?
    }

    /// A probe, open or read of a file that took longer than the session's limit.
    /// The schedule entry playing: its index (nil: the top-level playlist) and name, whether the
    /// display is on, and the next change where one is known.
    public struct ScheduleState: Sendable, Equatable {
        public var entry: Int?
        public var name: String
        public var display: String
        public var next: String?
        public init(entry: Int?, name: String, display: String, next: String? = nil) {
            self.entry = entry
            self.name = name
            self.display = display
            self.next = next
        }
    }

    public struct SlowRead: Sendable, Equatable {
        /// `probe`, `open`, `read`, `seek` or `first frame`.
        public var operation: String
        /// The slowest one in the window, seconds.
        public var seconds: Double
        /// The limit it went over, seconds.
        public var limit: Double
        /// How many in the window.
        public var count: Int
        public var last: ContinuousClock.Instant
    }

    public struct Snapshot: Sendable {
        public var items: [Item] = []
        public var position: Int?
        /// The file of the item playing now (after a reload it may be from the old playlist).
        public var currentPath: String?
        public var timePos: Double?
        public var duration: Double?
        public var paused = false
        public var loopPass = 0
        public var hwdecRequested = "auto"
        public var hwdecCurrent = "no"
        public var hwdecInterop = "none"
        public var hwdecFallback: String?
        public var hwdecDegraded = false
        /// Frames dropped by presentation for lateness, for the cadence (content faster than the
        /// output), and skipped by the decoder (`PresentationStats`).
        public var dropped = 0
        public var cadenceDropped = 0
        public var decoderDropped = 0
        public var delayed = 0
        /// Wall-clock times of recent drops, for "frames dropped in the last minute".
        public var recentDrops: [ContinuousClock.Instant] = []
        public var displayFPS: Double = 0
        public var vsyncJitter: Double = 0
        public var outputs: [Output] = []
        /// With a schedule: the entry playing (`schedule` property).
        public var schedule: ScheduleState?
        /// Why the display is in standby (`off (scheduled)`, `off (by command)`); nil: on.
        public var displayOff: String?
        public var reloadError: String?
        /// Why the playlist playing now has no items (its folder is missing or empty, its M3U file
        /// cannot be read); nil when it has some. The folder is read again every second meanwhile.
        public var playlistProblem: String?
        /// The overlays of the first output (`overlays` property).
        public var overlays: [OverlayStatus] = []
        /// What is wrong with the sound (a device asked for that is missing, repeated
        /// underruns); nil when it is fine or off by design.
        public var audioProblem: String?
        /// `free` or `clock` (wall sync), and, with `clock`, what the clock service says.
        public var wallSync = "free"
        public var clockQuality: ClockQuality?
        /// Files whose pixel format is converted with swscale: uri -> "from -> to".
        public var conversions: [String: String] = [:]
        /// When the session was made: the start-up grace of supervision counts from here.
        public var started = ContinuousClock.now
        /// Slow storage: file -> its slow probes, opens and reads (`KioskStatus.slowStorageWindow`).
        public var slowStorage: [String: SlowRead] = [:]
        /// Live network sources that are down: URL -> since when, and why (KioskSession+Network.swift).
        public var liveSourcesDown: [String: (since: ContinuousClock.Instant, reason: String)] = [:]
        /// Live sources' outages since the session began: how many began, how many ended with
        /// the source back (a reconnect), and the seconds of those that ended.
        public var liveSourceOutages = 0
        public var liveSourceReconnects = 0
        public var liveSourceOutageSeconds = 0.0
        /// Live sources playing: URL -> how far behind its source their last frame is shown (`live-lag`).
        public var liveLag: [String: Double] = [:]
        /// Cached remote files not fresh: URL -> why (RemoteMediaCache.swift).
        public var remoteFilesStale: [String: String] = [:]
        /// The id the next playlist entry gets.
        public var nextEntryID = 1

        /// The playlist becomes `items`, each with a new entry id (as mpv gives entries loaded anew).
        public mutating func replaceItems(_ items: [Item]) {
            self.items = []
            appendItems(items)
        }

        /// `items` join the end of the playlist with new entry ids; returns the first one's.
        @discardableResult
        public mutating func appendItems(_ items: [Item]) -> Int {
            let first = nextEntryID
            for var item in items {
                item.id = nextEntryID
                nextEntryID += 1
                self.items.append(item)
            }
            return first
        }

        /// The entry id of the item at `index` (mpv's `playlist_entry_id`); nil out of range.
        public func entryID(at index: Int) -> Int? {
            guard items.indices.contains(index) else { return nil }
            return items[index].id > 0 ? items[index].id : index + 1
        }
    }

    /// What supervision concludes: health (`ok`, `degraded`, `stalled`, `failed`) with its reasons,
    /// whether the systemd watchdog may be fed, and a line for systemd's `STATUS=`.
    public struct Supervision: Sendable, Equatable {
        public var status: String
        public var reasons: [String]
        /// True while presentation progresses (new pictures come when due) or rightly waits (for a
        /// display, paused by command, nothing playable, starting up): the watchdog is fed only then.
        public var progressing: Bool
        public var summary: String
    }

    /// No new picture for longer than this, or twice the last picture's duration when that is
    /// longer, while new pictures are due: `stalled` (before an output's first picture:
    /// `firstPictureLimit`). (A still image lasts its `duration`: shown
    /// for that long it is not stalled.)
    public static let stallMargin = 2.0
    /// The first picture of an output may take this long (opening the first file, the first decode,
    /// compiling the renderer's shaders: seconds on a slow software renderer) before it is a stall.
    public static let firstPictureLimit = 30.0
    /// An output's presentation thread that has not gone round its loop for this long is hung,
    /// whatever it shows (before its first picture: `firstPictureLimit`).
    public static let hangLimit = 5.0
    /// How long after start an output may take to begin presenting (or waiting for a display).
    public static let startupLimit = 60.0
    /// A slow probe, open or read counts against health for this long (seconds).
    public static let slowStorageWindow = 600.0

    private let state = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    public func update(_ change: (inout Snapshot) -> Void) {
        state.withLock { change(&$0) }
    }

    /// `{"status":"ok|degraded|stalled|failed","reasons":[...]}` (`supervision`'s verdict).
    public func health(now: ContinuousClock.Instant = .now) -> (status: String, reasons: [String]) {
        let verdict = supervision(now: now)
        return (verdict.status, verdict.reasons)
    }

    /// Judges the status at `now`: failed when nothing can be played; stalled when an output shows
    /// no new picture while one is due (see `stallMargin`) or its presentation thread has not run
    /// for `hangLimit`; degraded when an item failed in the last loop, hardware decode asked for is
    /// not in use, frames were dropped in the last minute, a probe, open or read of a file was slow
    /// (in the last `slowStorageWindow`), no display is connected, hardware frames could not be
    /// drawn, a reload was refused, or (wall sync by the clock) the clock service says the clock is
    /// unsynchronised or over a vsync off. Every reason is listed, worst first.
    public func supervision(now: ContinuousClock.Instant = .now) -> Supervision {
        let s = snapshot
        // Each stall's reason for health, and a steady line for STATUS= (no running count in it).
        var stalls: [String] = [], stallLines: [String] = []
        var hung = false
        for output in s.outputs {
            guard let beat = output.lastBeat else { continue }
            let quiet = (now - beat).seconds
            // Before the first picture the thread may sit in the first draw (shader compilation).
            if quiet > (output.lastPicture == nil ? Self.firstPictureLimit : Self.hangLimit) {
                stalls.append("output \(output.name): stalled: the presentation thread has not run for \(quiet.formatted(decimals: 1)) s")
                stallLines.append("stalled: the presentation thread of \(output.name) does not run (see health)")
                hung = true
                continue
            }
            guard output.connected, output.idle == nil else { continue }
            let since = max(output.lastPicture ?? output.dueSince ?? beat, output.dueSince ?? beat)
            let limit = output.lastPicture == nil ? Self.firstPictureLimit : max(Self.stallMargin, 2 * output.pictureDuration)
            let still = (now - since).seconds
            if still > limit {
                stalls.append("output \(output.name): stalled: no new picture for \(still.formatted(decimals: 1)) s "
                              + "(the picture shown lasts \(output.pictureDuration.formatted(decimals: 3)) s; limit \(limit.formatted(decimals: 1)) s)")
                stallLines.append("stalled: no new picture on \(output.name) for over \(limit.formatted(decimals: 1)) s (see health)")
            }
        }
        let presenting = s.outputs.contains { $0.lastBeat != nil }
        let sinceStart = (now - s.started).seconds
        if !presenting && sinceStart > Self.startupLimit {
            stalls.append("stalled: no output is presenting \(sinceStart.formatted(decimals: 0)) s after start")
            stallLines.append("stalled: no output is presenting \(Self.startupLimit.formatted(decimals: 0)) s after start")
            hung = true
        }

        if let off = s.displayOff {
            // In standby on purpose: no picture is due, nothing has failed.
            return Supervision(status: "off", reasons: [off] + stalls.filter { $0.contains("has not run") }, progressing: !hung,
                               summary: hung ? (stallLines.first ?? "display \(off)") : "display \(off)")
        }
        var reasons: [String] = []
        let failed = s.items.enumerated().filter { $0.element.state == .failed }
        if (!s.items.isEmpty && failed.count == s.items.count) || (s.items.isEmpty && s.playlistProblem != nil) {
            // Nothing to show: the background is the right picture, unless a thread hangs.
            if let problem = s.playlistProblem, s.items.isEmpty {
                reasons.append("nothing can be played: \(problem) (read again every second)")
            } else {
                reasons.append("nothing can be played: " + failed.map { "\($0.element.uri): \($0.element.error ?? "failed")" }.joined(separator: "; "))
            }
            let hangs = stalls.filter { $0.contains("has not run") || $0.contains("no output is presenting") }
            let hangLines = stallLines.filter { !$0.contains("no new picture") }
            return Supervision(status: "failed", reasons: reasons + hangs, progressing: !hung,
                               summary: hangLines.first ?? "nothing can be played (see health)")
        }
        reasons += stalls
        for (index, item) in failed where (item.failedInLoop ?? -10) >= s.loopPass - 1 {
            // Items count from 1, as STATUS=, the log and marqueectl count them.
            reasons.append("item \(index + 1) (\(item.uri)) failed: \(item.error ?? "unknown error")")
        }
        if s.hwdecDegraded {
            reasons.append("hardware decode \(s.hwdecRequested) not in use: \(s.hwdecFallback ?? "unknown reason")")
        }
        let drops = s.recentDrops.filter { now - $0 < .seconds(60) }.count
        if drops > 0 { reasons.append("\(drops) frames dropped in the last minute") }
        for (uri, slow) in s.slowStorage.sorted(by: { $0.key < $1.key }) where (now - slow.last).seconds < Self.slowStorageWindow {
            reasons.append("slow storage: \(uri): \(slow.count == 1 ? "a" : "\(slow.count)") \(slow.operation) over "
                           + "\(slow.limit.formatted(decimals: 1)) s in the last \(Int(Self.slowStorageWindow / 60)) minutes "
                           + "(the slowest \(slow.seconds.formatted(decimals: 1)) s)")
        }
        for (uri, down) in s.liveSourcesDown.sorted(by: { $0.key < $1.key }) {
            reasons.append("live source \(uri): down for \((now - down.since).seconds.formatted(decimals: 1)) s (\(down.reason)); reopening")
        }
        // A remote playlist's own reason names itself (RemotePlaylist.swift).
        for (_, stale) in s.remoteFilesStale.sorted(by: { $0.key < $1.key }) { reasons.append(stale.hasPrefix("remote playlist ") ? stale : "remote file \(stale)") }
        for output in s.outputs where !output.connected { reasons.append("output \(output.name): no display connected") }
        for output in s.outputs where output.framesNotDrawn > 0 {
            reasons.append("output \(output.name): \(output.framesNotDrawn) hardware frames could be neither imported nor copied (shown as background)")
        }
        if let reload = s.reloadError { reasons.append("last reload refused: \(reload)") }
        if let audio = s.audioProblem { reasons.append(audio) }
        if s.wallSync == "clock", let clock = s.clockQuality, clock.source != "none" {
            let vsync = 1 / (s.displayFPS > 0 ? s.displayFPS : 60)
            if !clock.synchronized {
                reasons.append("wall sync: the system clock is not synchronised (\(clock.source): \(clock.detail))")
            } else if let offset = clock.offset, abs(offset) > vsync {
                reasons.append("wall sync: the system clock is \((offset * 1000).formatted(decimals: 1)) ms off its reference (\(clock.source)), more than a vsync")
            }
        }
        let status = !stalls.isEmpty ? "stalled" : reasons.isEmpty ? "ok" : "degraded"
        return Supervision(status: status, reasons: reasons, progressing: stalls.isEmpty,
                           summary: stallLines.first ?? Self.summary(s, presenting: presenting, degraded: reasons.count))
    }

    /// What `STATUS=` says while nothing is stalled: what the player is doing or waiting for.
    private static func summary(_ s: Snapshot, presenting: Bool, degraded: Int) -> String {
        let suffix = degraded > 0 ? "; degraded (\(degraded) \(degraded == 1 ? "reason" : "reasons"), see health)" : ""
        guard presenting else { return "starting: setting up the output" + suffix }
        if let waiting = s.outputs.first(where: { $0.lastBeat != nil && !$0.connected }) {
            return "waiting for a display on \(waiting.name)" + suffix
        }
        if let idle = s.outputs.first(where: { $0.idle != nil })?.idle {
            return (idle == "paused" ? "paused by command" : idle) + suffix
        }
        if let first = s.outputs.first(where: { $0.lastBeat != nil && $0.lastPicture == nil }) {
            return "starting: waiting for the first picture on \(first.name)" + suffix
        }
        guard let index = s.position else { return "presenting" + suffix }
        let name = s.currentPath.map { ($0 as NSString).lastPathComponent } ?? "?"
        // An item that failed is skipped, not played.
        if s.items.indices.contains(index), s.items[index].state == .failed, s.items[index].path == s.currentPath {
            return "skipping item \(index + 1) of \(s.items.count): \(name) cannot be played" + suffix
        }
        let still = s.outputs.first.map { $0.pictureDuration >= 1 ? " (a still picture, \($0.pictureDuration.formatted(decimals: 1)) s)" : "" } ?? ""
        return "playing item \(index + 1) of \(s.items.count): \(name)\(still)" + suffix
    }
}

extension KioskStatus.Output {
    /// An output as a player outside this module reports it; the other fields start empty.
    public init(name: String, mode: String, videoRect: [Int]?, connected: Bool) {
        self.init(name: name, mode: mode, videoRect: videoRect, connected: connected, syncErrorMs: nil)
    }
}
