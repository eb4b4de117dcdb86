import HTTPServer
@testable import Kiosk
@testable import Remote
import Testing

/// The event stream's fan-out, driven by hand (no server, no waiting: events are queued before
/// each read).
@Suite struct EventHubTests {
    func text(_ chunk: HTTPStreamChunk) -> String? {
        if case .bytes(let bytes) = chunk { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    @Test func eachClientGetsEveryEventAsOneDataMessage() throws {
        let hub = EventHub()
        let a = try #require(hub.subscribe()), b = try #require(hub.subscribe())
        #expect(text(a.next()) == ": marquee events\n\n")
        hub.broadcast(["event": "start-file", "playlist_entry_id": 1])
        hub.broadcast(["event": "seek"])
        #expect(text(a.next()) == "data: {\"event\":\"start-file\",\"playlist_entry_id\":1}\n\ndata: {\"event\":\"seek\"}\n\n")
        _ = b.next()
        #expect(text(b.next())?.components(separatedBy: "data: ").count == 3)
        a.close()
        b.close()
        #expect(hub.clientCount == 0)
    }

    @Test func clientsAreBoundedAndOneFarBehindIsEnded() throws {
        let hub = EventHub(maxClients: 2, maxQueued: 3)
        let slow = try #require(hub.subscribe())
        let other = try #require(hub.subscribe())
        #expect(hub.subscribe() == nil, "a third is refused")
        _ = slow.next()
        for i in 0..<5 { hub.broadcast(["event": .string("e\(i)")]) }
        guard case .end = slow.next() else {
            Issue.record("a client 3 events behind is ended")
            return
        }
        slow.close()
        #expect(hub.subscribe() != nil, "its place is free again")
        other.close()
    }
}
