import Foundation

/// The display side of a player (`AVPlayerItemVideoOutput` driven by a display link): once per
/// vsync the display asks which frame to show on that vsync, and the player's time moves with
/// those questions. Tests drive it by hand with any vsync numbers they like.
public final class PlayerVideoOutput: @unchecked Sendable {
    // @unchecked: immutable; the player guards its own state.
    public let player: Player
    public let refresh: RefreshRate
    public let name: String
    private let serial: Int

    /// One output per player at a time: its vsyncs are the player's clock. `clockWaitsForDecoding`:
    /// the output asks for a vsync again until its due frame is decoded (a virtual clock, or a test
    /// driving vsyncs by hand), so the decoder never skips frames to catch up.
    public init(player: Player, refresh: RefreshRate, name: String = "output", clockWaitsForDecoding: Bool = false) throws {
        self.player = player
        self.refresh = refresh
        self.name = name
        serial = try player.attachOutput(refresh: refresh, name: name, clockWaitsForDecoding: clockWaitsForDecoding)
    }

    /// Lets the player go, so that another output may drive it (a `PlayerView` whose `player` is
    /// replaced). Until one does, the player does not advance; it goes on from where it was, on the
    /// next output's vsyncs. Later calls, and calls after another output took the player, do nothing.
    public func detach() {
        player.detachOutput(serial: serial)
    }

    /// The frame to show on vsync `n` (later calls must ask for later vsyncs; the same one again
    /// only while its picture `isWaiting`). Never waits and holds the player's lock only while it
    /// looks: a due frame that is still being decoded leaves the picture as it is, `isWaiting`.
    /// `waited`: seconds spent waiting for decoding since this vsync was last asked for.
    public func picture(forVsync n: Int64, waited: Double) -> Player.Picture {
        player.picture(forVsync: n, waited: waited)
    }

    /// Waits up to `timeout` seconds, without the player's lock, for the current item's decode
    /// thread to have its next frame (or its end) ready; true when it has.
    public func waitForDecodedFrame(timeout: Double) -> Bool {
        player.waitForDecodedFrame(timeout: timeout)
    }

    /// The frame to show on vsync `n`, waiting up to `wait` seconds in all for a due frame that is
    /// still being decoded (without the player's lock); past that the picture stays as it is (a
    /// stall). For callers that drive vsyncs by hand (tests, tools).
    public func picture(forVsync n: Int64, waitingUpTo wait: Double = 10) -> Player.Picture {
        player.picture(forVsync: n, wait: wait)
    }

    /// Tells the player that the picture asked for the last vsync was shown on a later one
    /// (`actual`): the timeline moves with it, so the following frames keep their cadence.
    public func didShow(onVsync actual: Int64) {
        player.didShow(onVsync: actual)
    }
}

