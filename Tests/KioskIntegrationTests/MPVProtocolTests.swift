import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
@testable import KioskTests

/// mpv's protocol as Marquee speaks it, without a socket: a `ControlSession` over the kiosk's own
/// `KioskController`, with a status like a playing session's and a player that records commands.
@Suite struct MPVProtocolTests {
    typealias Recorder = KioskTests.MPVProtocolTests.Recorder
    let unit = KioskTests.MPVProtocolTests()   // its fixtures: make, reply

    @Test func textFormCommandsRunWithoutAReply() throws {
        let (session, status, recorder) = unit.make()
        #expect(unit.reply(session, "set pause yes") == nil)
        #expect(status.snapshot.paused)
        #expect(unit.reply(session, "cycle pause") == nil)
        #expect(!status.snapshot.paused)
        #expect(unit.reply(session, "seek 1 absolute") == nil)
        #expect(unit.reply(session, #"seek "garbage" absolute"#) == nil, "refused, and as in mpv not answered")
        #expect(unit.reply(session, "unterminated \"quote") == nil)
        Thread.sleep(forTimeInterval: 0.3)  // the seek is queued, as mpv's
        let commands = recorder.commands.withLock { $0 }
        #expect(commands.contains(.seek(seconds: 1, relative: false)), "\(commands)")
        #expect(commands.filter { if case .seek = $0 { true } else { false } }.count == 1)
    }

    @Test func repliesHaveMPVsShapes() throws {
        let (session, _, recorder) = unit.make()
        #expect(unit.reply(session, #"{"command":["get_version"]}"#) == #"{"data":131072,"request_id":0,"error":"success"}"#)
        #expect(unit.reply(session, #"{"command":["get_property","duration"],"request_id":1}"#) == #"{"data":10.000000,"request_id":1,"error":"success"}"#)
        #expect(unit.reply(session, #"{"command":["get_property","time-pos"]}"#)?.contains(#""data":1.500000"#) == true)
        #expect(unit.reply(session, #"{"command":["get_property","path"]}"#)?.contains(#""data":"b.png""#) == true, "the path as the playlist gives it")
        #expect(unit.reply(session, #"{"command":["get_property","filename"]}"#)?.contains(#""data":"b.png""#) == true)
        #expect(unit.reply(session, #"{"command":["get_property","playlist/0/filename"]}"#)?.contains(#""data":"clips/a.mp4""#) == true)
        #expect(unit.reply(session, #"{"command":["get_property","playlist/2/id"]}"#)?.contains(#""data":3,"#) == true)
        #expect(unit.reply(session, #"{"command":["get_property","playlist/0/current"]}"#)?.contains("property unavailable") == true)
        #expect(unit.reply(session, #"{"command":["get_property","playlist/3/filename"]}"#)?.contains("property not found") == true)
        #expect(unit.reply(session, #"{"command":["get_property","playlist/count"]}"#)?.contains(#""data":3,"#) == true)
        let playlist = try #require(unit.reply(session, #"{"command":["get_property","playlist"]}"#))
        #expect(playlist.contains(#"{"filename":"b.png","current":true,"playing":true,"id":2,"status":"pending"}"#), "\(playlist)")
        #expect(unit.reply(session, #"{"command":["get_property","idle-active"]}"#)?.contains(#""data":false"#) == true)
        #expect(unit.reply(session, #"{"command":["get_property","eof-reached"]}"#)?.contains(#""data":false"#) == true)
        let properties = try #require(unit.reply(session, #"{"command":["get_property","property-list"]}"#))
        #expect(properties.contains(#""playlist-pos""#) && properties.contains(#""property-list""#))
        let commands = try #require(unit.reply(session, #"{"command":["get_property","command-list"]}"#))
        #expect(commands.contains(#"{"name":"loadfile","args":[{"name":"url","type":"String","optional":false}"#), "\(commands)")
        #expect(unit.reply(session, #"{"command":["get_property_string","pause"]}"#)?.contains(#""data":"no""#) == true)
        #expect(unit.reply(session, #"{"command":["get_property_string","duration"]}"#)?.contains(#""data":"10.000000""#) == true)
        #expect(unit.reply(session, #"{"command":["get_property_string","nope"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(unit.reply(session, #"{"command":["playlist-next"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(unit.reply(session, #"{"command":["loadfile","x.mp4","append"]}"#) == #"{"data":{"playlist_entry_id":4},"request_id":0,"error":"success"}"#)
        #expect(unit.reply(session, #"{"command":["frobnicate"]}"#) == #"{"request_id":0,"error":"invalid parameter"}"#)
        _ = recorder
    }

    @Test func stringArgumentsAreConvertedAsMPVConvertsThem() throws {
        let (session, status, recorder) = unit.make()
        #expect(unit.reply(session, #"{"command":["set_property","pause","yes"]}"#) == #"{"request_id":0,"error":"success"}"#)
        #expect(status.snapshot.paused)
        #expect(unit.reply(session, #"{"command":["set_property","pause","maybe"]}"#)?.contains("unsupported format for accessing property") == true)
        #expect(unit.reply(session, #"{"command":["set_property","pause",1]}"#)?.contains("error accessing property") == true)
        #expect(unit.reply(session, #"{"command":["set_property","playlist-count",7]}"#)?.contains("error accessing property") == true)
        #expect(unit.reply(session, #"{"command":["set_property","nope",7]}"#)?.contains("property not found") == true)
        #expect(unit.reply(session, #"{"command":["seek","2.5","absolute+exact"]}"#)?.contains("success") == true)
        #expect(unit.reply(session, #"{"command":["seek","x"]}"#)?.contains("invalid parameter") == true)
        #expect(unit.reply(session, #"{"command":["seek",50,"absolute-percent"]}"#)?.contains("success") == true)
        #expect(unit.reply(session, #"{"command":["set_property","playlist-pos","2"]}"#)?.contains("success") == true)
        #expect(unit.reply(session, #"{"command":["set_property","playlist-pos",3]}"#)?.contains("error accessing property") == true)
        #expect(unit.reply(session, #"{"command":["set_property","playlist-pos",0.5]}"#)?.contains("error accessing property") == true)
        #expect(unit.reply(session, #"{"command":["playlist-play-index","0"]}"#)?.contains("success") == true)
        #expect(unit.reply(session, #"{"command":["playlist-play-index",9]}"#)?.contains("error running command") == true)
        #expect(unit.reply(session, #"{"command":["add","playlist-pos"]}"#)?.contains("success") == true)
        #expect(unit.reply(session, #"{"command":["set","pause","no"]}"#) == #"{"data":null,"request_id":0,"error":"success"}"#)
        #expect(!status.snapshot.paused)
        Thread.sleep(forTimeInterval: 0.3)
        let commands = recorder.commands.withLock { $0 }
        #expect(commands.contains(.play(index: 2)) && commands.contains(.play(index: 0)), "\(commands)")
        #expect(commands.contains(.play(index: 2)), "add playlist-pos from 1 plays entry 2")
        #expect(commands.contains(.seek(seconds: 5, relative: false)), "50 % of 10 s (merged with the queued seek): \(commands)")
    }

}
