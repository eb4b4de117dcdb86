import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Synchronization
import Testing

@Suite struct EventOrderTests {
    /// The events sent, as their names and entry ids.
    final class Sent: Sendable {
        private let events = Mutex<[JSONValue]>([])
        var send: @Sendable (JSONValue) -> Void { { event in self.events.withLock { $0.append(event) } } }
        var names: [String] {
            events.withLock { $0 }.map { event in
                guard case .string(let name)? = event["event"] else { return "?" }
                if case .string(let reason)? = event["reason"] { return "\(name):\(reason)" }
                return name
            }
        }
        var ids: [Int] {
            events.withLock { $0 }.compactMap { event in
                if case .number(let id)? = event["playlist_entry_id"] { return Int(id) }
                return nil
            }
        }
    }

    let backend = FakeBackend()
    func item(_ name: String) -> PlayerItem { PlayerItem(url: URL(fileURLWithPath: "/media/\(name)"), backend: backend) }

    @Test func eachItemEndsBeforeTheNextStarts() {
        let (order, sent) = (EventOrder(), Sent())
        let (a, b) = (item("a.mp4"), item("b.mp4"))
        order.changed(to: a, id: 1, send: sent.send)
        order.changed(to: a, id: 1, send: sent.send)  // the same item again: nothing
        order.changed(to: b, id: 2, send: sent.send)
        order.changed(to: nil, id: nil, send: sent.send)
        #expect(sent.names == ["start-file", "file-loaded", "video-reconfig", "playback-restart",
                               "end-file:eof", "start-file", "file-loaded", "video-reconfig", "playback-restart",
                               "end-file:eof", "idle"])
        #expect(sent.ids == [1, 1, 2, 2])
    }

    @Test func aCommandThatMovesOnEndsTheItemWithStop() {
        let (order, sent) = (EventOrder(), Sent())
        order.changed(to: item("a.mp4"), id: 1, send: sent.send)
        order.stopping()
        order.changed(to: item("b.mp4"), id: 2, send: sent.send)
        #expect(sent.names.filter { $0.hasPrefix("end-file") } == ["end-file:stop"])
    }

    @Test func aFailureOfThePlayingItemIsSentOnceAndNotAgainAtTheChange() {
        let (order, sent) = (EventOrder(), Sent())
        let a = item("a.mp4")
        order.changed(to: a, id: 1, send: sent.send)
        order.failed(a, id: 1, reason: "broken", send: sent.send)
        order.failed(a, id: 1, reason: "broken", send: sent.send)
        order.changed(to: item("b.mp4"), id: 2, send: sent.send)
        #expect(sent.names.filter { $0.hasPrefix("end-file") } == ["end-file:error"])
        #expect(sent.names.last == "playback-restart")
    }

    /// An item that failed before it started (skipped while the one before played) is reported
    /// between the end of that one and the start of the next.
    @Test func anItemThatNeverStartedIsReportedAtTheNextChange() {
        let (order, sent) = (EventOrder(), Sent())
        let (a, skipped, c) = (item("a.mp4"), item("b.mp4"), item("c.mp4"))
        order.changed(to: a, id: 1, send: sent.send)
        order.failed(skipped, id: 2, reason: "missing", send: sent.send)
        #expect(sent.names.count == 4)  // held until the change
        order.changed(to: c, id: 3, send: sent.send)
        #expect(Array(sent.names.dropFirst(4).prefix(4)) == ["end-file:eof", "start-file", "end-file:error", "start-file"])
        #expect(Array(sent.ids.dropFirst(1)) == [1, 2, 2, 3])
    }
}
