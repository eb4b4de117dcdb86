// What both examples need around the AV Foundation-style code they show: a display to drive the
// player.
import Display
import Foundation
import Playback

/// A headless output (EGL surfaceless, virtual 60 Hz clock) driving a player from a thread of its
/// own, as a display link would.
public enum ExampleDisplay {
    /// Presents `player` for `seconds` of display time, or (with `untilEmpty`) until its queue has
    /// played out; returns the presentation figures. `beforeEachVsync` runs on the display's thread.
    public static func present(_ player: Player, seconds: Double, untilEmpty: Bool = false, logger: Logger,
                               beforeEachVsync: @escaping @Sendable () -> Void = {}) async -> Result<PresentationStats, any Error> {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result {
                    let output = try HeadlessOutput(mode: DisplayMode(width: 640, height: 360, refresh: RefreshRate(numerator: 60)),
                                                    clock: .virtual)
                    let presenter = try PlayerPresenter(player: player, output: output, logger: logger,
                                                        exitAfter: MediaTime(seconds: seconds, preferredTimescale: 600))
                    return try presenter.run(stopWhenEmpty: untilEmpty) {
                        beforeEachVsync()
                        return true
                    }
                })
            }
            thread.name = "example-present"
            thread.start()
        }
    }
}
