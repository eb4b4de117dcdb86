import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Issue 26: a client's queued requests die with the client, and a burst of display-power
/// settings from one client runs its last one, not all. Was: 1,000 toggles queued by a client that
/// then left went on running (32 in the 12 s after it left, overriding another client's "on").
@Suite(.serialized) struct ControlBurstTests {
    typealias Running = MarqueeProcessTests.Running

    /// 1,000 `set_property display-power` lines, alternating off and on (ids from `firstID`), as one write.
    func toggles(_ count: Int = 1000, firstID: Int = 1, lastOff: Bool = true) -> String {
        (0..<count).map { i in
            let off = (i % 2 == 0) == (count % 2 == 1 ? lastOff : !lastOff)
            return #"{"command":["set_property","display-power","\#(off ? "off" : "on")"],"request_id":\#(firstID + i)}"#
        }.joined(separator: "\n") + "\n"
    }

    /// The display-power lines of the trace (`state`, `why`).
    func powerEvents(_ running: Running) throws -> [(state: String, why: String)] {
        try running.traceLines().filter { $0["event"] as? String == "display-power" }
            .map { ($0["state"] as? String ?? "?", $0["why"] as? String ?? "?") }
    }

    func playing(_ client: UnixSocketClient, _ clip: String) -> Bool {
        for _ in 0..<100 {
            if client.request(["get_property", "path"], id: 900_000)?["data"]?.stringValue == clip { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    @Test func aLeavingClientsThousandTogglesDieWithItAndAnotherClientsOnHolds() throws {
        let clip = try TestMedia.clip(seconds: 2, fps: 30)
        let config = try MarqueeProcessTests().writeConfig([clip])
        let running = try Running(config: config, exitAfter: 60)
        let other = try running.connect()
        #expect(playing(other, clip))
        do {
            let leaving = try running.connect()
            #expect(leaving.send(toggles(), newline: false))
        }  // closed here, without reading a reply
        Thread.sleep(forTimeInterval: 0.5)
        #expect(other.request(["set_property", "display-power", "on"], id: 1)?["error"]?.stringValue == "success")
        Thread.sleep(forTimeInterval: 3)
        #expect(other.request(["get_property", "display-power"], id: 2)?["data"]?.stringValue == "on", "the other client's on holds")
        _ = other.request(["quit"], id: 3)
        #expect(running.wait() == 0)
        let events = try powerEvents(running)
        // The leaving client's: at most a couple (the one running as it left, or the line it sent
        // last that was read); then the other client's on, and nothing after it.
        #expect(events.count <= 3, "\(events)")
        #expect(events.last?.state == "on", "\(events)")
        #expect(running.log.contains("its queued requests are dropped"), "\(running.log)")
    }

    @Test func aStayingClientsBurstIsAnsweredInOrderAndRunsItsLastSetting() throws {
        let clip = try TestMedia.clip(seconds: 2, fps: 30)
        let config = try MarqueeProcessTests().writeConfig([clip])
        let running = try Running(config: config, exitAfter: 60)
        let client = try running.connect()
        #expect(playing(client, clip))
        #expect(client.send(toggles(firstID: 1, lastOff: true), newline: false))
        var ids: [Int] = []
        let started = Date()
        while ids.count < 1000, Date().timeIntervalSince(started) < 20, let line = client.readLine() {
            guard let reply = try? JSONParser.parse(line), reply["event"] == nil else { continue }
            #expect(reply["error"]?.stringValue == "success", "\(line)")
            ids.append(Int(reply["request_id"]?.numberValue ?? -1))
        }
        #expect(ids == Array(1...1000), "every request answered, in order")
        #expect(client.request(["get_property", "display-power"], id: 2000)?["data"]?.stringValue == "off", "the last setting holds")
        #expect(client.request(["set_property", "display-power", "on"], id: 2001)?["error"]?.stringValue == "success")
        _ = client.request(["quit"], id: 2002)
        #expect(running.wait() == 0)
        let events = try powerEvents(running)
        // The burst ran a couple of its settings (the first, then the last of those waiting each
        // time one finished), then the "on".
        #expect(events.count <= 6, "\(events)")
        #expect(events.dropLast().last?.state == "off" && events.last?.state == "on", "\(events)")
    }
}
