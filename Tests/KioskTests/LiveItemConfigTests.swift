@testable import Kiosk
import Network
import Testing

/// An item's `live` options: read with the item, refused at their JSON path (so `--check-config`
/// and a reload refuse them), and only on the sources they fit.
@Suite struct LiveItemConfigTests {
    let allow = #""network": {"allow": ["rtsp://10.0.0.0/8", "https://tv.example.com", "udp://239.0.0.0/8"]}"#

    func problems(_ items: String) -> [String] {
        do {
            _ = try KioskConfig.parse(#"{"playlist": [\#(items)], \#(allow)}"#, baseDirectory: "/srv")
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test func theOptionsAreReadWithTheirItem() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "rtsp://10.0.0.5/cam", "duration": 30, "live": {"transport": "tcp", "mode": "low-latency", "latency": 0.2}},
                          {"uri": "https://tv.example.com/lobby/index.m3u8", "live": {"maxHeight": 720}},
                          {"uri": "udp://239.1.1.1:5000", "live": {"mode": "smooth"}},
                          {"uri": "a.mp4"}],
             \(allow)}
            """, baseDirectory: "/srv")
        #expect(config.playlist.map(\.live) == [
            LiveSourceOptions(transport: .tcp, mode: .lowLatency, latency: 0.2),
            LiveSourceOptions(maxHeight: 720),
            LiveSourceOptions(),
            nil,
        ])
        #expect(config.playlist[0].duration == 30, "the other options stay beside it")
    }

    @Test func badValuesAreRefusedAtTheirPath() {
        #expect(problems(#"{"uri": "rtsp://10.0.0.5/cam", "live": {"transport": "quic"}}"#)
            == [#"playlist[0].live.transport: "quic" is not one of "tcp", "udp""#])
        #expect(problems(#"{"uri": "rtsp://10.0.0.5/cam", "live": {"mode": "fast"}}"#)
            == [#"playlist[0].live.mode: "fast" is not one of "smooth", "low-latency""#])
        #expect(problems(#"{"uri": "rtsp://10.0.0.5/cam", "live": {"latency": 0}}"#)
            == ["playlist[0].live.latency: 0 is out of range (0.01 to 60)"])
        #expect(problems(#"{"uri": "rtsp://10.0.0.5/cam", "live": {"latency": "1"}}"#)
            == ["playlist[0].live.latency: expected a number of seconds, found a string"])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": {"maxHeight": 0}}"#)
            == ["playlist[0].live.maxHeight: 0 is out of range (1 to 8640)"])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": {"maxHeight": 720.5}}"#)
            == ["playlist[0].live.maxHeight: 720.5 is not a whole number of pixels"])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": {"maxHeight": 1e300}}"#)
            == ["playlist[0].live.maxHeight: 1e+300 is out of range (1 to 8640)"])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": {"bitrate": 1}}"#)
            == ["playlist[0].live.bitrate: unknown key (allowed here: transport, mode, latency, maxHeight)"])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": "low-latency"}"#)
            == ["playlist[0].live: expected an object, found a string"])
    }

    @Test func optionsGoOnlyWhereTheyFit() {
        #expect(problems(#"{"uri": "a.mp4"}, {"uri": "b.mp4", "live": {"mode": "low-latency"}}"#)
            == [#"playlist[1].live: "b.mp4" is not a network source: live options are for rtsp://, HLS, udp:// and other streams"#])
        #expect(problems(#"{"uri": "https://tv.example.com/a.m3u8", "live": {"transport": "udp"}}"#)
            == ["playlist[0].live.transport: RTSP's transport, and this item is https://"])
    }
}
