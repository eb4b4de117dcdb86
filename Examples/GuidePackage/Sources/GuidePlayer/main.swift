// The AV Foundation Programming Guide's "Putting It All Together: Playing a Video File Using
// AVPlayerLayer", in Marquee's API, as an app depending on the Marquee package writes it:
//
//     GuidePlayer FILE [SECONDS]
//
// The view controller loads FILE's tracks, makes a player item whose status it observes before the
// item meets the player, shows the player in a player view (a headless output here: no screen
// needed) and enables its play button when the item is ready. The "user" presses play as soon as
// the button is enabled and watches for SECONDS (default 2); at the item's end the player pauses
// (AVPlayer's default actionAtItemEnd) and the controller seeks back to zero, as the guide does.
// When the tracks do not load it prints why, through `localizedDescription`, and exits 1.
import Display
import Foundation

func say(_ line: String) {
    print("GuidePlayer: \(line)")
}

/// The guide's PlayerViewController: a player, its item, a player view and a play button.
@MainActor
final class PlayerViewController {
    var player: Player?
    var playerItem: PlayerItem?
    let playerView: PlayerView
    /// The play button's `enabled`, as `syncUI` sets it; every change is also sent on `playButton`.
    private(set) var playButtonEnabled = false
    let playButton: AsyncStream<Bool>
    private let playButtonChanges: AsyncStream<Bool>.Continuation

    init(playerView: PlayerView) {
        self.playerView = playerView
        (playButton, playButtonChanges) = AsyncStream.makeStream(of: Bool.self)
        say("play button disabled")
        syncUI()  // viewDidLoad
    }

    func syncUI() {
        let enabled = player?.currentItem != nil && player?.currentItem?.status == .readyToPlay
        if enabled != playButtonEnabled { say("play button \(enabled ? "enabled" : "disabled")") }
        playButtonEnabled = enabled
        playButtonChanges.yield(enabled)
    }

    func loadAssetFromFile(_ fileURL: URL) {
        let asset = Asset(url: fileURL)
        let tracksKey = "tracks"
        asset.loadValues(forKeys: [tracksKey]) {
            // The completion handler: on the main queue, as the guide's dispatch_async does.
            Task { @MainActor in
                let (status, error) = asset.statusOfValue(forKey: tracksKey)
                guard status == .loaded else {
                    // "You should deal with the error appropriately."
                    say("The asset's tracks were not loaded:\n\(error?.localizedDescription ?? "status \(status)")")
                    self.playButtonChanges.finish()
                    return
                }
                let playerItem = PlayerItem(asset: asset)
                self.playerItem = playerItem
                // Ensure that this is done before the playerItem is associated with the player.
                self.observeStatus(of: playerItem)
                self.observeDidPlayToEndTime(of: playerItem)
                do {
                    self.player = try Player(item: playerItem)
                } catch {
                    say("no player: \(error.localizedDescription)")
                    self.playButtonChanges.finish()
                    return
                }
                self.playerView.player = self.player
            }
        }
    }

    /// The key-value observation of the item's status (with `.initial`): each change syncs the UI.
    private func observeStatus(of item: PlayerItem) {
        let statuses = item.statusUpdates()
        Task { @MainActor in
            for await status in statuses {
                say("item status: \(status)")
                self.syncUI()
                if status == .failed {
                    say("the item failed: \(item.error?.localizedDescription ?? "no error")")
                    self.playButtonChanges.finish()
                }
            }
        }
    }

    /// The registration for AVPlayerItemDidPlayToEndTimeNotification.
    private func observeDidPlayToEndTime(of item: PlayerItem) {
        let events = item.events()
        Task { @MainActor in
            for await event in events {
                if case .didPlayToEndTime = event { await self.playerItemDidReachEnd() }
            }
        }
    }

    func play() {
        say("play")
        player?.play()
    }

    func playerItemDidReachEnd() async {
        say("didPlayToEndTime: seeking to zero")
        let landed = await player?.seek(to: .zero) ?? false
        say("seek to zero \(landed ? "landed" : "did not land") at \(player?.currentTime() ?? .zero)")
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: GuidePlayer FILE [SECONDS]\n".utf8))
    exit(2)
}
let seconds = arguments.count > 1 ? Double(arguments[1]).flatMap { $0 > 0 && $0 < 3600 ? $0 : nil } ?? 2 : 2

let playerView = try PlayerView(output: .headless(mode: DisplayMode(width: 640, height: 360, refresh: RefreshRate(numerator: 60))))
let controller = PlayerViewController(playerView: playerView)
controller.loadAssetFromFile(URL(fileURLWithPath: path))

// The user presses play once the button is enabled; the stream ends without that when loading fails.
var pressed = false
for await enabled in controller.playButton where enabled {
    controller.play()
    pressed = true
    break
}
guard pressed else {
    try playerView.close()
    exit(1)
}
try await Task.sleep(for: .seconds(seconds))
controller.player?.pause()
try playerView.close()
if let player = controller.player {
    let stats = player.stats
    try player.replaceCurrentItem(with: nil)  // ends the decode thread
    _ = Player.waitForDecodeThreadsToEnd(timeout: 2)
    say("stopped after \(seconds) s: \(stats.presented) frames presented, \(stats.dropped) dropped")
}
