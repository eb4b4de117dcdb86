import Display
import Foundation
import Kiosk
import Remote
import Fleet
import Media
import Playback

// SIGTERM, SIGINT and SIGHUP are handled from here on, before the arguments and the config are
// read: until the session exists SIGTERM and SIGINT exit with status 0, and a SIGHUP is remembered.
StartupMarks.mark("main")
let signals = ProcessSignals.install()
// Two malloc arenas: with one per decoder thread, resident memory creeps up by MB over thousands
// of items without a leak (make soak measures it).
limitMallocArenas(to: 2)
// Picture buffers mapped on their own: memory freed with an item's decoder leaves the process.
mapLargeBlocks()

let usage = """
    Usage: marquee [options]

    Plays a looping playlist on a screen. Without --config it plays the demo clip (configs/demo in
    the source tree, /usr/share/marquee/demo when installed).

    Options:
      --config PATH        JSON config to play (default: the embedded demo config)
      --output KIND        auto | kms | headless. auto: KMS when a DRM device has a connected
                           connector, else headless (default: the config's display.output, or auto)
      --mode WxH[@Hz]      output mode, e.g. 1920x1080@60 or 1280x720@59.94 (default: the config's)
      --clock KIND         real | virtual. real: vsyncs at wall-clock times; virtual: vsyncs advance as
                           soon as the next frame is ready, with simulated times (tests, benchmarks)
      --start-time TIME    with --clock virtual: the system-clock time of the first vsync, ISO 8601
                           (e.g. 2026-03-29T01:59:00+01:00), so a schedule plays through faster
                           than real time (default: now)
      --exit-after SECS    exit with status 0 after SECS of presentation-clock time
      --frames N           exit with status 0 once N frames have been shown (like mpv's --frames)
      --trace FILE         write the presentation trace (JSON Lines, one line per picture change)
      --log-level LEVEL    debug | info | warning | error (default: the config's, or info)
      --socket PATH        the control socket (default: the config's control.socket, else
                           $RUNTIME_DIRECTORY/marquee.sock, /run/marquee/marquee.sock as root, else
                           $XDG_RUNTIME_DIR/marquee.sock); --socket none turns it off
      --node NAME          the wall node this machine is: it drives the wall outputs of that
                           node (default: the host name)
      --check-config       validate the config and probe its files, print every problem; exit 0 if
                           valid, 2 if not or if no file can be played
      -h, --help           show this help

    Signals: SIGTERM and SIGINT stop (the display is restored); SIGHUP reloads the config (a broken
    one is refused and the old one keeps playing).

    """

/// `<3>` (err) before an error line when standard error is the journal, as the logger writes.
let errorPriority = Logger.standardErrorIsJournal() ? "<3>" : ""

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("\(errorPriority)marquee: \(escapingControlCharacters(message))\n".utf8))
    exit(status)
}

// MARK: Arguments

struct Arguments: Sendable {
    var configPath: String?
    var output: OutputKind?
    var mode: DisplayMode?
    var logLevel: Logger.Level?
    var checkOnly = false
    var socketPath: String?
    var startTime: WallTime?
    var run = RunOptions()
}

func parseArguments(_ list: [String]) -> Arguments {
    var parsed = Arguments()
    var rest = list[...]
    func value(for flag: String) -> String {
        guard let v = rest.popFirst() else { fail("\(flag) needs a value (see --help)") }
        return v
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "-h", "--help":
            print(usage, terminator: "")
            exit(0)
        case "--config": parsed.configPath = value(for: argument)
        case "--output":
            let v = value(for: argument)
            guard let kind = OutputKind(rawValue: v) else { fail("--output \(v): expected auto, kms or headless") }
            parsed.output = kind
        case "--mode":
            let v = value(for: argument)
            guard let mode = DisplayMode(parsing: v) else { fail("--mode \(v): expected WxH or WxH@Hz, e.g. 1920x1080@60") }
            parsed.mode = mode
        case "--clock":
            let v = value(for: argument)
            guard let clock = ClockKind(rawValue: v) else { fail("--clock \(v): expected real or virtual") }
            parsed.run.clock = clock
        case "--exit-after":
            let v = value(for: argument)
            guard let seconds = Double(v), seconds.isFinite else { fail("--exit-after: \"\(v)\" is not a number of seconds") }
            do {
                parsed.run.exitAfter = try checkedNumber(seconds, in: 0...longestTimeInSeconds, field: argument)
            } catch {
                fail("\(error)")
            }
        case "--frames":
            let v = value(for: argument)
            do {
                parsed.run.exitAfterFrames = try checkedInteger(parsing: v, in: 1...Int.max, field: argument)
            } catch {
                fail("\(error): give a whole number of frames, at least 1")
            }
        case "--start-time":
            let v = value(for: argument)
            guard let time = WallTime(iso8601: v) else { fail("--start-time \(v): expected an ISO 8601 time with its zone, e.g. 2026-03-29T01:59:00+01:00") }
            parsed.startTime = time
        case "--trace": parsed.run.tracePath = value(for: argument)
        case "--socket": parsed.socketPath = value(for: argument)
        case "--node": parsed.run.node = value(for: argument)
        case "--log-level":
            let v = value(for: argument)
            guard let level = Logger.Level(name: v) else { fail("--log-level \(v): expected debug, info, warning or error") }
            parsed.logLevel = level
        case "--check-config": parsed.checkOnly = true
        default: fail("unknown argument \(argument) (see --help)")
        }
    }
    return parsed
}

let arguments = parseArguments(Array(CommandLine.arguments.dropFirst()))
let options = arguments.run

// MARK: Config

/// The folder holding the demo clip: `configs/` of the source tree (found from the working directory
/// or from the executable's location), or the installed copy.
func dataDirectory() -> String? {
    let fm = FileManager.default
    var candidates = [fm.currentDirectoryPath + "/configs"]
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
    }
    while dir.path != "/" {
        candidates.append(dir.path + "/configs")
        dir.deleteLastPathComponent()
    }
    candidates.append("/usr/share/marquee")
    return candidates.first { fm.fileExists(atPath: $0 + "/demo/demo.mp4") }
}

// FFmpeg's own messages (here from --check-config's probes) are log records, never raw lines.
FFmpegLog.route(to: Logger.forService(level: arguments.logLevel ?? .info, identifier: "marquee"))
var config: KioskConfig
do {
    if let configPath = arguments.configPath {
        // The player reads a config's M3U playlist once it runs (READY and the socket come first);
        // --check-config reads it here, to list its problems.
        config = try KioskConfig.load(path: configPath, defersListFile: !arguments.checkOnly)
    } else {
        guard let data = dataDirectory() else { fail("cannot find the demo clip (configs/demo/demo.mp4); give --config", status: 1) }
        config = KioskConfig.embeddedDefault(dataDirectory: data)
    }
} catch {
    FileHandle.standardError.write(Data("\(errorPriority)\(error)\n".utf8))
    exit(2)
}
if arguments.checkOnly {
    // Content that is not there now (an empty or missing playlist folder, an unreadable M3U) is
    // listed, but the config is valid: the player would start, show the background and read the
    // folder again until something is there.
    for warning in config.warnings {
        FileHandle.standardError.write(Data("\(escapingControlCharacters(arguments.configPath ?? "config")): warning: \(warning) (the player starts and reads it again every second while nothing plays)\n".utf8))
    }
    // The files too: each one that cannot be opened and probed is listed; with none playable the
    // config is refused (it would show only the background).
    var items: [KioskConfig.Item] = []
    for entry in config.playlist + (config.wall?.regions.flatMap { $0.playlist ?? [] } ?? []) where !items.contains(where: { $0.path == entry.path }) {
        items.append(entry)
    }
    var probe = FFmpegBackend()
    probe.limits = config.network.limits
    var unplayable = 0
    for item in items {
        do {
            _ = try probe.probe(KioskConfig.mediaURL(item.path))
        } catch {
            unplayable += 1
            FileHandle.standardError.write(Data("\(errorPriority)\(escapingControlCharacters(item.uri)): cannot be played: \(escapingControlCharacters("\(error)"))\n".utf8))
        }
    }
    if !items.isEmpty && unplayable == items.count {
        FileHandle.standardError.write(Data("\(errorPriority)\(arguments.configPath ?? "embedded default config"): nothing in the playlist can be played\n".utf8))
        exit(2)
    }
    if let problem = httpFilesProblem(config.http) {
        FileHandle.standardError.write(Data("\(errorPriority)\(arguments.configPath ?? "config"): \(escapingControlCharacters(problem))\n".utf8))
        exit(2)
    }
    print("\(arguments.configPath ?? "embedded default config"): valid (\(config.playlist.count) items"
          + (unplayable > 0 ? ", \(unplayable) of \(items.count) files cannot be played" : "")
          + (config.warnings.isEmpty ? "" : ", \(config.warnings.count) \(config.warnings.count == 1 ? "warning" : "warnings")") + ")")
    exit(0)
}
/// What the command line says over the config; applied again on every reload.
let overrides: @Sendable (inout KioskConfig) -> Void = { [arguments] config in
    if let output = arguments.output { config.display.output = output }
    if let mode = arguments.mode { config.display.mode = mode }
    if arguments.run.clock == .virtual, let start = arguments.startTime { config.virtualClockStart = start }
}
overrides(&config)
StartupMarks.mark("config-read")

let logger = Logger.forService(level: arguments.logLevel ?? config.logLevel, identifier: "marquee")
FFmpegLog.route(to: logger)
for warning in config.warnings {
    logger.warning("config: nothing to play there now; the player starts and reads it again",
                   ["config": arguments.configPath ?? "-", "path": warning.path, "problem": warning.message])
}

// MARK: Run

signal(SIGPIPE, SIG_IGN)  // a control client that goes away must not end the player
signals.setLogger(logger)
let notifier = ServiceNotifier()
let socketPath = arguments.socketPath ?? config.control.socket ?? defaultControlSocketPath()

/// Opens the control socket for `session` (nil when turned off, or when it cannot be opened:
/// playing matters more than the socket, and the log says why).
func openControlServer(for session: KioskSession, controller: KioskController, mode: UInt32) -> ControlServer? {
    guard socketPath != "none" else { return nil }
    do {
        let server = try ControlServer(path: socketPath, mode: mode_t(mode), handler: controller, logger: logger)
        logger.info("control socket ready", ["socket": socketPath])
        return server
    } catch {
        logger.error("no control socket", ["error": "\(error)"])
        return nil
    }
}

// The presentation thread opens the output first (its EGL context lives there); the session is
// made for what the output can do, and only then do its players start decoding. The control
// socket and the supervisor serve that session.
startThread(named: "marquee-present") { [config, options, arguments] in
    var status: Int32 = 0
    var session: KioskSession?
    var controlServer: ControlServer?
    var httpServer: RemoteServer?
    var fleetClient: FleetClient?
    var supervisor: ServiceSupervisor?
    var triggers: KioskTriggers?
    do {
        _ = try runKiosk(config: config, options: options, logger: logger, makeSession: { output in
            let made = KioskSession(config: config, configPath: arguments.configPath, logger: logger, node: arguments.run.node,
                                    output: output, overrides: overrides)
            session = made
            signals.onStop { name in
                logger.info("signal received; stopping", ["signal": name])
                notifier.stopping()
                made.stop()
            }
            // One controller behind the control socket and the HTTP API.
            let controller = KioskController(status: made.status, audio: SessionAudioControls(session: made)) { command in
                made.perform(command)
            }
            let server = openControlServer(for: made, controller: controller, mode: config.control.mode)
            controlServer = server
            let http = openHTTPServer(controller: controller, session: made, settings: config.http, configPath: arguments.configPath)
            httpServer = http
            fleetClient = openFleetClient(controller: controller, session: made, settings: config.mqtt)
            made.onEvent = { [server, http] event in
                server?.broadcast(event)
                http?.broadcast(event)
            }
            made.onPicture = { [server, http] in
                server?.propertiesMayHaveChanged()
                http?.pictureShown()
            }
            let commands = KioskController(status: made.status, audio: SessionAudioControls(session: made)) { made.perform($0) }
            triggers = KioskTriggers.start(session: made, config: config, controller: commands, logger: logger)
            // The service is up: config loaded, output open, control socket open. READY=1 now, not
            // at the first frame: a display that is off at boot must not hold the start up until
            // TimeoutStartSec. From here the supervisor says in STATUS= what the player does or
            // waits for, and feeds the watchdog only while presentation progresses or rightly waits.
            let watching = ServiceSupervisor(notifier: notifier, status: made.status, logger: logger)
            supervisor = watching
            watching.ready()
            watching.start()
            signals.onReload {
                notifier.reloading()
                _ = made.reload()
                notifier.ready(status: watching.tick().summary)
            }
            return made
        }, shouldContinue: { true })
    } catch {
        logger.error("cannot play", ["error": "\(error)"])
        status = 1
    }
    supervisor?.stop()
    triggers?.stop()
    notifier.stopping()
    controlServer?.broadcast(["event": "shutdown"])
    controlServer?.stop()
    httpServer?.stop()
    fleetClient?.stop()
    session?.player.removeAllItems()  // ends the decode threads (each within one queue timeout)
    let decoding = Player.waitForDecodeThreadsToEnd(timeout: 2)
    if decoding > 0 { logger.warning("decode threads still running at exit", ["threads": "\(decoding)"]) }
    exit(status)
}
dispatchMain()
