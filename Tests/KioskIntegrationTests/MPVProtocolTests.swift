import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
@testable import KioskTests

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

    @Test func textFormCommandsRunWithoutAReply() throws {
        let (session, status, recorder) = make()
        #expect(reply(session, "set pause yes") == nil)
        #expect(status.snapshot.paused)
        #expect(reply(session, "cycle pause") == nil)
        #expect(!status.snapshot.paused)
        #expect(reply(session, "seek 1 absolute") == nil)
        #expect(reply(session, #"seek "garbage" absolute"#) == nil, "refused, and as in mpv not answered")
        #expect(reply(session, "unterminated \"quote") == nil)
        Thread.sleep(forTimeInterval: 0.3)  // the seek is queued, as mpv's
        let commands = recorder.commands.withLock { $0 }
        #expect(commands.contains(.seek(seconds: 1, relative: false)), "\(commands)")
        #expect(commands.filter { if case .seek = $0 { true } else { false } }.count == 1)
    }

    @Test func repliesHaveMPVsShapes() throws {
        let (session, _, recorder) = make()
        #expect(reply(session, #"{"command":["get_version"]}"#) == #"{"data":131072,"request_id":0,"error":"success"}"#)
        #expect(reply(session, #"{"command":["get_property","duration"],"request_id":1}"#) == #"{"data":10.000000,"request_id":1,"error":"success"}"#)
        #expect(reply(session, #"{"command":["get_property","time-pos"]}"#)?.contains(#""data":1.500000"#) == true)
        #expect(reply(session, #"{"command":["get_property","path"]}"#)?.contains(#""data":"b.png""#) == true, "the path as the playlist gives it")
        #expect(reply(session, #"{"command":["get_property","filename"]}"#)?.contains(#""data":"b.png""#) == true)
        #expect(reply(session, #"{"command":["get_property","playlist/0/filename"]}"#)?.contains(#""data":"clips/a.mp4""#) == true)
        #expect(reply(session, #"{"command":["get_property","playlist/2/id"]}"#)?.contains(#""data":3,"#) == true)
        #expect(reply(session, #"{"command":["get_property","playlist/0/current"]}"#)?.contains("property unavailable") == true)
        #expect(reply(session, #"{"command":["get_property","playlist/3/filename"]}"#)?.contains("property not found") == true)
        #expect(reply(session, #"{"command":["get_property","playlist/count"]}"#)?.contains(#""data":3,"#) == true)
        let playlist = try #require(reply(session, #"{"command":["get_property","playlist"]}"#))
        #expect(playlist.contains(#"{"filename":"b.png","current":true,"playing":true,"id":2,"status":"pending"}"#), "\(playlist)")
        #expect(reply(session, #"{"command":["get_property","idle-active"]}"#)?.contains(#""data":false"#) == true)
        #expect(reply(session, #"{"command":["get_property","eof-reached"]}"#)?.contains(#""data":false"#) == true)
        let properties = try #require(reply(session, #"{"command":["get_property","property-list"]}"#))
        #expect(properties.contains(#""playlist-pos""#) && properties.contains(#""property-list""#))
        let commands = try #require(reply(session, #"{"command":["get_property","command-list"]}"#))
        #expect(commands.contains(#"{"name":"loadfile","args":[{"name":"url","type":"String","optional":false}"#), "\(commands)")
        #expect(reply(session, #"{"command":["get_property_string","pause"]}"#)?.contains(#""data":"no""#) == true)
        #expect(reply(session, #"{"command":["get_property_string","duration"]}"#)?.contains(#""data":"10.000000""#) == true)
        #expect(reply(session, #"{"command":["get_property_string","nope"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(reply(session, #"{"command":["playlist-next"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(reply(session, #"{"command":["loadfile","x.mp4","append"]}"#) == #"{"data":{"playlist_entry_id":4},"request_id":0,"error":"success"}"#)
        #expect(reply(session, #"{"command":["frobnicate"]}"#) == #"{"request_id":0,"error":"invalid parameter"}"#)
        _ = recorder
    }

    @Test func stringArgumentsAreConvertedAsMPVConvertsThem() throws {
        let (session, status, recorder) = make()
        #expect(reply(session, #"{"command":["set_property","pause","yes"]}"#) == #"{"request_id":0,"error":"success"}"#)
        #expect(status.snapshot.paused)
        #expect(reply(session, #"{"command":["set_property","pause","maybe"]}"#)?.contains("unsupported format for accessing property") == true)
        #expect(reply(session, #"{"command":["set_property","pause",1]}"#)?.contains("error accessing property") == true)
        #expect(reply(session, #"{"command":["set_property","playlist-count",7]}"#)?.contains("error accessing property") == true)
        #expect(reply(session, #"{"command":["set_property","nope",7]}"#)?.contains("property not found") == true)
        #expect(reply(session, #"{"command":["seek","2.5","absolute+exact"]}"#)?.contains("success") == true)
        #expect(reply(session, #"{"command":["seek","x"]}"#)?.contains("invalid parameter") == true)
        #expect(reply(session, #"{"command":["seek",50,"absolute-percent"]}"#)?.contains("success") == true)
        #expect(reply(session, #"{"command":["set_property","playlist-pos","2"]}"#)?.contains("success") == true)
        #expect(reply(session, #"{"command":["set_property","playlist-pos",3]}"#)?.contains("error accessing property") == true)
        #expect(reply(session, #"{"command":["set_property","playlist-pos",0.5]}"#)?.contains("error accessing property") == true)
        #expect(reply(session, #"{"command":["playlist-play-index","0"]}"#)?.contains("success") == true)
        #expect(reply(session, #"{"command":["playlist-play-index",9]}"#)?.contains("error running command") == true)
        #expect(reply(session, #"{"command":["add","playlist-pos"]}"#)?.contains("success") == true)
        #expect(reply(session, #"{"command":["set","pause","no"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(!status.snapshot.paused)
        Thread.sleep(forTimeInterval: 0.3)
        let commands = recorder.commands.withLock { $0 }
        #expect(commands.contains(.play(index: 2)) && commands.contains(.play(index: 0)), "\(commands)")
        #expect(commands.contains(.play(index: 2)), "add playlist-pos from 1 plays entry 2")
        #expect(commands.contains(.seek(seconds: 5, relative: false)), "50 % of 10 s (merged with the queued seek): \(commands)")
    }

}
