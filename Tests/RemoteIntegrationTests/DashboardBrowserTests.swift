import Foundation
@testable import RemoteTests
import Testing
import TestSupport

/// The web dashboard in a real browser: headless Chromium driven by Selenium
/// (tools/dashboard-browser-test.py) against a playing marquee: log in (a wrong token refused),
/// the live screenshot changes, pause and resume, upload a clip and see it play, a broken config
/// refused with its JSON path while the old plays on.
@Suite(.serialized) struct DashboardBrowserTests {
    @Test func theDashboardWalkThrough() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing (make test installs chromium and chromium-driver)")
        }
        let probe = try Command.run("/usr/bin/python3", ["-c", "import selenium"])
        try #require(probe.status == 0, "python3-selenium is missing (make test installs it)")
        // A loop of 1.3 s: the dashboard's screenshots, every 2 s, would all catch the same frame
        // of a 1 s loop (its period divides theirs).
        let player = try RemoteProcessTests.Player(seconds: 180, folderPlaylist: true, clipSeconds: 1.3)
        defer { _ = player.stop() }
        #expect(player.waitForPlaying(), "log:\n\(player.log)")
        // The upload has a name of its own: a copy of the test clip.
        let upload = player.folder + "/uploaded-clip.mp4"
        try FileManager.default.copyItem(atPath: try TestMedia.clip(seconds: 1, fps: 30), toPath: upload)
        let walk = try Command.run("/usr/bin/python3", [Command.repository + "/tools/dashboard-browser-test.py", "http://127.0.0.1:\(player.port)",
                                                         RemoteProcessTests.Player.controlToken, upload],
                                   environment: ["HOME": player.folder], mergeErrors: true, timeout: 240)
        #expect(walk.status == 0, "\(walk.text)\nlog:\n\(player.log.suffix(3000))")
        #expect(walk.text.contains("all steps passed"))
        #expect(FileManager.default.fileExists(atPath: player.uploads + "/uploaded-clip.mp4"))
        #expect(player.process.end == nil)
    }
}
