import Foundation
@testable import Kiosk
import Testing
import TestSupport

@Suite struct PlaylistConfigTests {
    @Test func itemTrimsGravityAndStillDuration() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4", "start": 2.0, "end": 12.5, "gravity": "resizeAspectFill"},
                          {"uri": "logo.png", "duration": 5}],
             "shuffle": true, "control": {"socket": "/run/m.sock", "mode": "0600"}}
            """, baseDirectory: "/media")
        #expect(config.playlist[0] == KioskConfig.Item(uri: "a.mp4", path: "/media/a.mp4", start: 2, end: 12.5, gravity: .resizeAspectFill))
        #expect(config.playlist[1].duration == 5)
        #expect(config.shuffle)
        #expect(config.control.socket == "/run/m.sock" && config.control.mode == 0o600)
    }

    @Test func negativeTimesAndEndBeforeStartAreNamed() {
        #expect(problems(#"{"playlist": [{"uri": "a.mp4", "start": -1}]}"#)
            == ["playlist[0].start: -1.0 is negative: times are seconds from the start of the item"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4", "start": 5, "end": 3}]}"#)
            == ["playlist[0].end: 3.0 is not after start (5.0)"])
        #expect(problems(#"{"playlist": [{"uri": "a.png", "duration": "long"}]}"#)
            == ["playlist[0].duration: expected a number of seconds, found a string"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4", "gravity": "stretch"}]}"#)
            == [#"playlist[0].gravity: "stretch" is not one of "resize", "resizeAspect", "resizeAspectFill""#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "control": {"mode": "rw"}}"#)
            == [#"control.mode: "rw" is not an octal file mode such as "0660""#])
    }

    @Test func directoryPlaylistListsMediaInNameOrder() throws {
        let folder = TestMedia.folder + "/dir-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in ["b.mp4", "a10.mp4", "a2.MOV", "notes.txt", ".hidden.mp4", "c.png"] {
            #expect(FileManager.default.createFile(atPath: "\(folder)/\(name)", contents: Data()))
        }
        let config = try KioskConfig.parse(#"{"playlist": {"directory": "\#(folder)"}}"#, baseDirectory: "/x")
        #expect(config.playlist.map(\.uri) == ["a2.MOV", "a10.mp4", "b.mp4", "c.png"])
        #expect(config.playlistOrigin == .directory(folder))
        // Picked up again when the folder changes.
        #expect(FileManager.default.createFile(atPath: "\(folder)/a1.mp4", contents: Data()))
        #expect(try expandPlaylist(config.playlistOrigin).first?.uri == "a1.mp4")
        // A folder that is not there is content missing, not a config error: a warning, and the
        // player starts (issue 26).
        #expect(problems(#"{"playlist": {"directory": "/nonexistent-folder"}}"#) == [])
        let missing = try KioskConfig.parse(#"{"playlist": {"directory": "/nonexistent-folder"}}"#, baseDirectory: "/x")
        #expect(missing.playlist.isEmpty)
        #expect(missing.warnings.map(\.description) == ["playlist.directory: cannot read the folder /nonexistent-folder: No such file or directory"])
    }

    @Test func m3uPlaylistResolvesAgainstItsFolder() throws {
        let folder = TestMedia.folder + "/m3u-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "#EXTM3U\n#EXTINF:10,First\nclips/one.mp4\n\n/abs/two.mp4\n".write(toFile: "\(folder)/list.m3u", atomically: true, encoding: .utf8)
        let config = try KioskConfig.parse(#"{"playlist": {"m3u": "list.m3u"}}"#, baseDirectory: folder)
        #expect(config.playlist.map(\.path) == ["\(folder)/clips/one.mp4", "/abs/two.mp4"])
        #expect(problems(#"{"playlist": {"m3u": "a.m3u", "directory": "x"}}"#) == [#"playlist: give either "directory" or "m3u""#])
    }

    @Test func exampleConfigsAreValid() throws {
        let configs = Command.repository + "/configs"
        let names = try FileManager.default.contentsOfDirectory(atPath: configs).filter { $0.hasSuffix(".json") && !$0.contains("schema") }
        #expect(names.count >= 3)
        for name in names {
            #expect(throws: Never.self, "\(name)") { _ = try KioskConfig.load(path: "\(configs)/\(name)") }
        }
    }
}
