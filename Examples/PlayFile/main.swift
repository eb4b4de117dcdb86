// PlayFileExample: plays a file the way Apple's "AV Foundation Programming Guide" does in
// "Playback": load the asset's tracks asynchronously, make a player item, observe the item's
// status before attaching it to the player, play when the item is ready, and loop by seeking back
// to zero when the item has played to its end.
//
//     PlayFileExample FILE [SECONDS]
//
// Plays FILE (any clip; `ffmpeg -f lavfi -i testsrc2=size=320x180:rate=30 -t 1 clip.mp4` makes
// one) for SECONDS (default 3) of display time on a headless output whose virtual clock runs as fast as frames are ready,
// then stops and exits.
//
// The notification loop is the guide's, and gapless: near its end the player keeps the item's
// start decoded, and the end's vsync waits for the handler's seek, so frame 0 follows the last
// frame on the vsync the next frame was due.
import Display
import ExampleSupport
import Foundation
import Media
import Playback

let arguments = Array(CommandLine.arguments.dropFirst())
let seconds = arguments.count > 1 ? Double(arguments[1]) ?? 3 : 3
let logger = Logger(level: .warning)

func output(_ line: String) {
    FileHandle.standardOutput.write(Data(("PlayFileExample: " + line + "\n").utf8))
}

guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: PlayFileExample FILE [SECONDS]\n".utf8))
    exit(2)
}
output("playing \(path) for \(seconds) s on a headless output with the virtual clock")

// 1. An asset, and its tracks loaded asynchronously before anything else.
let asset = Asset(url: URL(fileURLWithPath: path), backend: FFmpegBackend())
do {
    let tracks = try await asset.load(.tracks)
    for track in tracks {
        output("track \(track.trackID): \(track.mediaType.rawValue) \(track.codec) \(track.naturalSize) \(track.nominalFrameRate) fps, rotated \(track.preferredTransform.rotationDegrees) degrees")
    }
} catch {
    output("the asset's tracks did not load: \(error)")
    exit(1)
}

// 2. A player item, whose status is observed before it is attached to the player.
let item = PlayerItem(asset: asset)
let player = Player(logger: logger)
try player.setActionAtItemEnd(.none)  // the loop below seeks back; the item stays current
let statusUpdates = item.statusUpdates()  // subscribed now, before the item is attached
let statusObserver = Task { () -> PlayerItem.Status in
    for await status in statusUpdates {
        output("item status: \(status)")
        if status != .unknown { return status }
    }
    return item.status
}

// 3. Looping: at didPlayToEndTime, seek to zero.
final class LoopCounter: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var ends = 0
    private var landed = 0
    func ended() -> Int { lock.withLock { ends += 1; return ends } }
    func seekLanded() { lock.withLock { landed += 1 } }
    var counts: (ends: Int, seeks: Int) { lock.withLock { (ends, landed) } }
}
let loops = LoopCounter()
let itemEvents = item.events()
let endObserver = Task {
    for await event in itemEvents {
        guard case .didPlayToEndTime = event else { continue }
        let n = loops.ended()
        output("didPlayToEndTime (\(n)): seeking to zero")
        player.seek(to: .zero) { [loops] finished in
            if finished { loops.seekLanded() }
        }
    }
}

// Attaching the item starts loading what it needs; its status tells when it can play.
try player.replaceCurrentItem(with: item)
let status = await statusObserver.value
guard status == .readyToPlay else {
    output("the item cannot be played: \(item.error.map { "\($0)" } ?? "unknown error")")
    exit(1)
}
output("ready to play: duration \(item.duration), presentation size \(item.presentationSize); playing")
player.play()

// The display: a headless output on its own thread (its GL context lives there) pulls one picture
// per vsync for `seconds` of display time. Its virtual clock does not wait for the wall clock, so
// at the item's end it gives the notification handler above the moment a real display's vsync
// interval would (up to a second) to seek back.
let duration = item.duration
let result = await ExampleDisplay.present(player, seconds: seconds, logger: logger) { [player] in
    let deadline = Date(timeIntervalSinceNow: 1)
    while player.currentTime() >= duration && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
}
player.pause()
try player.replaceCurrentItem(with: nil)  // ends the decode thread
_ = Player.waitForDecodeThreadsToEnd(timeout: 2)  // so that none is decoding as the process exits
endObserver.cancel()
switch result {
case .success(let stats):
    let (ends, seeks) = loops.counts
    output("stopped after \(seconds) s: \(stats.presented) frames presented, \(stats.dropped) dropped; played to the end \(ends) times, \(seeks) seeks to zero landed")
case .failure(let error):
    output("the display failed: \(error)")
    exit(1)
}
