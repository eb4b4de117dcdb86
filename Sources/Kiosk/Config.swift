import Display
import Foundation
import Media
import Network
import Playback
import Render
import SystemCalls

/// Marquee's configuration: what to play and where.
///
/// ```json
/// {"playlist": [{"uri": "demo/demo.mp4"}], "loop": true,
///  "display": {"output": "auto", "mode": "1920x1080@60", "background": "#000000", "gravity": "resizeAspect"},
///  "log": {"level": "info"}}
/// ```
/// Relative URIs resolve against the config file's folder.
public struct KioskConfig: Sendable {
    public struct Item: Sendable, Equatable {
        /// As written in the config.
        public var uri: String
        /// The file to open: `uri` resolved against the config's folder.
        public var path: String
        /// `start` / `end`: the part of the item to play, in seconds of the item.
        public var start: Double? {
            get { options?.start }
            set { update { $0.start = newValue } }
        }
        public var end: Double? {
            get { options?.end }
            set { update { $0.end = newValue } }
        }
        /// Overrides `display.gravity` for this item.
        public var gravity: VideoGravity? {
            get { options?.gravity }
            set { update { $0.gravity = newValue } }
        }
        /// How long a still image (PNG, JPEG) shows, in seconds.
        public var duration: Double? {
            get { options?.duration }
            set { update { $0.duration = newValue } }
        }
        /// `volume`: this item's sound, 0 to 100, on top of `audio.volume` (nil: 100).
        public var volume: Double? {
            get { options?.volume }
            set { update { $0.volume = newValue } }
        }
        /// `transition`: how this item follows the one before it (nil: the top-level `transition`).
        public var transition: Transition? {
            get { options?.transition }
            set { update { $0.transition = newValue } }
        }

        /// `live`: how this item's network source is opened (LiveItemConfig.swift); nil: as by default.
        public var live: LiveSourceOptions? {
            get { options?.fields.live }
            set { update { $0.live = newValue } }
        }

        /// The options an entry rarely has, kept apart: an M3U or folder entry (none) costs its
        /// two strings and a pointer, not some 100 bytes more (a million-entry list).
        private var options: Options?

        private struct Fields: Equatable {
            var start: Double?
            var end: Double?
            var gravity: VideoGravity?
            var duration: Double?
            var volume: Double?
            var transition: Transition?
            var live: LiveSourceOptions?
        }

        private final class Options: Sendable {
            let fields: Fields
            init(_ fields: Fields) { self.fields = fields }
            var start: Double? { fields.start }
            var end: Double? { fields.end }
            var gravity: VideoGravity? { fields.gravity }
            var duration: Double? { fields.duration }
            var volume: Double? { fields.volume }
            var transition: Transition? { fields.transition }
        }

        /// A new box for each change: items share an unchanged one (a value, as the fields were).
        private mutating func update(_ change: (inout Fields) -> Void) {
            var fields = options?.fields ?? Fields()
            change(&fields)
            options = fields == Fields() ? nil : Options(fields)
        }

        public static func == (a: Item, b: Item) -> Bool {
            a.uri == b.uri && a.path == b.path && (a.options?.fields ?? Fields()) == (b.options?.fields ?? Fields())
        }

        public init(uri: String, path: String, start: Double? = nil, end: Double? = nil,
                    gravity: VideoGravity? = nil, duration: Double? = nil) {
            self.uri = uri
            self.path = path
            if start != nil || end != nil || gravity != nil || duration != nil {
                options = Options(Fields(start: start, end: end, gravity: gravity, duration: duration))
            }
        }
    }

    /// Where the playlist comes from: listed in the config, or read from a folder or an M3U file
    /// (and read again at every loop pass, so that changes are picked up).
    public enum PlaylistOrigin: Sendable, Equatable {
        case list
        case directory(String)
        case m3u(String)
        /// An `http(s)` M3U, fetched and kept by `network.cache` (RemotePlaylist.swift).
        case remoteM3U(String)
    }

    /// `control`: the socket's path (nil: the default) and file mode.
    public struct ControlSettings: Sendable, Equatable {
        public var socket: String?
        public var mode: UInt32 = 0o660
        public init() {}
    }

    public struct DisplaySettings: Sendable {
        public var output: OutputKind = .auto
        /// The headless output's mode; setting it also asks the KMS output for that mode.
        public var mode: DisplayMode = .fullHD {
            didSet { kms.mode = .size(width: mode.width, height: mode.height, refresh: mode.refresh) }
        }
        /// `display.device`, `display.connector`, `display.kmsApi`, `display.format` and the KMS reading of `display.mode`
        /// (`preferred` by default, or `highest`).
        public var kms = KMSSettings()
        public var background: RGBColor = .black
        public var gravity: VideoGravity = .resizeAspect
        /// `display.rotation`: how far the picture is turned clockwise for a screen mounted on its side.
        public var rotation: Rotation = .none
        /// `display.conversion`: where Y'CbCr becomes RGB (`auto`: on the CPU for software renderers).
        public var conversion: ColorConversionMode = .auto
        /// `display.scanout`: how pictures reach a KMS display (`auto`: `planes`, without GL, on a
        /// software renderer; `gl` on a GPU).
        public var scanout: ScanoutMode = .auto
        /// `display.waitForCard`: how long `auto` and `kms` wait at start for a display card that is
        /// not there yet (a GPU driver still loading), in seconds, 0 to `longestCardWait`.
        public var waitForCard = 10.0
        public init() {}
    }

    public var playlist: [Item] = []
    public var playlistOrigin = PlaylistOrigin.list
    /// The playlist is an M3U file not read yet (`load(path:defersListFile:)`): the session reads
    /// it off the start path and plays it once read.
    public var playlistUnread = false
    public var loop = true
    public var shuffle = false
    public var control = ControlSettings()
    public var display = DisplaySettings()
    public var logLevel: Logger.Level = .info
    /// `decode.hwdec`: which decoder to try first.
    public var hardwareDecoding: HardwareDecoding = .auto
    /// `wall`: a canvas across several outputs (WallConfig.swift); nil: one screen (`effectiveWall`).
    public var wall: WallConfig?
    /// `schedule` and `timezone` (ScheduleConfig.swift): the entries that replace the playlist at
    /// their local days and times; nil: the playlist always.
    public var schedule: Schedule?
    /// `timezone`: the zone of local times (schedules); nil: the system's.
    public var timeZone: TimeZone?
    /// Not from the file (a command-line choice): with the virtual clock, the system-clock time of
    /// the output's first vsync, so schedules can be played through faster than real time; nil: now.
    public var virtualClockStart: WallTime?
    /// `audio`: the sound (AudioConfig.swift).
    public var audio = AudioSettings()
    /// `network`: the network sources allowed, and their time limits (NetworkConfig.swift).
    public var network = NetworkSettings()
    /// `http`: the HTTP API (HTTPConfig.swift); off by default.
    public var http = HTTPSettings()
    /// `mqtt`: fleet control over MQTT (MQTTConfig.swift); off by default.
    public var mqtt = MQTTSettings()
    /// `overlays`: pictures and text over the video (OverlayConfig.swift).
    public var overlays: [OverlayConfig] = []
    /// `transition`: how each item follows the one before it, the loop point included, unless the
    /// item says otherwise (TransitionConfig.swift).
    public var transition = Transition.cut
    /// `triggers`: inputs and what they do (TriggerConfig.swift).
    public var triggers: [TriggerConfig] = []
    /// `inputs`: where trigger inputs are read (OSC is off unless given).
    public var inputs = InputSettings()
    /// What is wrong with the content the config names, not with the config as written: a playlist
    /// folder that is missing or empty, an M3U file that cannot be read. The player starts anyway
    /// (shows the background, says why in health, reads the folder again); `--check-config` lists them.
    public var warnings: [ConfigError.Problem] = []

    /// The transition into `item`: its own, else the top-level one.
    public func transition(into item: Item) -> Transition { item.transition ?? transition }

    public init() {}

    /// Reads and validates the file at `path`.
    /// `defersListFile`: a long top-level M3U playlist (over 256 KiB) is not read here but once
    /// the player runs (a million-line list would hold up the start, READY and the control socket
    /// for seconds).
    public static func load(path: String, defersListFile: Bool = false) throws(ConfigError) -> KioskConfig {
        // A regular file only, opened without waiting: a FIFO named as the config must not hang
        // the start (or `--check-config`).
        let data: [UInt8]
        do {
            data = try RegularFile.read(path, limit: largestConfigFile)
        } catch {
            let message = error.errno == 0 || error.errno == EFBIG ? "the file \(error.reason)" : "cannot read the file: \(String(cString: strerror(error.errno)))"
            throw ConfigError(source: path, problems: [.init(path: "", message: message)])
        }
        let text = String(decoding: data, as: UTF8.self)
        let folder = (path as NSString).deletingLastPathComponent
        return try parse(text, source: path, baseDirectory: folder, defersListFile: defersListFile)
    }

    /// Parses and validates config text; relative URIs resolve against `baseDirectory`.
    public static func parse(_ text: String, source: String = "config", baseDirectory: String,
                             defersListFile: Bool = false) throws(ConfigError) -> KioskConfig {
        let json: JSONValue
        do {
            json = try JSONParser.parse(text)
        } catch {
            throw ConfigError(source: source, problems: [.init(path: "", message: "syntax error at \(error)")], cause: error)
        }
        var reader = ConfigReader()
        reader.defersListFile = defersListFile
        var config = reader.read(json, baseDirectory: baseDirectory)
        if !reader.problems.isEmpty { throw ConfigError(source: source, problems: reader.problems) }
        config.warnings = reader.warnings
        return config
    }

    /// The config that plays when none is given: the demo clip, looped.
    public static func embeddedDefault(dataDirectory: String) -> KioskConfig {
        var config = KioskConfig()
        config.playlist = [Item(uri: "demo/demo.mp4", path: join(dataDirectory, "demo/demo.mp4"))]
        return config
    }

    static func join(_ folder: String, _ uri: String) -> String {
        if uri.hasPrefix("/") || folder.isEmpty || folder == "." { return uri }
        return folder.hasSuffix("/") ? folder + uri : folder + "/" + uri
    }
}

/// Everything wrong with a config, each problem with its JSON path.
public struct ConfigError: LocalizedError, CustomStringConvertible, Sendable {
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// JSON path of the offending value, like `playlist[2].uri`; empty for the whole document.
        public let path: String
        public let message: String
        /// With control characters escaped: a key or a value from the file never writes raw to a terminal.
        public var description: String { escapingControlCharacters(path.isEmpty ? message : "\(path): \(message)") }
    }

    public let source: String
    public let problems: [Problem]
    /// The error it was made from (the JSON syntax error of a config that does not parse), if any.
    public let cause: (any Error)?

    init(source: String, problems: [Problem], cause: (any Error)? = nil) {
        self.source = source
        self.problems = problems
        self.cause = cause
    }
    public var description: String { problems.map { "\(escapingControlCharacters(source)): \($0)" }.joined(separator: "\n") }
    public var errorDescription: String? { description }
}

/// The largest config file read (64 MB: a playlist of a few hundred thousand items written out).
public let largestConfigFile = 64 << 20

/// The longest time, in seconds, a config or a command may give (about 31 years): times from
/// outside are checked against it, so that seconds * 1e9 and a 90 kHz timescale stay far inside Int64.
public let longestTimeInSeconds = 1e9

/// Walks the JSON, collecting every problem instead of stopping at the first.
struct ConfigReader {
    var problems: [ConfigError.Problem] = []
    /// Content that is not there now (`KioskConfig.warnings`): not a reason to refuse the config.
    var warnings: [ConfigError.Problem] = []
    /// The top-level playlist's M3U file is left for the session to read (`playlistUnread`).
    var defersListFile = false

    mutating func problem(_ path: String, _ message: String) {
        problems.append(.init(path: path, message: message))
    }

    mutating func warning(_ path: String, _ message: String) {
        warnings.append(.init(path: path, message: message))
    }

    /// Notes a number that `checkedInteger` or `checkedNumber` refused, at its path.
    mutating func problem(_ error: NumberOutOfRange) {
        problem(error.field, error.reason)
    }

    /// Text from the config as a problem quotes it: at most 64 characters, so that a huge value
    /// gives a short report.
    static func clipped(_ text: String) -> String {
        text.count <= 64 ? text : String(text.prefix(61)) + "..."
    }

    /// The members of an object at `path`, reporting unknown keys; nil (and a problem) if not an object.
    mutating func members(_ value: JSONValue, at path: String, allowed: [String]) -> [(key: String, value: JSONValue)]? {
        guard case .object(let members) = value else {
            problem(path, "expected an object, found \(value.typeName)")
            return nil
        }
        for (key, _) in members where !allowed.contains(key) {
            problem(path.isEmpty ? key : "\(path).\(key)", "unknown key (allowed here: \(allowed.joined(separator: ", ")))")
        }
        return members
    }

    mutating func string(_ value: JSONValue, at path: String) -> String? {
        guard case .string(let s) = value else {
            problem(path, "expected a string, found \(value.typeName)")
            return nil
        }
        return s
    }

    /// A file name at `path`, relative to `baseDirectory` unless absolute; nil (and a problem) if
    /// it is not a string or empty.
    mutating func fileName(_ value: JSONValue, at path: String, baseDirectory: String) -> String? {
        guard let s = string(value, at: path) else { return nil }
        guard !s.isEmpty else {
            problem(path, "the file name is empty")
            return nil
        }
        return KioskConfig.join(baseDirectory, s)
    }

    mutating func choice<T: RawRepresentable & CaseIterable>(_ value: JSONValue, at path: String) -> T? where T.RawValue == String {
        guard let s = string(value, at: path) else { return nil }
        guard let v = T(rawValue: s) else {
            problem(path, "\"\(Self.clipped(s))\" is not one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            return nil
        }
        return v
    }

    mutating func read(_ json: JSONValue, baseDirectory: String) -> KioskConfig {
        var config = KioskConfig()
        // `$schema`: the schema the file follows, as editors attach one; a string, otherwise unread.
        guard let top = members(json, at: "", allowed: ["$schema", "playlist", "loop", "shuffle", "display", "decode", "control", "log", "wall", "schedule", "timezone", "audio", "overlays", "transition", "triggers", "inputs", "network", "http", "mqtt"])
        else { return config }
        if json["playlist"] == nil && !Self.wallHasOwnPlaylists(json["wall"]) { problem("playlist", "missing: the list of items to play") }
        for (key, value) in top {
            switch key {
            case "$schema":
                _ = string(value, at: "$schema")
            case "playlist":
                if let (items, origin) = readPlaylist(value, at: "playlist", emptyHint: "give at least one item", baseDirectory: baseDirectory,
                                                      defersListFile: defersListFile, allowsRemote: true) {
                    config.playlist = items
                    config.playlistOrigin = origin
                    if case .m3u = origin, defersListFile { config.playlistUnread = true }
                }
            case "transition":
                if let t = transition(value, at: "transition") { config.transition = t }
            case "loop":
                if let b = bool(value, at: "loop") { config.loop = b }
            case "shuffle":
                if let b = bool(value, at: "shuffle") { config.shuffle = b }
            case "control":
                guard let fields = members(value, at: "control", allowed: ["socket", "mode"]) else { continue }
                for (field, v) in fields {
                    guard let s = string(v, at: "control.\(field)") else { continue }
                    if field == "socket" {
                        guard s.hasPrefix("/") else {
                            problem("control.socket", "\"\(Self.clipped(s))\" is not an absolute path")
                            continue
                        }
                        config.control.socket = s
                    } else {
                        // UInt32(_:radix:) returns nil past UInt32's range; it never traps.
                        guard let mode = UInt32(s, radix: 8), mode <= 0o777 else {
                            problem("control.mode", "\"\(Self.clipped(s))\" is not an octal file mode such as \"0660\"")
                            continue
                        }
                        config.control.mode = mode
                    }
                }
            case "display":
                guard let fields = members(value, at: "display", allowed: ["output", "mode", "background", "gravity", "device", "connector", "kmsApi", "format", "rotation", "conversion", "scanout", "waitForCard"]) else { continue }
                for (field, v) in fields {
                    let path = "display.\(field)"
                    switch field {
                    case "output":
                        if let kind: OutputKind = choice(v, at: path) { config.display.output = kind }
                    case "mode":
                        guard let s = string(v, at: path) else { continue }
                        guard let request = KMSModeRequest(parsing: s) else {
                            problem(path, "\"\(Self.clipped(s))\" is not a mode: write preferred, highest, WxH or WxH@Hz, e.g. 1920x1080@60")
                            continue
                        }
                        if let mode = DisplayMode(parsing: s) { config.display.mode = mode }
                        config.display.kms.mode = request
                    case "device":
                        guard let s = string(v, at: path) else { continue }
                        guard s.hasPrefix("/") else {
                            problem(path, "\"\(Self.clipped(s))\" is not a device path: write e.g. /dev/dri/card0")
                            continue
                        }
                        config.display.kms.device = s
                    case "connector":
                        guard let s = string(v, at: path) else { continue }
                        guard !s.isEmpty else {
                            problem(path, "the connector name is empty: write e.g. HDMI-A-1")
                            continue
                        }
                        config.display.kms.connector = s
                    case "kmsApi":
                        if let api: KMSAPI = choice(v, at: path) { config.display.kms.api = api }
                    case "format":
                        if let format: KMSPixelFormat = choice(v, at: path) { config.display.kms.format = format }
                    case "background":
                        guard let s = string(v, at: path) else { continue }
                        guard let color = RGBColor(hex: s) else {
                            problem(path, "\"\(Self.clipped(s))\" is not a colour: write #rrggbb")
                            continue
                        }
                        config.display.background = color
                    case "gravity":
                        if let gravity: VideoGravity = choice(v, at: path) { config.display.gravity = gravity }
                    case "rotation":
                        guard case .number(let degrees) = v, let whole = try? checkedInteger(degrees, in: 0...270, field: path),
                              let rotation = Rotation(rawValue: whole) else {
                            problem(path, "\(Self.shown(v)) is not a rotation: write 0, 90, 180 or 270 (degrees clockwise)")
                            continue
                        }
                        config.display.rotation = rotation
                    case "conversion":
                        if let mode: ColorConversionMode = choice(v, at: path) { config.display.conversion = mode }
                    case "scanout":
                        if let mode: ScanoutMode = choice(v, at: path) { config.display.scanout = mode }
                    case "waitForCard":
                        guard case .number(let n) = v else {
                            problem(path, "expected a number of seconds, found \(v.typeName)")
                            continue
                        }
                        do { config.display.waitForCard = try checkedNumber(n, in: 0...longestCardWait, field: path) } catch { problem(error) }
                    default: break
                    }
                }
            case "decode":
                guard let fields = members(value, at: "decode", allowed: ["hwdec"]) else { continue }
                for (_, v) in fields {
                    if let hwdec: HardwareDecoding = choice(v, at: "decode.hwdec") { config.hardwareDecoding = hwdec }
                }
            case "wall":
                config.wall = readWall(value, baseDirectory: baseDirectory)
            case "schedule":
                if let entries = readSchedule(value, baseDirectory: baseDirectory) { config.schedule = Schedule(entries: entries) }
            case "timezone":
                config.timeZone = readTimeZone(value)
            case "audio":
                config.audio = readAudio(value)
            case "triggers":
                config.triggers = readTriggers(value, baseDirectory: baseDirectory)
            case "inputs":
                config.inputs = readInputs(value)
            case "network":
                config.network = readNetwork(value)
            case "http":
                config.http = readHTTP(value, baseDirectory: baseDirectory)
            case "mqtt":
                config.mqtt = readMQTT(value, baseDirectory: baseDirectory)
            case "overlays":
                config.overlays = readOverlays(value, baseDirectory: baseDirectory) ?? []
            case "log":
                guard let fields = members(value, at: "log", allowed: ["level"]) else { continue }
                for (_, v) in fields {
                    guard let s = string(v, at: "log.level") else { continue }
                    guard let level = Logger.Level(name: s) else {
                        problem("log.level", "\"\(Self.clipped(s))\" is not one of \(Logger.Level.allCases.map { "\"\($0.name)\"" }.joined(separator: ", "))")
                        continue
                    }
                    config.logLevel = level
                }
            default: break
            }
        }
        if let zone = config.timeZone { config.schedule?.timeZone = zone }
        checkNetworkItems(config)
        checkRemotePlaylist(config)
        return config
    }

    /// The file path a URI names: a plain path, or a `file://` URL.
    static func filePath(of uri: String) -> String? {
        if uri.isEmpty { return nil }
        if uri.hasPrefix("file://") { return URL(string: uri)?.path }
        if uri.contains("://") { return nil }
        return uri
    }
}
