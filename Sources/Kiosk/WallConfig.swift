import Foundation
import Media
import Playback
import Render

/// A video wall: a canvas of pixels shown across several outputs, on one machine or many.
///
/// ```json
/// "wall": {"canvas": {"width": 3840, "height": 2160},
///          "regions": [{"x": 0, "y": 0, "width": 3840, "height": 2160, "playlist": [{"uri": "a.mp4"}]}],
///          "outputs": [{"name": "left", "x": 0, "y": 0, "width": 1920, "height": 1080,
///                       "rotation": 0, "connector": "HDMI-A-1", "node": "pi-1"}],
///          "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z"}}
/// ```
/// `regions` are rectangles of the canvas, each playing its own playlist (one covering the canvas:
/// a span; several: a mosaic); absent, one region covers the canvas and plays the top-level
/// `playlist`, as does a region without a `playlist`. `outputs` are the screens: each shows its
/// rectangle of the canvas, so the gaps between output rectangles are the bezels, whose part of the
/// canvas is not shown. Each node (`--node`, by default the host name) drives the outputs that
/// name it; outputs that name no node belong to every node.
public struct WallConfig: Sendable, Equatable {
    public struct Region: Sendable, Equatable {
        public var rect: PixelRect
        /// The region's own items; nil: the top-level playlist.
        public var playlist: [KioskConfig.Item]?
        public var playlistOrigin: KioskConfig.PlaylistOrigin = .list
        /// Overrides `display.gravity` in this region.
        public var gravity: VideoGravity?
        public init(rect: PixelRect, playlist: [KioskConfig.Item]? = nil, gravity: VideoGravity? = nil) {
            self.rect = rect
            self.playlist = playlist
            self.gravity = gravity
        }
    }

    public struct Output: Sendable, Equatable {
        public var name: String
        /// The rectangle of the canvas this output shows, in canvas pixels.
        public var rect: PixelRect
        /// The screen's turn: a portrait screen shows a tall rectangle of the canvas on a wide mode.
        public var rotation: Rotation = .none
        /// The KMS connector (`HDMI-A-1`); nil: the first connected one.
        public var connector: String?
        /// The node that drives it; nil: every node.
        public var node: String?
        public init(name: String, rect: PixelRect, rotation: Rotation = .none, connector: String? = nil, node: String? = nil) {
            self.name = name
            self.rect = rect
            self.rotation = rotation
            self.connector = connector
            self.node = node
        }
    }

    public enum SyncMode: String, Sendable, CaseIterable {
        /// Each process starts its loop when it starts (its own outputs share one timeline).
        case free
        /// Playback is a function of the synchronized system clock: position (T - epoch) modulo the
        /// loop's length, the same on every output of every node.
        case clock
    }

    public struct Sync: Sendable, Equatable {
        public var mode: SyncMode = .free
        /// When the loop's first pass started (default: the Unix epoch).
        public var epoch = WallTime(nanoseconds: 0)
        /// `cue`: triggers play on every node on the same vsync (needs `clock`); nil: each node's alone.
        public var cue: WallCueSettings?
        public init(mode: SyncMode = .free, epoch: WallTime = WallTime(nanoseconds: 0)) {
            self.mode = mode
            self.epoch = epoch
        }
    }

    public var canvasWidth: Int
    public var canvasHeight: Int
    public var regions: [Region]
    public var outputs: [Output]
    public var sync = Sync()

    public init(canvasWidth: Int, canvasHeight: Int, regions: [Region], outputs: [Output], sync: Sync = Sync()) {
        self.canvasWidth = canvasWidth
        self.canvasHeight = canvasHeight
        self.regions = regions
        self.outputs = outputs
        self.sync = sync
    }

    public var canvas: PixelRect { PixelRect(x: 0, y: 0, width: canvasWidth, height: canvasHeight) }

    /// Every node named by an output, in order of first mention.
    public var nodes: [String] {
        var seen: [String] = []
        for output in outputs { if let node = output.node, !seen.contains(node) { seen.append(node) } }
        return seen
    }

    /// The outputs node `node` drives: those naming it and those naming no node. Throws when
    /// there are none (a node name that is not in the wall, or misspelt).
    public func outputs(forNode node: String) throws(WallConfigError) -> [Output] {
        let mine = outputs.filter { $0.node == nil || $0.node == node }
        guard !mine.isEmpty else {
            throw WallConfigError(message: "node \"\(node)\" drives no output of the wall: its nodes are "
                + nodes.map { "\"\($0)\"" }.joined(separator: ", ") + " (choose one with --node NAME)")
        }
        return mine
    }

    /// The regions output `output` shows some of, with their indices.
    public func regions(seenBy output: Output) -> [(index: Int, region: Region)] {
        regions.enumerated().filter { intersection($0.element.rect, output.rect) != nil }.map { ($0.offset, $0.element) }
    }

    /// The placement a layer needs to show `region` on `output` (`PlayerLayer.wallPlacement`).
    public func placement(of region: Region, on output: Output) -> WallPlacement {
        WallPlacement(window: output.rect, region: region.rect)
    }
}

public struct WallConfigError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let message: String
    public var description: String { message }
}

extension KioskConfig {
    /// The wall this config describes: its `wall`, or (a single-screen config) a wall of one
    /// output the size of `display.mode`, on `display.connector`, playing the playlist.
    public var effectiveWall: WallConfig {
        if let wall { return wall }
        let mode = display.mode
        let canvas = PixelRect(x: 0, y: 0, width: mode.width, height: mode.height)
        return WallConfig(canvasWidth: mode.width, canvasHeight: mode.height, regions: [WallConfig.Region(rect: canvas)],
                          outputs: [WallConfig.Output(name: "screen", rect: canvas, connector: display.kms.connector)])
    }

    /// The items region `index` of the effective wall plays (its own, or the top-level playlist).
    public func playlist(ofRegion index: Int) -> [Item] {
        effectiveWall.regions[index].playlist ?? playlist
    }

    /// The config as the session presenting output `slot` of `node` plays it: the playlist of the
    /// region that output shows (its `regionRank`th, on a mosaic output) and, where the node drives several outputs, wall sync by
    /// the clock (from this process's start when the config sets none), so that all of them follow
    /// one timeline. Unchanged without a wall, or when the wall gives `node` no output `slot`.
    public func forWallOutput(_ slot: Int, node: String, regionRank: Int = 0) -> KioskConfig {
        guard let wall, let outputs = try? wall.outputs(forNode: node), outputs.indices.contains(slot) else { return self }
        var chosen = self
        let seen = wall.regions(seenBy: outputs[slot])
        if seen.indices.contains(regionRank) {
            let region = seen[regionRank]
            chosen.playlist = playlist(ofRegion: region.index)
            if wall.regions[region.index].playlist != nil { chosen.playlistOrigin = wall.regions[region.index].playlistOrigin }
        }
        if outputs.count > 1 && wall.sync.mode != .clock {
            chosen.wall?.sync = WallConfig.Sync(mode: .clock, epoch: processTimelineEpoch)
        }
        return chosen
    }
}

/// The origin of the shared timeline of a node's outputs when the config sets no clock sync: when
/// this process first needed one.
let processTimelineEpoch = WallTime.now()

/// This machine's node name: the host name up to its first dot (what `--node` defaults to).
public func defaultWallNodeName() -> String {
    let name = ProcessInfo.processInfo.hostName
    return String(name.split(separator: ".").first ?? Substring(name))
}

extension ConfigReader {
    /// Whether `wall` gives every region its own playlist (then no top-level playlist is needed).
    static func wallHasOwnPlaylists(_ wall: JSONValue?) -> Bool {
        guard let wall, case .array(let regions)? = wall["regions"], !regions.isEmpty else { return false }
        return regions.allSatisfy { $0["playlist"] != nil }
    }

    /// A number as written, anything else by its type.
    static func shown(_ value: JSONValue) -> String {
        if case .number(let n) = value { return shownNumber(n) }
        return value.typeName
    }

    /// The largest pixel coordinate or size a wall may give.
    static let largestPixelValue = 999_999_999

    /// A whole number of pixels at `path`, from `minimum` to `largestPixelValue`.
    mutating func integer(_ value: JSONValue, at path: String, minimum: Int) -> Int? {
        guard case .number(let n) = value, n.rounded() == n else {
            problem(path, "expected a whole number, found \(Self.shown(value))")
            return nil
        }
        guard n >= Double(minimum) else {
            problem(path, "\(shownNumber(n)) is less than \(minimum)")
            return nil
        }
        do {
            return try checkedInteger(n, in: minimum...Self.largestPixelValue, field: path)
        } catch {
            problem(error)
            return nil
        }
    }

    /// `x`, `y`, `width`, `height` of the object at `path` (fields already checked against the allowed keys).
    mutating func rectangle(_ value: JSONValue, at path: String) -> PixelRect? {
        var v: [String: Int] = [:]
        var ok = true
        for key in ["x", "y", "width", "height"] {
            guard let field = value[key] else {
                problem("\(path).\(key)", "missing: a rectangle needs x, y, width and height (pixels)")
                ok = false
                continue
            }
            if let n = integer(field, at: "\(path).\(key)", minimum: key.count == 1 ? 0 : 1) { v[key] = n } else { ok = false }
        }
        guard ok, let x = v["x"], let y = v["y"], let w = v["width"], let h = v["height"] else { return nil }
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    /// The epochs a wall may give: from 1970 to the end of 2199, so that the time from the epoch to
    /// any moment the system clock can hold (up to 2262) fits in Int64 nanoseconds.
    static let epochRange = WallTime(nanoseconds: 0)...WallTime(iso8601: "2199-12-31T23:59:59.999999999Z")!

    /// Whether `text` begins with a four-digit year outside 1970 to 2199 (then it is a time out of
    /// range rather than a malformed one).
    static func yearOutsideEpochRange(_ text: String) -> Bool {
        let digits = text.prefix(5)
        guard digits.count == 5, digits.last == "-", digits.prefix(4).allSatisfy({ $0.isASCII && $0.isNumber }), let year = Int(digits.prefix(4)) else { return false }
        return !(1970...2199).contains(year)
    }

    mutating func readWall(_ value: JSONValue, baseDirectory: String) -> WallConfig? {
        guard members(value, at: "wall", allowed: ["canvas", "regions", "outputs", "sync"]) != nil else { return nil }
        var wall = WallConfig(canvasWidth: 0, canvasHeight: 0, regions: [], outputs: [])
        var ok = true

        // The canvas.
        if let canvas = value["canvas"] {
            if members(canvas, at: "wall.canvas", allowed: ["width", "height"]) != nil {
                for key in ["width", "height"] {
                    guard let field = canvas[key] else {
                        problem("wall.canvas.\(key)", "missing: the canvas's \(key) in pixels")
                        ok = false
                        continue
                    }
                    if let n = integer(field, at: "wall.canvas.\(key)", minimum: 1) {
                        if key == "width" { wall.canvasWidth = n } else { wall.canvasHeight = n }
                    } else {
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        } else {
            problem("wall.canvas", "missing: the canvas's size, e.g. {\"width\": 3840, \"height\": 2160}")
            ok = false
        }
        let canvasKnown = ok
        let canvas = wall.canvas
        let canvasText = "\(canvas.width)x\(canvas.height)"

        // Regions: inside the canvas, not overlapping.
        if let regions = value["regions"] {
            if case .array(let list) = regions {
                if list.isEmpty { problem("wall.regions", "empty: give at least one region, or leave regions out to span the canvas") }
                for (i, item) in list.enumerated() {
                    let path = "wall.regions[\(i)]"
                    guard members(item, at: path, allowed: ["x", "y", "width", "height", "playlist", "gravity"]) != nil,
                          let rect = rectangle(item, at: path) else { ok = false; continue }
                    var region = WallConfig.Region(rect: rect)
                    if canvasKnown && intersection(rect, canvas) != rect {
                        problem(path, "\(rect) reaches past the canvas (\(canvasText))")
                        ok = false
                    }
                    for (j, other) in wall.regions.enumerated() {
                        if let overlap = intersection(rect, other.rect) {
                            problem(path, "overlaps wall.regions[\(j)] (by \(overlap)): regions of a mosaic must not overlap")
                            ok = false
                        }
                    }
                    if let gravity = item["gravity"] {
                        region.gravity = choice(gravity, at: "\(path).gravity")
                        if region.gravity == nil { ok = false }
                    }
                    if let playlist = item["playlist"] {
                        let before = problems.count
                        if let (items, origin) = readPlaylist(playlist, at: "\(path).playlist",
                                                              emptyHint: "give at least one item, or leave playlist out to play the top-level one",
                                                              baseDirectory: baseDirectory) {
                            region.playlist = items
                            region.playlistOrigin = origin
                        }
                        if problems.count != before { ok = false }
                    }
                    wall.regions.append(region)
                }
            } else {
                problem("wall.regions", "expected an array of regions, found \(regions.typeName)")
                ok = false
            }
        } else if canvasKnown {
            wall.regions = [WallConfig.Region(rect: canvas)]
        }

        // Outputs: named uniquely, inside the canvas.
        if let outputs = value["outputs"], case .array(let list) = outputs, !list.isEmpty {
            for (i, item) in list.enumerated() {
                let path = "wall.outputs[\(i)]"
                guard members(item, at: path, allowed: ["name", "x", "y", "width", "height", "rotation", "connector", "node"]) != nil
                else { ok = false; continue }
                var name: String?
                if let v = item["name"] {
                    name = string(v, at: "\(path).name")
                    if name?.isEmpty == true {
                        problem("\(path).name", "empty: name the output, e.g. \"left\"")
                        name = nil
                    }
                } else {
                    problem("\(path).name", "missing: name the output, e.g. \"left\"")
                }
                let rect = rectangle(item, at: path)
                guard let name, let rect else { ok = false; continue }
                var output = WallConfig.Output(name: name, rect: rect)
                if let j = wall.outputs.firstIndex(where: { $0.name == name }) {
                    problem("\(path).name", "\"\(Self.clipped(name))\" is already the name of wall.outputs[\(j)]")
                    ok = false
                }
                if canvasKnown && intersection(rect, canvas) != rect {
                    problem(path, "\(rect) reaches past the canvas (\(canvasText))")
                    ok = false
                }
                if let v = item["rotation"] {
                    if case .number(let degrees) = v, let whole = try? checkedInteger(degrees, in: 0...270, field: "\(path).rotation"),
                       let r = Rotation(rawValue: whole) {
                        output.rotation = r
                    } else {
                        problem("\(path).rotation", "expected 0, 90, 180 or 270 (degrees clockwise), found \(Self.shown(v))")
                        ok = false
                    }
                }
                for key in ["connector", "node"] {
                    guard let v = item[key] else { continue }
                    guard let s = string(v, at: "\(path).\(key)") else { ok = false; continue }
                    guard !s.isEmpty else {
                        problem("\(path).\(key)", key == "node" ? "empty: give the node's name (its host name or --node)" : "empty: write e.g. HDMI-A-1")
                        ok = false
                        continue
                    }
                    if key == "node" { output.node = s } else { output.connector = s }
                }
                if let connector = output.connector,
                   let j = wall.outputs.firstIndex(where: { $0.connector == connector && $0.node == output.node }) {
                    problem("\(path).connector", "\(connector) is already used by wall.outputs[\(j)] on the same node")
                    ok = false
                }
                wall.outputs.append(output)
            }
            // Some outputs naming nodes and some not is a mistake more often than a plan.
            let named = wall.outputs.filter { $0.node != nil }.count
            if named > 0 && named < wall.outputs.count, let i = wall.outputs.firstIndex(where: { $0.node == nil }) {
                problem("wall.outputs[\(i)].node", "missing: the other outputs name their node (\(wall.nodes.joined(separator: ", "))), so this one must too")
                ok = false
            }
        } else if let outputs = value["outputs"] {
            if case .array = outputs {
                problem("wall.outputs", "empty: give at least one output")
            } else {
                problem("wall.outputs", "expected an array of outputs, found \(outputs.typeName)")
            }
            ok = false
        } else {
            problem("wall.outputs", "missing: the screens, each {\"name\", \"x\", \"y\", \"width\", \"height\"} on the canvas")
            ok = false
        }

        // Sync.
        if let sync = value["sync"], let fields = members(sync, at: "wall.sync", allowed: ["mode", "epoch", "cue"]) {
            for (key, v) in fields {
                if key == "cue" {
                    wall.sync.cue = readWallCue(v, at: "wall.sync.cue", wallNodes: wall.nodes)
                    if wall.sync.cue == nil { ok = false }
                } else if key == "mode" {
                    if let mode: WallConfig.SyncMode = choice(v, at: "wall.sync.mode") { wall.sync.mode = mode } else { ok = false }
                } else {
                    guard let s = string(v, at: "wall.sync.epoch") else { ok = false; continue }
                    guard let epoch = WallTime(iso8601: s), Self.epochRange.contains(epoch) else {
                        if WallTime(iso8601: s) != nil || Self.yearOutsideEpochRange(s) {
                            problem("wall.sync.epoch", "\"\(Self.clipped(s))\" is outside the years 1970 to 2199: write e.g. 2026-01-01T00:00:00Z")
                        } else {
                            problem("wall.sync.epoch", "\"\(Self.clipped(s))\" is not an ISO-8601 time with its zone: write e.g. 2026-01-01T00:00:00Z")
                        }
                        ok = false
                        continue
                    }
                    wall.sync.epoch = epoch
                }
            }
        } else if value["sync"] != nil {
            ok = false
        }
        if wall.sync.cue != nil && wall.sync.mode != .clock {
            problem("wall.sync.cue", "needs \"mode\": \"clock\": the nodes cut on a wall time, so their clocks must agree")
            ok = false
        }
        return ok ? wall : nil
    }
}
