import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Testing
import TestSupport

/// The session's parts that change its playlist, each on a state, a driver and a reporter of its own.
struct PlaylistParts {
    let lines = LogLines()
    let status = KioskStatus()
    let state: SessionState
    let driver: PlaylistDriver
    let reporter: PlaybackReporter

    init(_ config: KioskConfig, backend: FakeBackend) {
        state = SessionState(.init(config: config, unselectedConfig: config))
        driver = PlaylistDriver(player: QueuePlayer(logger: quiet), backend: backend)
        reporter = PlaybackReporter(status: status, role: .leader, logger: Logger(level: .info, sink: lines.append))
        status.update { $0.replaceItems(PlaybackReporter.statusItems(config)) }
    }

    var config: KioskConfig { state.withLock { $0.config } }
}

@Suite struct PlaybackCommandsTests {
    let backend = FakeBackend()

    func parts() throws -> PlaylistParts {
        for name in ["a", "b", "x", "y"] { _ = backend.add("\(name).mp4", .init(frames: 30, fps: 30)) }
        return PlaylistParts(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4"}], "loop": false}"#,
                                                   baseDirectory: "/fake"), backend: backend)
    }

    @Test func appendedFilesJoinTheEndWithNewEntryIDs() throws {
        let parts = try parts()
        defer { parts.driver.player.removeAllItems() }
        let loader = PlaybackCommands(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: quiet) { false }
        guard case .loaded(let id) = loader.load(["/fake/x.mp4", "/fake/y.mp4"], append: true) else {
            Issue.record("not loaded")
            return
        }
        #expect(id == 3)
        #expect(parts.config.playlist.map(\.path) == ["/fake/a.mp4", "/fake/b.mp4", "/fake/x.mp4", "/fake/y.mp4"])
        #expect(parts.config.playlistOrigin == .list)
        #expect(parts.status.snapshot.items.map(\.id) == [1, 2, 3, 4])
    }

    @Test func playAndSkipMoveToTheEntryAndEndTheItemWithStop() throws {
        let parts = try parts()
        defer { parts.driver.player.removeAllItems() }
        let sent = EventOrderTests.Sent()
        parts.reporter.onEvent = sent.send
        parts.driver.start(parts.config, afterCurrentItem: false)
        let commands = PlaybackCommands(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: quiet) { false }
        parts.reporter.itemChanged(to: parts.driver.player.currentItem, loop: 0)
        guard case .failed(let why) = commands.play(5) else {
            Issue.record("entry 5 played")
            return
        }
        #expect(why == "no playlist entry 5")
        _ = commands.play(1)
        #expect(parts.driver.player.currentItem?.playlistIndex == 1)
        parts.reporter.itemChanged(to: parts.driver.player.currentItem, loop: 0)
        #expect(sent.names.contains("end-file:stop"))
        commands.skip(-1)
        #expect(parts.driver.player.currentItem?.playlistIndex == 0)
        commands.pause(true)
        #expect(parts.status.snapshot.paused && parts.driver.player.rate == 0)
    }

    @Test func loadedFilesReplaceThePlaylistFromNow() throws {
        let parts = try parts()
        defer { parts.driver.player.removeAllItems() }
        parts.driver.start(parts.config, afterCurrentItem: false)
        let loader = PlaybackCommands(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: quiet) { false }
        guard case .loaded(let id) = loader.load(["/fake/y.mp4"], append: false) else {
            Issue.record("not loaded")
            return
        }
        #expect(id == 3)
        #expect(parts.config.playlist.map(\.path) == ["/fake/y.mp4"])
        #expect(parts.status.snapshot.items.map(\.uri) == ["/fake/y.mp4"])
        #expect(parts.driver.player.currentItem?.asset.url.path == "/fake/y.mp4")
    }
}

@Suite struct PlaylistReaderTests {
    let backend = FakeBackend()

    func folder(_ names: [String]) throws -> String {
        let folder = TestMedia.folder + "/reader-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in names { #expect(FileManager.default.createFile(atPath: "\(folder)/\(name)", contents: Data())) }
        return folder
    }

    /// A folder read again with a file more: the new list plays, and the status lists it.
    @Test func aChangedFolderTakesOver() throws {
        let folder = try folder(["a.mp4"])
        let parts = PlaylistParts(try KioskConfig.parse(#"{"playlist": {"directory": "\#(folder)"}, "loop": false}"#,
                                                        baseDirectory: "/"), backend: backend)
        defer { parts.driver.player.removeAllItems() }
        let reader = PlaylistReader(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: parts.reporter.logger)
        reader.read()
        #expect(!parts.lines.all.contains { $0.contains("playlist changed") })  // the same list: nothing
        #expect(FileManager.default.createFile(atPath: "\(folder)/b.mp4", contents: Data()))
        reader.read()
        #expect(parts.config.playlist.map(\.uri) == ["a.mp4", "b.mp4"])
        #expect(parts.status.snapshot.items.map(\.uri) == ["\(folder)/a.mp4", "\(folder)/b.mp4"])
        #expect(parts.lines.all.contains { $0.contains("playlist changed on disk") })
        #expect(!reader.isReading)
    }

    /// A folder that cannot be read: the old list keeps playing, and that is logged once.
    @Test func anUnreadableFolderKeepsTheOldListAndIsLoggedOnce() throws {
        let folder = try folder(["a.mp4"])
        let parts = PlaylistParts(try KioskConfig.parse(#"{"playlist": {"directory": "\#(folder)"}}"#, baseDirectory: "/"),
                                  backend: backend)
        let reader = PlaylistReader(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: parts.reporter.logger)
        try FileManager.default.removeItem(atPath: folder)
        reader.read()
        reader.read()
        #expect(parts.config.playlist.count == 1)
        #expect(parts.lines.all.filter { $0.contains("cannot read the playlist again; the old one keeps playing") }.count == 1)
    }

    /// A list edited by a command meanwhile is not replaced by what the folder says.
    @Test func aListIsNeverReadAgain() throws {
        let parts = PlaylistParts(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/fake"), backend: backend)
        let reader = PlaylistReader(state: parts.state, driver: parts.driver, reporter: parts.reporter, logger: parts.reporter.logger)
        reader.read()
        #expect(parts.config.playlist.map(\.path) == ["/fake/a.mp4"] && parts.lines.all.isEmpty)
    }
}
