import Display
import Foundation
import Media
import Playback
import Render
import Synchronization

/// One running kiosk: the playlist as a `QueuePlayer` (queued by a `PlaylistDriver`), the status the
/// control socket reports, and the commands it sends. `run` presents on the calling thread;
/// `perform` may be called from any thread.
public final class KioskSession: @unchecked Sendable {
    // @unchecked: what changes after init is in `state` (a lock), or set before `run` (`onEvent`, `onPicture`,
    // `backend`, `clockSyncCheck`); the player, the status and the task queue are thread-safe. Never call into the
    // player with `state` locked: the presentation thread holds its lock while it waits for decode threads, which report here.
    public let status: KioskStatus
    public let player: QueuePlayer
    /// Sends control-socket events (`start-file`, `end-file`); set before `run`.
    public var onEvent: (@Sendable (JSONValue) -> Void)? {
        get { reporter.onEvent }
        set { reporter.onEvent = newValue }
    }
    /// Called on the presentation thread for each new picture of this session's output (time-pos
    /// moved): the control server reads observed properties again. Set before `run`.
    public var onPicture: (@Sendable () -> Void)?
    /// What the player and decoders do, into the status, the log and the socket's events.
    let reporter: PlaybackReporter
    /// Wall sync's check of each new frame (presentation thread).
    var clockSyncCheck: ((Int64, Player.Picture) -> Void)?

    let logger: Logger
    let configPath: String?
    /// Command-line overrides, applied again to every reloaded config.
    let overrides: @Sendable (inout KioskConfig) -> Void
    /// What this session changes as it plays (commands, reloads, the player's reports), behind one lock.
    let state: SessionState
    private let stopped = Atomic(false)
    /// Set by `stop`: what the clock-quality thread waits on between its probes.
    let stopRequested = Latch<Bool>()
    let presentationTasks = PresentationTasks()
    /// Trigger cuts held for a wall time (wall cues), made on the presentation thread.
    let cueGate = CueGate()
    /// Whether the output is on or in standby, and why.
    let outputPower: OutputPower
    /// Raised once this session has its first frames: presentation starts then (`present`).
    let preroll = Preroll()
    var backend: ReportingBackend!
    /// Queues the playlist on `player` (looped or once).
    private(set) var driver: PlaylistDriver!
    /// Watches the player, and has the playlist read again when due.
    private(set) var watch: PlayerWatch!
    /// The control commands on the player and its playlist.
    private(set) var commands: PlaybackCommands!
    /// `network.cache`'s remote files (nil: none cached).
    private(set) var remoteCache: RemoteMediaCache?
    /// A remote M3U playlist's fetches and set switches (nil: the playlist is not one).
    private(set) var remotePlaylist: RemotePlaylist?
    /// This node's cue socket, where opened for a clock-synced wall's remote M3U (triggers share it).
    private(set) var wallCues: WallCues?
    /// A clock-synced wall's agreement on when its remote M3U's new sets switch (nil: none).
    private(set) var wallSets: WallSets?
    /// Which part of the wall this session plays, and so where its output reports.
    let role: WallRole
    let node: String
    /// The session's sound.
    public let audio = SessionAudio()
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
    /// - Parameter slowStorageLimit: a probe, open or read of a file taking longer than this
    ///   (seconds) degrades health as slow storage.
    /// - Parameter mediaLayer: a layer over the FFmpeg backend that every probe and decoder goes
    ///   through (a cache, a recorder of what was opened, a fault injector); nil: FFmpeg's own.
    public convenience init(config: KioskConfig, configPath: String?, logger: Logger, node: String? = nil,
                            output: OutputCapabilities, overrides: @escaping @Sendable (inout KioskConfig) -> Void = { _ in },
                            slowStorageLimit: Double = KioskSession.slowStorageLimit,
                            mediaLayer: ((any MediaBackend) -> any MediaBackend)? = nil) {
        self.init(config: config, configPath: configPath, logger: logger, node: node ?? defaultWallNodeName(),
                  overrides: overrides, output: output, role: .leader,
                  slowStorageLimit: slowStorageLimit, mediaLayer: mediaLayer)
    }

    init(config: KioskConfig, configPath: String?, logger: Logger, node: String,
                 overrides: @escaping @Sendable (inout KioskConfig) -> Void, output: OutputCapabilities,
                 role: WallRole,
                 slowStorageLimit: Double = KioskSession.slowStorageLimit,
                 mediaLayer: ((any MediaBackend) -> any MediaBackend)? = nil) {
        self.output = output
        let status = KioskStatus()
        self.status = status
        self.role = role
        let reporter = PlaybackReporter(status: status, role: role, logger: logger)
        self.reporter = reporter
        self.node = node
        let unselectedConfig = config
        // With a schedule, the playlist of the entry playing now (a follower: its leader's).
        let entry = Self.scheduledEntry(config, at: config.virtualClockStart ?? WallTime.now())
        var config = role.config(config, entry: entry, node: node)
        state = SessionState(.init(config: config, unselectedConfig: unselectedConfig, scheduleEntry: entry))
        self.configPath = configPath
        self.overrides = overrides
        self.logger = logger
        player = QueuePlayer(logger: logger)
        player.slowOpenLimit = 0.5  // a source that hangs never holds the picture at its turn
        audio.take(config.audio, player: player)  // the socket answers before the output opens
        outputPower = OutputPower(status: status, logger: logger) { [player] on in if on { player.play() } else { player.pause() } }
        reporter.playlist = { [weak self] in self?.state.withLock { s in s.config.playlist } ?? [] }
        remoteCache = RemoteMediaCache.forSession(config, reporter: reporter, logger: logger)
        backend = .session(config: config, output: output, reporter: reporter, preroll: preroll,
                           slowLimit: slowStorageLimit, mediaLayer: mediaLayer, cache: remoteCache)
        driver = PlaylistDriver(player: player, backend: backend, cache: remoteCache)
        // A wall of several nodes on the clock switches sets where all agree (`WallSets`), over its cue socket.
        if role.isLeader, remoteCache != nil, case .remoteM3U = config.playlistOrigin, let wall = config.wall, wall.sync.mode == .clock,
           wall.nodes.count > 1, let settings = wall.sync.cue {
            do {
                wallCues = try WallCues(settings: settings, node: node, logger: logger, onCue: nil)
            } catch {
                logger.error("wall cues cannot listen; this node takes its remote M3U's new sets on its own", ["error": "\(error)"])
            }
        }
        remotePlaylist = RemotePlaylist.forSession(config, cache: remoteCache, reporter: reporter, logger: logger, holdsSets: wallCues != nil)
        // A remote list's last good set is the playlist from the start (the config read leaves it empty).
        if let items = try? remotePlaylist?.items() {
            config.playlist = items
            state.withLock { $0.config.playlist = items }
        }
        let reader = PlaylistReader(state: state, driver: driver, reporter: reporter, logger: logger, remote: remotePlaylist)
        watch = PlayerWatch(state: state, driver: driver, reporter: reporter, reader: reader)
        commands = PlaybackCommands(state: state, driver: driver, reporter: reporter, logger: logger) { [weak self] in self?.isStopped ?? true }
        status.update { PlaybackReporter.describeStart(&$0, config, schedule: ScheduleStep.status(config.schedule, entry: entry)) }
        // The folder's skipped entries are logged, and an empty playlist read again, by the status
        // thread (`PlayerWatch`): a folder of any size is never read on the presenting thread.
        watch.start()
        remoteCache?.onSwap.withLock { $0 = { [weak self] _ in if let self, !self.isStopped { self.driver.takeNewCopies(self.state.withLock { $0.config }) } } }
        remoteCache?.start()
        // With wall sync by the clock, playback starts when the output's vsyncs are known.
        if config.wall?.sync.mode != .clock {
            driver.start(config, afterCurrentItem: false)
            player.play()
        }
        // After the first queueing: the remote list's set must not be queued before it, and replaced.
        remotePlaylist?.onChange.withLock { $0 = { [weak self] in if let self, !self.isStopped { reader.read() } } }
        remotePlaylist?.start()
        if let remotePlaylist, let wallCues {
            wallSets = WallSets(session: self, remote: remotePlaylist, cues: wallCues, logger: logger)
            wallSets?.start()
        }
    }

    /// The epoch a clock-synced wall plays its playlist on: a remote M3U's set agreed by the wall
    /// plays from its switch time; anything else from the config's epoch.
    func clockEpoch(_ configured: WallTime) -> WallTime {
        guard wallSets != nil, let since = remotePlaylist?.currentSet.since else { return configured }
        return since
    }

    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Stops playback at the next vsync (this node's other outputs too).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        stopRequested.set(true)
        remoteCache?.stop()
        remotePlaylist?.stop()
        wallSets?.stop()
        wallCues?.stop()
        for follower in state.withLock({ s in s.followers }) { follower.stop() }
    }

    /// Presents on `output` until stopped, `exitAfter` passes, `shouldContinue` says no, or a
    /// playlist without loop has played out. Runs on the output's thread.
    /// `trace` gets a line per picture change (shared by the outputs of a node).
    public func present<Output: KioskOutput>(on output: Output, options: RunOptions, trace: TraceWriter?,
                                             shouldContinue: @escaping () -> Bool,
                                             onVsync: ((Int64) -> Void)? = nil) throws -> PresentationStats {
        try SessionPresentation(session: self).run(on: output, options: options, trace: trace,
                                                   shouldContinue: shouldContinue, onVsync: onVsync)
    }

    /// Starts the sound of this session's wall output where the config says it plays here
    /// (`SessionAudio.start`).
    func startAudio(clock: any VsyncClock) {
        let (config, outputName) = state.withLock { ($0.config, $0.outputName) }
        audio.start(config: config, role: role, node: node, outputName: outputName, player: player, clock: clock,
                    logger: logger, playlist: reporter.playlist)
    }
}
