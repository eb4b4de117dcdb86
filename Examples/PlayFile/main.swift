// PlayFileExample: plays a file the way Apple's "AV Foundation Programming Guide" does in
// "Playback": load the asset's tracks asynchronously, make a player item, observe the item's
// status before attaching it to the player, show the player in a player view, play when the item
// is ready, and loop by seeking back to zero when the item has played to its end.
//
//     PlayFileExample FILE [SECONDS]
//
// Plays FILE (any clip; `ffmpeg -f lavfi -i testsrc2=size=320x180:rate=30 -t 1 clip.mp4` makes
// one) for SECONDS (default 3) on a headless output paced like a 60 Hz display, then stops and
// exits.
//
// The notification loop is the guide's, and gapless: near its end the player keeps the item's
// start decoded, and the end's vsync waits for the handler's seek, so frame 0 follows the last
// frame on the vsync the next frame was due.
import Display
import Foundation
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
let seconds = arguments.count > 1 ? Double(arguments[1]).flatMap { $0.isFinite && $0 > 0 && $0 < 3600 ? $0 : nil } ?? 3 : 3
let logger = Logger(level: .warning)

func output(_ line: String) {
    FileHandle.standardOutput.write(Data(("PlayFileExample: " + line + "\n").utf8))
}

guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: PlayFileExample FILE [SECONDS]\n".utf8))
    exit(2)
}
output("playing \(path) for \(seconds) s on a headless output")

// 1. An asset, and its tracks loaded asynchronously before anything else.
let asset = Asset(url: URL(fileURLWithPath: path))
do {
    let tracks = try await asset.load(.tracks)
    for track in tracks {
        output("track \(track.trackID): \(track.mediaType.rawValue) \(track.codec) \(track.naturalSize) \(track.nominalFrameRate) fps, rotated \(track.preferredTransform.rotationDegrees) degrees")
    }
} catch {
    output("the asset's tracks did not load: \(error)")
    exit(1)
}

// 2. A player item, whose status is observed before it is attached to the player (the stream
// starts with the status now, as KVO's .initial does).
let item = PlayerItem(asset: asset)
let statusUpdates = item.statusUpdates()
let statusObserver = Task { () -> PlayerItem.Status in
    for await status in statusUpdates {
        output("item status: \(status)")
        if status != .unknown { return status }
    }
    return item.status
}

// 3. At the item's end, seek back to zero (the guide's playerItemDidReachEnd:). With
// actionAtItemEnd .none the player keeps playing, so the seek starts the next pass.
let counts = Mutex((ends: 0, landed: 0))
let itemEvents = item.events()  // subscribed now, before the item can end
let player = try Player(item: item, logger: logger)
player.actionAtItemEnd = .none
let endObserver = Task {
    for await event in itemEvents {
        guard case .didPlayToEndTime = event else { continue }
        let n = counts.withLock { $0.ends += 1; return $0.ends }
        output("didPlayToEndTime (\(n)): seeking to zero")
        if await player.seek(to: .zero) { counts.withLock { $0.landed += 1 } }
    }
}

// 4. The player view: an output and the thread that presents on it.
let view = try PlayerView(output: .headless(mode: DisplayMode(width: 640, height: 360, refresh: RefreshRate(numerator: 60))),
                          logger: logger)
view.player = player

let status = await statusObserver.value
guard status == .readyToPlay else {
    output("the item cannot be played: \(item.error.map { "\($0)" } ?? "unknown error")")
    exit(1)
}
output("ready to play: duration \(item.duration), presentation size \(item.presentationSize); playing")
player.play()
try await Task.sleep(for: .seconds(seconds))
player.pause()

try view.close()
endObserver.cancel()
try player.replaceCurrentItem(with: nil)  // ends the decode thread
_ = Player.waitForDecodeThreadsToEnd(timeout: 2)  // so that none is decoding as the process exits
let stats = player.stats
let (ends, seeks) = counts.withLock { ($0.ends, $0.landed) }
output("stopped after \(seconds) s: \(stats.presented) frames presented, \(stats.dropped) dropped; played to the end \(ends) times, \(seeks) seeks to zero landed")
