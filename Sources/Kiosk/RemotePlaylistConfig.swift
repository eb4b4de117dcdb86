import Network

extension ConfigReader {
    /// `{"m3u": "https://..."}`: a remote M3U, read once the player runs (RemotePlaylist.swift).
    /// Only the config's own playlist may be one (not a schedule entry's or a wall region's).
    mutating func remotePlaylist(_ url: String, at path: String, allowed: Bool) -> (items: [KioskConfig.Item], origin: KioskConfig.PlaylistOrigin)? {
        guard allowed else {
            problem(path, "\"\(Self.clipped(url))\": a remote M3U can only be the top-level playlist")
            return nil
        }
        return ([], .remoteM3U(url))
    }

    /// A remote M3U needs `network.cache` (its last good copy and its entries are kept there) and
    /// a URL `network.allow` lets through (its host's addresses are checked at each fetch).
    mutating func checkRemotePlaylist(_ config: KioskConfig) {
        guard case .remoteM3U(let url) = config.playlistOrigin else { return }
        let path = "playlist.m3u"
        let parsed: NetworkURL
        do { parsed = try NetworkURL(parsing: url) } catch {
            problem(path, "\"\(Self.clipped(url))\": \(error.reason)")
            return
        }
        guard parsed.scheme == "http" || parsed.scheme == "https" else {
            problem(path, "\"\(Self.clipped(url))\": a remote M3U is fetched over http or https only, not \(parsed.scheme)")
            return
        }
        guard config.network.cache != nil else {
            problem(path, "\"\(Self.clipped(url))\": a remote M3U needs network.cache (its last good copy and its entries are kept there, docs/network.md)")
            return
        }
        // Names are resolved at each fetch, not here (a player may start offline): everything
        // short of the lookup is checked now.
        if case .refused(let reason) = config.network.allow.check(url, resolve: { _ in throw NotResolvedHere() }),
           !reason.hasSuffix(NotResolvedHere.text) {
            problem(path, "refused by network.allow: \(reason)")
        }
        // A wall of several nodes on the clock switches to a new set where all agree, over its
        // cue socket: without one, each node would switch on its own, at its own time.
        if let wall = config.wall, wall.sync.mode == .clock, wall.nodes.count > 1, wall.sync.cue == nil {
            problem("wall.sync.cue", "missing: a wall of \(wall.nodes.count) nodes on the clock playing a remote M3U needs wall.sync.cue.nodes, where its nodes agree on the wall time a new set takes over (docs/walls.md)")
        }
    }
}

private struct NotResolvedHere: Error, CustomStringConvertible {
    static let text = "(not resolved while the config is read)"
    var description: String { Self.text }
}
