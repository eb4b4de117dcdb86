import Foundation
import Kiosk
import Playback

let usage = """
    Usage: marqueectl [--socket PATH] COMMAND [ARGS]

    Talks to a running marquee over its control socket.

    Commands:
      status                     a summary: what plays, health, decoder, outputs
      health                     prints the health; exit status 0 ok, 1 degraded, 2 failed or stalled (3: no answer)
      get PROPERTY               prints a property as JSON (e.g. time-pos, playlist, outputs)
      set PROPERTY VALUE         sets a property (VALUE is JSON, e.g. set pause true)
      next | prev                the next or previous playlist item
      pause | resume
      seek SECONDS [absolute]    seek in the current item (relative unless "absolute")
      reload                     re-read the config (a broken one is refused and the old one keeps playing)
      screenshot FILE.png [--output NAME]
                                 the picture of an output as PNG
      watch                      print events as they come (Ctrl-C to stop)

    """

func fail(_ message: String, status: Int32 = 3) -> Never {
    FileHandle.standardError.write(Data("marqueectl: \(escapingControlCharacters(message))\n".utf8))
    exit(status)
}

var args = Array(CommandLine.arguments.dropFirst())
var socketPath = defaultControlSocketPath()
if let i = args.firstIndex(of: "--socket") {
    guard i + 1 < args.count else { fail("--socket needs a path", status: 2) }
    socketPath = args[i + 1]
    args.removeSubrange(i...(i + 1))
}
guard let command = args.first else {
    print(usage, terminator: "")
    exit(2)
}
if command == "-h" || command == "--help" {
    print(usage, terminator: "")
    exit(0)
}
let rest = Array(args.dropFirst())

guard let client = UnixSocketClient.connect(path: socketPath, timeout: command == "screenshot" ? 40 : 5) else {
    fail("cannot connect to \(socketPath): is marquee running? (--socket PATH)")
}

/// Sends a request; returns `data` on success, exits with the error otherwise. Requests go one at a
/// time, so one request id serves.
@MainActor func request(_ words: [JSONValue]) -> JSONValue? {
    guard let reply = client.request(words, id: 1) else { fail("no reply from \(socketPath)") }
    guard reply["error"]?.stringValue == "success" else {
        let detail = reply["detail"]?.stringValue.map { ": \($0)" } ?? ""
        fail("\(words.first?.stringValue ?? "") failed: \(reply["error"]?.stringValue ?? "unknown error")\(detail)", status: 1)
    }
    return reply["data"]
}

@MainActor func expectArguments(_ count: ClosedRange<Int>) {
    guard count.contains(rest.count) else { fail("\(command): wrong number of arguments (see --help)", status: 2) }
}

switch command {
case "status":
    expectArguments(0...0)
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
    expectArguments(0...0)
    guard let health = request(["get_property", "health"]) else { fail("no health in the reply") }
    print(health.encoded)
    switch health["status"]?.stringValue {
    case "ok": exit(0)
    case "degraded": exit(1)
    default: exit(2)
    }
case "get":
    expectArguments(1...1)
    print(request(["get_property", .string(rest[0])])?.encoded ?? "null")
case "set":
    expectArguments(2...2)
    guard let value = try? JSONParser.parse(rest[1]) else { fail("set: \(rest[1]) is not JSON (strings need quotes)", status: 2) }
    _ = request(["set_property", .string(rest[0]), value])
case "next": expectArguments(0...0); _ = request(["playlist-next"])
case "prev": expectArguments(0...0); _ = request(["playlist-prev"])
case "pause": expectArguments(0...0); _ = request(["set_property", "pause", true])
case "resume": expectArguments(0...0); _ = request(["set_property", "pause", false])
case "reload": expectArguments(0...0); _ = request(["reload"])
case "seek":
    expectArguments(1...2)
    guard let seconds = Double(rest[0]), seconds.isFinite else { fail("seek: \(rest[0]) is not a number of seconds", status: 2) }
    _ = request(["seek", .number(seconds), .string(rest.count == 2 ? rest[1] : "relative")])
case "screenshot":
    expectArguments(1...3)
    var words: [JSONValue] = ["screenshot"]
    if rest.count == 3 {
        guard rest[1] == "--output" else { fail("screenshot FILE.png [--output NAME]", status: 2) }
        words.append(.string(rest[2]))
    }
    guard let shot = request(words), let base64 = shot["data"]?.stringValue, let png = Data(base64Encoded: base64) else {
        fail("screenshot: the reply has no picture", status: 1)
    }
    do {
        try png.write(to: URL(fileURLWithPath: rest[0]))
    } catch {
        fail("screenshot: cannot write \(rest[0]): \(error.localizedDescription)", status: 1)
    }
    print("\(rest[0]): \(shownNumber(shot["width"]?.numberValue ?? 0))x\(shownNumber(shot["height"]?.numberValue ?? 0)) from \(shot["output"]?.stringValue ?? "?")")
case "watch":
    expectArguments(0...0)
    for (id, name) in ["playlist-pos", "pause", "health"].enumerated() {
        _ = request(["observe_property", .number(Double(id + 1)), .string(name)])
    }
    while true {
        guard let line = client.readLine() else {
            // Quiet periods time out the read; a closed socket ends the watch.
            if UnixSocketClient.connect(path: socketPath, timeout: 1) == nil { exit(0) }
            continue
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
default:
    fail("unknown command \(command) (see --help)", status: 2)
}
