import Foundation
import Network

extension PlaybackReporter {
    /// A live source went down (`reason`) or came back (nil): health is degraded naming it, and
    /// for how long, while it is down; each change is logged once.
    func liveSourceChanged(uri: String, reason: String?) {
        var changed = false
        outputStatus.update { s in
            if let reason {
                changed = s.liveSourcesDown[uri] == nil
                if changed { s.liveSourceOutages += 1 }
                s.liveSourcesDown[uri] = (s.liveSourcesDown[uri]?.since ?? .now, reason)
            } else if let down = s.liveSourcesDown.removeValue(forKey: uri) {
                changed = true
                s.liveSourceReconnects += 1
                s.liveSourceOutageSeconds += (ContinuousClock.now - down.since).seconds
            }
        }
        guard changed else { return }
        if let reason {
            logger.warning("live source down; reopening", ["uri": uri, "reason": reason])
        } else {
            logger.info("live source back", ["uri": uri])
        }
    }
}

extension PlaybackReporter {
    /// A live source's reader went while the source was down (its item ended or was skipped):
    /// nothing waits for it any more, so health no longer names it; not a reconnect.
    func liveSourceClosed(uri: String) {
        var closed = false
        outputStatus.update { s in
            guard let down = s.liveSourcesDown.removeValue(forKey: uri) else { return }
            s.liveSourceOutageSeconds += (ContinuousClock.now - down.since).seconds
            closed = true
        }
        if closed { logger.info("live source no longer played while down", ["uri": uri]) }
    }
}

extension PlaybackReporter {
    /// How far behind its source a live source's last kept frame is shown (`live-lag`); nil: its reader went.
    func liveLag(uri: String, seconds: Double?) {
        outputStatus.update { $0.liveLag[uri] = seconds }
    }
}

extension KioskConfig.Item {
    /// A network item's `duration`: how long it plays before the playlist goes on (a live source
    /// has no end of its own); nil for a file (its `duration` is a still's).
    var liveDuration: Double? { NetworkURL.hasNetworkScheme(path) ? duration : nil }
}

extension PlaybackReporter {
    /// A cached remote file is stale or not cached (`reason`), or fresh again (nil): health is
    /// degraded naming it while it is not fresh.
    func remoteFileHealth(uri: String, reason: String?) {
        outputStatus.update { s in
            if let reason { s.remoteFilesStale[uri] = reason } else { s.remoteFilesStale.removeValue(forKey: uri) }
        }
    }
}
