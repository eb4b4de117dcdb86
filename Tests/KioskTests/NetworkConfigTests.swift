@testable import Kiosk
import Network
import Testing

/// `network` in the config: the allow-list read with JSON paths in its problems, network items
/// whose scheme it does not list refused, and the time limits range-checked.
@Suite struct NetworkConfigTests {
    func problems(_ text: String) -> [String] {
        do {
            _ = try KioskConfig.parse(text, baseDirectory: "/srv")
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test func networkItemsAndTheirAllowList() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}, {"uri": "https://cdn.example.com/live/index.m3u8"}, {"uri": "rtsp://192.168.10.20/cam", "end": 30}],
             "network": {"allow": ["https://cdn.example.com", "rtsp://192.168.10.0/24"], "openTimeout": 4, "readTimeout": 2,
                         "liveLatency": 0.3}}
            """, baseDirectory: "/srv")
        #expect(config.network.liveLatency == 0.3)
        #expect(config.playlist.map(\.path) == ["/srv/a.mp4", "https://cdn.example.com/live/index.m3u8", "rtsp://192.168.10.20/cam"])
        #expect(config.network.allow.rules.map(\.description) == ["https://cdn.example.com", "rtsp://192.168.10.0/24"])
        let limits = config.network.limits
        #expect(limits.open == 4 && limits.read == 2 && limits.network == config.network.allow)
        #expect(KioskConfig.mediaURL(config.playlist[1].path).absoluteString == "https://cdn.example.com/live/index.m3u8")
        #expect(KioskConfig.mediaURL(config.playlist[0].path).isFileURL)
    }

    /// A live item has no end of its own: its `duration` is how long it plays (a file's is a still's).
    @Test func aNetworkItemsDurationIsHowLongItPlays() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.png", "duration": 5}, {"uri": "rtsp://192.168.10.20/cam", "duration": 30}],
             "network": {"allow": ["rtsp://192.168.10.0/24"]}}
            """, baseDirectory: "/srv")
        #expect(config.playlist.map(\.liveDuration) == [nil, 30])
    }

    @Test func deniedByDefault() throws {
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/srv").network.allow == .none)
        #expect(problems(#"{"playlist": [{"uri": "http://127.0.0.1:8000/a.mp4"}]}"#)
            == [#"playlist[0].uri: "http://127.0.0.1:8000/a.mp4": http is not in network.allow (network sources are denied unless listed, docs/network.md)"#])
        #expect(problems(#"{"playlist": [{"uri": "rtsp://cam/x"}], "network": {"allow": ["https://cam"]}}"#).count == 1)
    }

    @Test func badEntriesAreNamedByTheirPath() throws {
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "network": {"allow": ["https://ok.example", "ftp://x", 3]}}"#)
            == [#"network.allow[1]: "ftp://x": the scheme "ftp" is not one of http, https, rtmp, rtp, rtsp, rtsps, srt, udp"#,
                "network.allow[2]: expected a string, found a number"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "network": {"allow": "https://x"}}"#)
            == ["network.allow: expected an array of scheme://host entries, found a string"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "network": {"openTimeout": 601, "readTimeout": 0, "proxy": 1}}"#).sorted()
            == ["network.openTimeout: 601 is out of range (0.1 to 600)",
                "network.proxy: unknown key (allowed here: allow, openTimeout, readTimeout, liveLatency, cache)",
                "network.readTimeout: 0 is out of range (0.1 to 600)"].sorted())
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "network": {"liveLatency": 0}}"#)
            == ["network.liveLatency: 0 is out of range (0.01 to 60)"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "network": {"liveLatency": "1"}}"#)
            == ["network.liveLatency: expected a number of seconds, found a string"])
        #expect(try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}]}"#, baseDirectory: "/srv").network.liveLatency == 1)
    }
}

/// `live-lag`: the current item's, and only while that item is a live source.
@Suite struct LiveLagPropertyTests {
    @Test func itIsTheCurrentLiveItemsAndUnavailableOtherwise() throws {
        let status = KioskStatus()
        let live = "http://127.0.0.1:8000/live.mkv"
        status.update { s in
            s.replaceItems([.init(uri: "a.mp4", path: "/srv/a.mp4"), .init(uri: live, path: live)])
            s.position = 0
            s.currentPath = "/srv/a.mp4"
            s.liveLag[live] = 0.2504
        }
        let controller = KioskController(status: status) { _ in .done }
        #expect(controller.propertyNames.contains("live-lag"))
        #expect(throws: ControlError.propertyUnavailable) { try controller.property("live-lag") }
        status.update { s in
            s.position = 1
            s.currentPath = "/live.mkv"
        }
        #expect(try controller.property("live-lag").numberValue == 0.25)
        status.update { $0.liveLag[live] = nil }  // its reader went
        #expect(throws: ControlError.propertyUnavailable) { try controller.property("live-lag") }
    }
}
