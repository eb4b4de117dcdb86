import Foundation
import Control
import Playback

let usage = """
    Usage: marqueectl [--socket PATH | --socket=PATH] COMMAND [ARGS]
      or:  marqueectl --version | --help

    Talks to a running marquee over its control socket.

    Commands:
      status                     a summary: what plays, health, decoder, outputs
      health                     prints the health (exit status 0 ok, 1 degraded, 2 failed or stalled)
      get PROPERTY               prints a property as JSON (e.g. time-pos, playlist, outputs)
      set PROPERTY VALUE         sets a property (VALUE is JSON, e.g. set pause true)
      next | prev                the next or previous playlist item
      pause | resume             pauses or resumes playback
      display on|off             puts the display into standby or wakes it (display-power)
      seek SECONDS [absolute]    seek in the current item (relative unless "absolute")
      volume N                   the sound's volume, 0 to 100
      mute on|off                mutes or unmutes the sound
      reload                     re-read the config (a broken one is refused and the old one keeps playing)
      screenshot FILE.png [--output NAME]
                                 the picture of an output as PNG
      watch                      print events as they come (Ctrl-C to stop)

    Exit status: 0 done (health: ok); 1 health degraded; 2 health failed or stalled, a usage error
    or a local failure (writing the screenshot); 3 marquee unreachable (no socket, no reply);
    4 the request was refused (the reply's error is printed).

    """

/// The exit statuses, as the usage lists them.
enum ExitStatus {
    static let ok: Int32 = 0
    static let degraded: Int32 = 1
    static let failed: Int32 = 2
    static let unreachable: Int32 = 3
    static let refused: Int32 = 4
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("marqueectl: \(escapingControlCharacters(message))\n".utf8))
    exit(status)
}

// Options come before the command: `--socket PATH`, `--socket=PATH`, `--version`, `--help`.
var args = Array(CommandLine.arguments.dropFirst())[...]
var socketPath = defaultControlSocketPath()
while let option = args.first, option.hasPrefix("-") {
    args.removeFirst()
    switch option {
    case "--socket":
        guard let path = args.popFirst(), !path.isEmpty else { fail("--socket needs a path", status: ExitStatus.failed) }
        socketPath = path
    case _ where option.hasPrefix("--socket="):
        let path = String(option.dropFirst("--socket=".count))
        guard !path.isEmpty else { fail("--socket= needs a path", status: ExitStatus.failed) }
        socketPath = path
    case "--version":
        print("marqueectl \(marqueeVersionNumber >> 16).\(marqueeVersionNumber & 0xFFFF) (mpv JSON IPC, client API \(mpvClientAPIVersion >> 16).\(mpvClientAPIVersion & 0xFFFF))")
        exit(ExitStatus.ok)
    case "-h", "--help":
        print(usage, terminator: "")
        exit(ExitStatus.ok)
    default:
        fail("unknown option \(option) (see --help)", status: ExitStatus.failed)
    }
}
guard let command = args.first else {
    FileHandle.standardError.write(Data(usage.utf8))
    exit(ExitStatus.failed)
}
let rest = Array(args.dropFirst())
/// Each command's number of arguments: checked before connecting, so a usage error is one whether
/// or not marquee runs.
let arity: [String: ClosedRange<Int>] = ["status": 0...0, "health": 0...0, "get": 1...1, "set": 2...2, "next": 0...0, "prev": 0...0,
                                         "pause": 0...0, "resume": 0...0, "display": 1...1, "seek": 1...2, "reload": 0...0, "screenshot": 1...3, "watch": 0...0,
                                         "volume": 1...1, "mute": 1...1]
guard let expected = arity[command] else { fail("unknown command \(command) (see --help)", status: ExitStatus.failed) }
guard expected.contains(rest.count) else { fail("\(command): wrong number of arguments (see --help)", status: ExitStatus.failed) }

guard let client = UnixSocketClient.connect(path: socketPath, timeout: command == "screenshot" ? 40 : 5) else {
    fail("cannot connect to \(socketPath): is marquee running? (--socket PATH)", status: ExitStatus.unreachable)
}

/// Sends a request; returns `data` on success, exits with the error otherwise. Requests go one at a
/// time, so one request id serves.
@MainActor func request(_ words: [JSONValue]) -> JSONValue? {
    guard let reply = client.request(words, id: 1) else { fail("no reply from \(socketPath)", status: ExitStatus.unreachable) }
    guard reply["error"]?.stringValue == "success" else {
        let detail = reply["detail"]?.stringValue.map { ": \($0)" } ?? ""
        fail("\(words.first?.stringValue ?? "") failed: \(reply["error"]?.stringValue ?? "unknown error")\(detail)", status: ExitStatus.refused)
    }
    return reply["data"]
}

switch command {
case "status":
    let get = { (name: String) in client.request(["get_property", .string(name)], id: 0)?["data"] }
    let health = get("health")
    print("health:   \(health?["status"]?.stringValue ?? "?")")
    if case .array(let reasons)? = health?["reasons"] {
        for reason in reasons { print("          - \(escapingControlCharacters(reason.stringValue ?? ""))") }
    }
    // Numbers in a reply are shown as they came, never converted: whatever answers on the socket.
    let position = get("playlist-pos")?.numberValue.map { shownNumber($0 + 1) } ?? "?"
    let count = get("playlist-count")?.numberValue.map(shownNumber) ?? "?"
    // Text from the player (a file name) is shown with its control characters escaped.
    print("playing:  \(escapingControlCharacters(get("path")?.stringValue ?? "nothing")) (item \(position) of \(count))")
    if let t = get("time-pos")?.numberValue, let d = get("duration")?.numberValue {
        print("time:     \(String(format: "%.2f", t)) / \(String(format: "%.2f", d)) s\(get("pause")?.boolValue == true ? " (paused)" : "")")
    }
    print("decoder:  hwdec \(get("hwdec-current")?.stringValue ?? "?"), interop \(get("hwdec-interop")?.stringValue ?? "?")")
    print("frames:   \(shownNumber(get("frame-drop-count")?.numberValue ?? 0)) dropped, \(shownNumber(get("vo-delayed-frame-count")?.numberValue ?? 0)) late")
    if case .array(let outputs)? = get("outputs") {
        for output in outputs {
            print("output:   \(escapingControlCharacters(output["name"]?.stringValue ?? "?")) \(escapingControlCharacters(output["mode"]?.stringValue ?? ""))")
        }
    }
case "health":
    guard let health = request(["get_property", "health"]) else { fail("no health in the reply", status: ExitStatus.refused) }
    print(health.encoded)
    switch health["status"]?.stringValue {
    case "ok": exit(ExitStatus.ok)
    case "degraded": exit(ExitStatus.degraded)
    case "off": exit(ExitStatus.ok)  // in standby on purpose (a schedule, or by command)
    default: exit(ExitStatus.failed)
    }
case "get":
    print(request(["get_property", .string(rest[0])])?.encoded ?? "null")
case "set":
    guard let value = try? JSONParser.parse(rest[1]) else { fail("set: \(rest[1]) is not JSON (strings need quotes)", status: ExitStatus.failed) }
    _ = request(["set_property", .string(rest[0]), value])
case "next": _ = request(["playlist-next"])
case "prev": _ = request(["playlist-prev"])
case "pause": _ = request(["set_property", "pause", true])
case "resume": _ = request(["set_property", "pause", false])
case "display":
    guard rest[0] == "on" || rest[0] == "off" else { fail("display: \(rest[0]) is not on or off", status: ExitStatus.failed) }
    _ = request(["set_property", "display-power", .string(rest[0])])
case "reload": _ = request(["reload"])
case "volume":
    guard let volume = Double(rest[0]), volume.isFinite, (0...100).contains(volume) else {
        fail("volume: \(rest[0]) is not a number from 0 to 100", status: ExitStatus.failed)
    }
    _ = request(["set_property", "volume", .number(volume)])
case "mute":
    guard rest[0] == "on" || rest[0] == "off" else { fail("mute: write on or off, not \(rest[0])", status: ExitStatus.failed) }
    _ = request(["set_property", "mute", .bool(rest[0] == "on")])
case "seek":
    guard let seconds = Double(rest[0]), seconds.isFinite else { fail("seek: \(rest[0]) is not a number of seconds", status: ExitStatus.failed) }
    _ = request(["seek", .number(seconds), .string(rest.count == 2 ? rest[1] : "relative")])
case "screenshot":
    var words: [JSONValue] = ["screenshot"]
    if rest.count == 3 {
        guard rest[1] == "--output" else { fail("screenshot FILE.png [--output NAME]", status: ExitStatus.failed) }
        words.append(.string(rest[2]))
    }
    guard let shot = request(words), let base64 = shot["data"]?.stringValue, let png = Data(base64Encoded: base64) else {
        fail("screenshot: the reply has no picture", status: ExitStatus.refused)
    }
    do {
        try png.write(to: URL(fileURLWithPath: rest[0]))
    } catch {
        fail("screenshot: cannot write \(rest[0]): \(error.localizedDescription)", status: ExitStatus.failed)
    }
    print("\(rest[0]): \(shownNumber(shot["width"]?.numberValue ?? 0))x\(shownNumber(shot["height"]?.numberValue ?? 0)) from \(shot["output"]?.stringValue ?? "?")")
case "watch":
    for (id, name) in ["playlist-pos", "pause", "health"].enumerated() {
        _ = request(["observe_property", .number(Double(id + 1)), .string(name)])
    }
    while true {
        guard let line = client.readLine() else {
            // Quiet periods time out the read; a closed socket ends the watch.
            if UnixSocketClient.connect(path: socketPath, timeout: 1) == nil { exit(ExitStatus.ok) }
            continue
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
default:
    fail("unknown command \(command) (see --help)", status: ExitStatus.failed)
}
