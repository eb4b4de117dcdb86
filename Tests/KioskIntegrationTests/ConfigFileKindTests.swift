import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Issue 26: every file the config names (the config itself, overlay fonts and pictures, M3U
/// lists) is opened like a playlist item: regular files only, never waited on. A FIFO nobody writes
/// to hung `--check-config` for ever, and at start the player printed nothing and opened no socket.
@Suite(.serialized) struct ConfigFileKindTests {
    typealias Running = MarqueeProcessTests.Running

    /// A FIFO that nobody writes to.
    func fifo(_ name: String) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString.prefix(8))"
        try #require(mkfifo(path, 0o600) == 0, "mkfifo \(path): errno \(errno)")
        return path
    }

    /// `marquee` with `arguments`; nil status when it had not ended within `timeout` s (it is killed).
    func marquee(_ arguments: [String], timeout: Double) throws -> (status: Int32?, output: String) {
        let result = try Command.run(MarqueeProcessTests.binary.path, arguments, mergeErrors: true, timeout: timeout)
        return (result.end?.status, result.text)
    }

    func config(_ text: String) throws -> String {
        let path = TestMedia.folder + "/kind-\(UUID().uuidString.prefix(8)).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aFIFOFontOrPictureIsAnErrorNamingItsPathAtCheckTimeAndAtStart() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let font = try fifo("font.ttf")
        let picture = try fifo("logo.png")
        let path = try config("""
            {"playlist": [{"uri": "\(clip)"}],
             "overlays": [{"text": "Hi", "font": "\(font)"}, {"image": "\(picture)"}]}
            """)
        let checked = try marquee(["--config", path, "--check-config"], timeout: 10)
        #expect(checked.status == 2, "--check-config did not end within 10 s, or did not refuse: \(checked.output)")
        #expect(checked.output.contains("overlays[0].font: cannot use the font \(font): is a FIFO, not a regular file"), "\(checked.output)")
        #expect(checked.output.contains("overlays[1].image: \(picture): open failed: is a FIFO, not a regular file"), "\(checked.output)")
        let started = try marquee(["--config", path, "--output", "headless", "--socket", "none", "--exit-after", "5"], timeout: 10)
        #expect(started.status == 2, "start did not refuse within 10 s: \(started.output)")
        #expect(started.output.contains("overlays[0].font"), "\(started.output)")
        // The config itself.
        let fifoConfig = try fifo("config.json")
        let own = try marquee(["--config", fifoConfig, "--check-config"], timeout: 10)
        #expect(own.status == 2 && own.output.contains("\(fifoConfig): the file is a FIFO, not a regular file"), "\(own.output)")
        // A directory named as a font.
        let folder = try config("{}") + ".d"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let dirFont = try config("""
            {"playlist": [{"uri": "\(clip)"}], "overlays": [{"text": "Hi", "font": "\(folder)"}]}
            """)
        let dir = try marquee(["--config", dirFont, "--check-config"], timeout: 10)
        #expect(dir.status == 2 && dir.output.contains("overlays[0].font: cannot use the font \(folder): is a directory, not a regular file"), "\(dir.output)")
    }

    /// An M3U file that is a FIFO: as a config playlist it is content not there (the player starts,
    /// and health says why); through `loadlist` an error reply, at once.
    @Test func aFIFOPlaylistNeverHangsStartOrLoadlist() throws {
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let list = try fifo("list.m3u")
        let path = try config("""
            {"playlist": [{"uri": "\(clip)"}], "schedule": [{"dates": ["2031-01-01"], "playlist": {"m3u": "\(list)"}}]}
            """)
        let checked = try marquee(["--config", path, "--check-config"], timeout: 10)
        #expect(checked.status == 0, "--check-config did not end within 10 s, or refused: \(checked.output)")
        #expect(checked.output.contains("warning: schedule[0].playlist.m3u: the M3U file \(list) is a FIFO, not a regular file"), "\(checked.output)")

        let running = try Running(config: path, exitAfter: 30)
        let client = try running.connect()
        let asked = Date()
        let reply = client.request(["loadlist", .string(list), "append"], id: 1)
        #expect(Date().timeIntervalSince(asked) < 2)
        #expect(reply?["error"]?.stringValue == "error running command", "\(String(describing: reply))")
        #expect(reply?["detail"]?.stringValue == "the M3U file \(list) is a FIFO, not a regular file", "\(String(describing: reply))")
        // The reload of a config whose font is a FIFO is refused at once; the old one plays on.
        let font = try fifo("reload-font.ttf")
        try """
            {"playlist": [{"uri": "\(clip)"}], "overlays": [{"text": "Hi", "font": "\(font)"}]}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let reloadAsked = Date()
        let reload = client.request(["reload"], id: 2)
        #expect(Date().timeIntervalSince(reloadAsked) < 3)
        #expect(reload?["error"]?.stringValue == "error running command", "\(String(describing: reload))")
        let health = client.request(["get_property", "health"], id: 3)?["data"]
        #expect(health?["reasons"]?.arrayValue?.contains { $0.stringValue?.contains("is a FIFO, not a regular file") == true } == true,
                "\(String(describing: health))")
        #expect(client.request(["get_property", "path"], id: 4)?["data"]?.stringValue == clip)
        _ = client.request(["quit"], id: 5)
        #expect(running.wait() == 0)
        #expect(running.log.contains("is a FIFO"), "\(running.log)")
    }
}
