import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing

/// mpv's protocol as Marquee speaks it, without a socket: a `ControlSession` over the kiosk's own
/// `KioskController`, with a status like a playing session's and a player that records commands.
@Suite struct MPVProtocolTests {
    final class Recorder: @unchecked Sendable {
        let commands = Mutex<[KioskCommand]>([])
    }

    func make() -> (ControlSession, KioskStatus, Recorder) {
        let status = KioskStatus()
        status.update { s in
            s.replaceItems([.init(uri: "clips/a.mp4", path: "/media/clips/a.mp4"), .init(uri: "b.png", path: "/media/b.png"),
                            .init(uri: "c.mp4", path: "/media/c.mp4")])
            s.position = 1
            s.currentPath = "/media/b.png"
            s.timePos = 1.5
            s.duration = 10
        }
        let recorder = Recorder()
        let controller = KioskController(status: status, commandTimeout: 5, navigationInterval: 0) { command in
            recorder.commands.withLock { $0.append(command) }
            if case .pause(let p) = command { status.update { $0.paused = p } }
            if case .load = command { return .loaded(entryID: 4) }
            return .done
        }
        return (ControlSession(clientID: 1, handler: controller), status, recorder)
    }

    func reply(_ session: ControlSession, _ line: String) -> String? {
        session.reply(to: Array(line.utf8)).map { String(decoding: $0.dropLast(), as: UTF8.self) }
    }

    @Test func textFormIsSplitAsMPVsInputConf() throws {
        #expect(try MPVCommandLine.parse("set pause yes") == [["set", "pause", "yes"]])
        #expect(try MPVCommandLine.parse("  seek 1   absolute  # a comment") == [["seek", "1", "absolute"]])
        #expect(try MPVCommandLine.parse(#"loadfile "a b\"c\x41.mp4" append"#) == [["loadfile", #"a b"cA.mp4"#, "append"]])
        #expect(try MPVCommandLine.parse(#"loadfile 'it\s "x".mp4'"#) == [["loadfile", #"it\s "x".mp4"#]])
        #expect(try MPVCommandLine.parse("loadfile `!a 'b' \"c\"!` append") == [["loadfile", #"a 'b' "c""#, "append"]])
        #expect(try MPVCommandLine.parse("no-osd seek 5; cycle pause;;raw set pause no") == [["seek", "5"], ["cycle", "pause"], ["set", "pause", "no"]])
        #expect(try MPVCommandLine.parse("# only a comment").isEmpty)
        #expect(throws: MPVCommandLine.SyntaxError.self) { try MPVCommandLine.parse(#"set title "unterminated"#) }
        #expect(throws: MPVCommandLine.SyntaxError.self) { try MPVCommandLine.parse(#"set title "\q""#) }
        #expect(throws: MPVCommandLine.SyntaxError.self) { try MPVCommandLine.parse("loadfile `!a") }
        // Hex escapes take exactly their digits: no sign (UInt32(_:radix:) would take "+f").
        for bad in [#""\x+f""#, #""\u-000""#, #""\x4""#, #""\ug000""#] {
            #expect(throws: MPVCommandLine.SyntaxError.self, "\(bad)") { try MPVCommandLine.parse("set title " + bad) }
        }
        #expect(try MPVCommandLine.parse(#"set title "\u00e9\x5A""#) == [["set", "title", "éZ"]])
    }

    @Test func anUnknownPropertyCanBeObservedAndIsReportedWithoutData() throws {
        let (session, _, _) = make()
        #expect(reply(session, #"{"command":["observe_property",1,"no-such-property"],"request_id":5}"#) == #"{"request_id":5,"error":"success"}"#)
        #expect(reply(session, #"{"command":["observe_property",2,"pause"]}"#)?.contains("success") == true)
        var values: [String: JSONValue?] = ["pause": false]
        values.updateValue(Optional<JSONValue>.none, forKey: "no-such-property")
        let first = session.propertyChanges(values).map(\.encoded)
        #expect(first == [#"{"event":"property-change","id":1,"name":"no-such-property"}"#,
                          #"{"event":"property-change","id":2,"name":"pause","data":false}"#])
        #expect(session.propertyChanges(values).isEmpty, "nothing changed")
        #expect(session.propertyChanges(["pause": true]).map(\.encoded) == [#"{"event":"property-change","id":2,"name":"pause","data":true}"#])
    }

    /// After a reload the new list is in the status while the old item plays on to its end: `path`
    /// names the file playing, not the new entry at its position.
    @Test func pathIsTheFilePlayingWhileAReloadWaitsForTheItemBoundary() throws {
        let (session, status, _) = make()
        #expect(reply(session, #"{"command":["get_property","path"]}"#)?.contains(#""data":"b.png""#) == true)
        status.update { $0.replaceItems([.init(uri: "x.mp4", path: "/media/x.mp4"), .init(uri: "y.mp4", path: "/media/y.mp4")]) }
        #expect(reply(session, #"{"command":["get_property","path"]}"#)?.contains(#""data":"/media/b.png""#) == true)
        let playlist = try #require(reply(session, #"{"command":["get_property","playlist"]}"#))
        #expect(!playlist.contains("current"), "no new entry is current yet: \(playlist)")
    }

    @Test func entryIDsAreNeverReused() {
        var s = KioskStatus.Snapshot()
        s.replaceItems([.init(uri: "a"), .init(uri: "b")])
        #expect(s.items.map(\.id) == [1, 2])
        #expect(s.appendItems([.init(uri: "c")]) == 3)
        s.replaceItems([.init(uri: "d")])
        #expect(s.items.map(\.id) == [4])
        #expect(s.entryID(at: 0) == 4 && s.entryID(at: 1) == nil)
    }

    @Test func floatsAreWrittenAsMPVWritesThem() {
        #expect(JSONValue.float(1).encoded == "1.000000")
        #expect(JSONValue.float(0.0333333).encoded == "0.033333")
        #expect(JSONValue.float(.nan).encoded == "null")
        #expect(JSONValue.float(2).numberValue == 2)
    }
}
