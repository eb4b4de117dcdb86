import Foundation
import Playback
import Synchronization

/// The control socket's events in mpv's order: `end-file` of an item (reason `eof`, `stop` when a
/// command moved on, `error`) always before the next `start-file`, which is followed by
/// `file-loaded`, `video-reconfig` and `playback-restart`; an item that failed before it started
/// (skipped while the one before played) is reported as its `start-file` and `end-file` between
/// them; `idle` when the playlist has played out. The player reports item ends and item changes
/// on two streams: this puts them in order.
final class EventOrder: Sendable {
    /// Held while events are handed on.
    private struct State {
        weak var started: PlayerItem?
        var startedID: Int?
        var startedEnded = false
        var stopPending = false
        /// Failures of items that never started, sent at the next change.
        var pending: [JSONValue] = []
        /// The last item whose end-file went out (a late failure report of it is not sent again);
        /// weak, so that a later item at its freed address is not taken for it.
        weak var lastEnded: PlayerItem?
    }
    private let state = Mutex(State())

    /// A command moves on (the item playing ends with reason `stop`).
    func stopping() { state.withLock { $0.stopPending = true } }

    func send(_ event: JSONValue, _ send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { _ in send?(event) }
    }

    /// The player's current item is now `item` (nil: nothing plays).
    func changed(to item: PlayerItem?, id: Int?, send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { s in
            if let item, item === s.started { return }
            var out: [JSONValue] = []
            if let startedID = s.startedID, !s.startedEnded {
                let failed = s.started?.status == .failed
                var end: [(key: String, value: JSONValue)] = [("event", "end-file"),
                                                             ("reason", .string(s.stopPending ? "stop" : failed ? "error" : "eof")),
                                                             ("playlist_entry_id", .number(Double(startedID)))]
                if failed && !s.stopPending, let error = s.started?.error { end.append(("file_error", .string("\(error)"))) }
                out.append(.object(end))
                s.lastEnded = s.started
            }
            out += s.pending
            s.pending = []
            s.stopPending = false
            if let item, let id {
                s.started = item
                s.startedID = id
                s.startedEnded = false
                out += [["event": "start-file", "playlist_entry_id": .number(Double(id))], ["event": "file-loaded"],
                        ["event": "video-reconfig"], ["event": "playback-restart"]]
            } else {
                s.started = nil
                s.startedID = nil
                if item == nil { out.append(["event": "idle"]) }
            }
            for event in out { send?(event) }
        }
    }

    /// `item` could not be played to its end.
    func failed(_ item: PlayerItem, id: Int, reason: String, send: (@Sendable (JSONValue) -> Void)?) {
        state.withLock { s in
            let end: JSONValue = ["event": "end-file", "reason": "error", "playlist_entry_id": .number(Double(id)), "file_error": .string(reason)]
            if item === s.started {
                guard !s.startedEnded else { return }
                s.startedEnded = true
                s.lastEnded = item
                send?(end)
            } else if s.lastEnded !== item {
                s.lastEnded = item
                s.pending += [["event": "start-file", "playlist_entry_id": .number(Double(id))], end]
            }
        }
    }
}
