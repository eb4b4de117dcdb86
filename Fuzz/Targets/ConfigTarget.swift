import Foundation
import Kiosk
import Media
import Playback
import Render

/// The config reader on any text, as `marquee --check-config` reads a file (single screen, wall and
/// playlist forms), then what a valid config is used for before any media is opened: each node's
/// wall outputs, the config each output plays, and the placement of the picture on each output.
public func fuzzConfig(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    // `{"m3u": ...}` and `{"directory": ...}` are read while the config is: keep them inside the
    // fuzzer's own folder (a device node or a FIFO elsewhere would hang the reader, which is the
    // storage part's business, not the parser's).
    if let json = try? JSONParser.parse(text), namesOutsideFolder(json) { return }
    guard let config = try? KioskConfig.parse(text, source: "fuzz.json", baseDirectory: configFolder) else { return }
    // The newer parts (issue 26): warnings, the schedule's choice at a few moments and the config
    // each entry plays, each item's transition, each overlay's place on a few surfaces.
    for warning in config.warnings { _ = warning.description }
    if let schedule = config.schedule {
        for unix in [0, 1_790_000_000, 1_800_000_000, 4_102_444_800] as [Int64] {
            let entry = schedule.entry(at: WallTime(nanoseconds: unix * 1_000_000_000))
            _ = config.playing(entry: entry).playlist.count
            _ = schedule.name(of: entry)
        }
    }
    for item in config.playlist { _ = config.transition(into: item) }
    for overlay in config.overlays {
        for (w, h, sw, sh) in [(1, 1, 1, 1), (240, 80, 1920, 1080), (16384, 16384, 320, 180)] {
            _ = overlay.origin(width: w, height: h, surfaceWidth: sw, surfaceHeight: sh)
        }
    }
    _ = (config.audio.volume, config.audio.delay)
    let wall = config.effectiveWall
    for node in wall.nodes + ["fuzz-node"] {
        guard let outputs = try? wall.outputs(forNode: node) else { continue }
        for (slot, output) in outputs.enumerated() {
            let seen = wall.regions(seenBy: output)
            for rank in seen.indices {
                let chosen = config.forWallOutput(slot, node: node, regionRank: rank)
                _ = chosen.playlist.count
                let placement = wall.placement(of: seen[rank].region, on: output)
                let mode = chosen.display.mode
                for (width, height) in [(1920, 1080), (1, 1), (mode.width, mode.height)] {
                    _ = wallPiece(placement, bounds: PixelRect(x: 0, y: 0, width: mode.width, height: mode.height),
                                  displayRotation: output.rotation, contentWidth: width, contentHeight: height,
                                  gravity: seen[rank].region.gravity ?? chosen.display.gravity)
                }
            }
        }
    }
}

/// Whether a playlist in `json` names a folder or M3U file outside the fuzzer's folder.
private func namesOutsideFolder(_ json: JSONValue) -> Bool {
    switch json {
    case .object(let members):
        return members.contains { member in
            if member.key == "m3u" || member.key == "directory", case .string(let s) = member.value {
                return s.hasPrefix("/") || s.contains("..")
            }
            return namesOutsideFolder(member.value)
        }
    case .array(let values):
        return values.contains(where: namesOutsideFolder)
    default:
        return false
    }
}

/// The config's folder: a playlist folder `demo/` with one clip, an empty folder `empty/`, M3U
/// files `list.m3u` (entries) and `empty.m3u`, and `fifo`, a FIFO nobody writes to (named as an
/// M3U, a font or a picture it must be refused at once, never waited on).
private let configFolder: String = {
    let folder = scratchFolder("config")
    let manager = FileManager.default
    try? manager.createDirectory(atPath: folder + "/demo", withIntermediateDirectories: true)
    try? manager.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
    _ = mkfifo(folder + "/fifo", 0o600)
    _ = manager.createFile(atPath: folder + "/demo/demo.mp4", contents: Data())
    _ = manager.createFile(atPath: folder + "/list.m3u", contents: Data("#EXTM3U\ndemo/demo.mp4\nfile:///media/b.mp4\n".utf8))
    _ = manager.createFile(atPath: folder + "/empty.m3u", contents: Data())
    return folder
}()
