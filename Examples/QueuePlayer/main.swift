// QueuePlayerExample: a queue player as in Apple's "AV Foundation Programming Guide": items are
// appended with `canInsert(_:after:)` / `insert(_:after: nil)`, a boundary time observer logs
// when playback crosses one and two thirds of the first item's duration, and an item that cannot
// be played reports its failed status with the error.
//
//     QueuePlayerExample FILE
//
// Queues FILE (any clip; `ffmpeg -f lavfi -i testsrc2=size=320x180:rate=30 -t 1.5 clip.mp4` makes
// one), then a file that does not exist, then FILE again; plays the queue to its end in a player
// view on a headless output paced like a 60 Hz display, and exits.
import Display
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let logger = Logger(level: .error, sink: { _ in })  // the failed item is reported below, not logged

func output(_ line: String) {
    FileHandle.standardOutput.write(Data(("QueuePlayerExample: " + line + "\n").utf8))
}

guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: QueuePlayerExample FILE\n".utf8))
    exit(2)
}
let missing = NSTemporaryDirectory() + "marquee-example-missing-\(getpid()).mp4"
output("queueing \(path), then \(missing) (which does not exist), then \(path) again")

let first = PlayerItem(url: URL(fileURLWithPath: path))
let player = QueuePlayer(items: [first], logger: logger)

// Appending: ask first whether the item can go at the end.
let items = [first, PlayerItem(url: URL(fileURLWithPath: missing)), PlayerItem(url: URL(fileURLWithPath: path))]
for (index, item) in items.enumerated() {
    item.playlistIndex = index + 1
    guard item !== first else { continue }
    if player.canInsert(item, after: nil) {
        try player.insert(item, after: nil)
        output("appended item \(index + 1) (\(item.asset.url.lastPathComponent))")
    } else {
        output("cannot append item \(index + 1)")
    }
}

// Each item's status: ready to play, or failed with the reason.
let statusObservers = items.map { item in
    Task {
        for await status in item.statusUpdates() where status != .unknown {
            if status == .failed {
                output("item \(item.playlistIndex!) status: failed: \(item.error.map { "\($0)" } ?? "no error")")
            } else {
                output("item \(item.playlistIndex!) status: \(status)")
            }
            return
        }
    }
}

// Boundary times at one and two thirds of the first item's duration.
let duration: MediaTime
do {
    duration = try await first.asset.load(.duration)
} catch {
    output("the first item's duration did not load: \(error)")
    exit(1)
}
let thirds = [MediaTime(seconds: duration.seconds / 3, preferredTimescale: 600),
              MediaTime(seconds: duration.seconds * 2 / 3, preferredTimescale: 600)]
output("duration \(duration); boundaries at \(thirds.map(\.description).joined(separator: " and "))")
for boundary in thirds {
    _ = try player.addBoundaryTimeObserver(forTimes: [boundary]) { [player] in
        let item = player.currentItem.map { "item \($0.playlistIndex!)" } ?? "no item"
        output("crossed boundary \(boundary) in \(item) at \(player.currentTime())")
    }
}

// The player view shows the queue; the current item stream says when it has played out.
let view = try PlayerView(output: .headless(mode: DisplayMode(width: 640, height: 360, refresh: RefreshRate(numerator: 60))),
                          logger: logger)
view.player = player
let currentItems = player.currentItemUpdates()
player.play()
for await current in currentItems where current == nil { break }
try view.close()
player.removeAllItems()  // ends the decode threads
// So that none is decoding as the process exits.
let stillDecoding = Player.waitForDecodeThreadsToEnd(timeout: 2)
output(stillDecoding == 0 ? "every decode thread has ended" : "\(stillDecoding) decode threads still running")
for observer in statusObservers { await observer.value }
let stats = player.stats
output("queue played out: \(stats.presented) frames presented, \(stats.dropped) dropped; current item: \(player.currentItem.map { "\($0)" } ?? "none")")
