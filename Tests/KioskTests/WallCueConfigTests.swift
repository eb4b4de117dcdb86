import Foundation
import Inputs
@testable import Kiosk
import Playback
import Testing

/// `wall.sync.cue`: read from the one config every node runs, refused with its JSON path when it
/// cannot work (no clock sync, a node missing, an address twice, a lead out of range).
@Suite struct WallCueConfigTests {
    static func wall(sync: String, nodes: [String] = ["pi-1", "pi-2"]) -> String {
        let outputs = nodes.enumerated().map { i, node in
            #"{"name": "o\#(i)", "x": \#(i * 10), "y": 0, "width": 10, "height": 10, "node": "\#(node)"}"#
        }.joined(separator: ", ")
        return #"""
            {"playlist": [{"uri": "a.mp4"}],
             "wall": {"canvas": {"width": \#(nodes.count * 10), "height": 10}, "outputs": [\#(outputs)], "sync": \#(sync)}}
            """#
    }

    @Test func eachNodeListensOnItsOwnAddressAndSendsToTheOthers() throws {
        let config = try KioskConfig.parse(Self.wall(sync: #"""
            {"mode": "clock", "epoch": "2026-01-01T00:00:00Z",
             "cue": {"nodes": {"pi-1": "10.0.0.11:7400", "pi-2": "10.0.0.12:7401"}, "lead": 0.25}}
            """#), baseDirectory: "/media")
        let cue = try #require(config.wall?.sync.cue)
        #expect(cue.lead == 0.25)
        let link = try #require(cue.link(forNode: "pi-2"))
        #expect(link.listen == UDPEndpoint(parsing: "10.0.0.12:7401") && link.peers == [UDPEndpoint(parsing: "10.0.0.11:7400")!])
        #expect(cue.link(forNode: "pi-3") == nil)
        // The lead defaults to 0.1 s; without `cue` nothing listens.
        let plain = try KioskConfig.parse(Self.wall(sync: #"{"mode": "clock", "cue": {"nodes": {"pi-1": "127.0.0.1:9001", "pi-2": "127.0.0.1:9002"}}}"#), baseDirectory: "/")
        #expect(plain.wall?.sync.cue?.lead == 0.1)
        #expect(try KioskConfig.parse(Self.wall(sync: #"{"mode": "clock"}"#), baseDirectory: "/").wall?.sync.cue == nil)
    }

    @Test func mistakesAreNamedWithTheirPaths() {
        #expect(problems(Self.wall(sync: #"{"cue": {"nodes": {"pi-1": "127.0.0.1:9001", "pi-2": "127.0.0.1:9002"}}}"#)) == [
            #"wall.sync.cue: needs "mode": "clock": the nodes cut on a wall time, so their clocks must agree"#,
        ])
        #expect(problems(Self.wall(sync: #"{"mode": "clock", "cue": {"nodes": {"pi-1": "127.0.0.1:9001"}, "lead": 5}}"#)) == [
            #"wall.sync.cue.nodes: expected an object of 2 to 64 nodes, each its cue socket's address: {"pi-1": "10.0.0.11:7400", "pi-2": "10.0.0.12:7400"}"#,
            "wall.sync.cue.lead: 5 is out of range (0.02 to 2)",
        ])
        #expect(problems(Self.wall(sync: #"{"mode": "clock", "cue": {"nodes": {"pi-1": "127.0.0.1:9001", "pi-9": "127.0.0.1:9001", "pi-2": "localhost:9"}, "port": 3}}"#)) == [
            "wall.sync.cue.port: unknown key (allowed here: nodes, lead)",
            "wall.sync.cue.nodes.pi-9: 127.0.0.1:9001 is another node's address too: each node needs its own",
            #"wall.sync.cue.nodes.pi-2: "localhost:9" is not an IPv4 address and port: write e.g. "10.0.0.11:7400""#,
        ])
        #expect(problems(Self.wall(sync: #"{"mode": "clock", "cue": {"nodes": {"pi-1": "127.0.0.1:9001", "pi-9": "127.0.0.1:9002"}}}"#)) == [
            #"wall.sync.cue.nodes.pi-9: "pi-9" is not a node of the wall (its outputs name: pi-1, pi-2)"#,
        ])
        #expect(problems(Self.wall(sync: #"{"mode": "clock", "cue": {"nodes": {"pi-1": "127.0.0.1:9001", "pi-2": "127.0.0.1:9002"}}}"#,
                                   nodes: ["pi-1", "pi-2", "pi-3"])) == [
            #"wall.sync.cue.nodes: missing node "pi-3": every node of the wall takes part in its cues"#,
        ])
        #expect(problems(Self.wall(sync: #"{"mode": "clock", "cue": {"lead": "soon"}}"#)) == [
            "wall.sync.cue.lead: expected a number of seconds, found a string",
            #"wall.sync.cue.nodes: missing: each node's cue socket, e.g. {"pi-1": "10.0.0.11:7400", "pi-2": "10.0.0.12:7400"}"#,
        ])
    }
}

/// After a wall cue's film, every node restarts the loop on the clock at one moment, worked out
/// from what they share (the cue's time and the film's length in vsyncs), not from their own
/// vsyncs, whose phases differ: a grid point near one node's film end could be missed by another's.
@Suite struct WallCueRejoinTests {
    @Test func everyNodeRejoinsOnTheSameGridPoint() throws {
        let interval = 1.0 / 60, grid: Int64 = 250_000_000
        var seed: UInt64 = 3
        for _ in 0..<500 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let cue = WallTime(nanoseconds: 1_780_000_000_000_000_000 + Int64(seed >> 20))
            let filmVsyncs = Int64(seed % 3600)
            let point = try #require(ClockFollower.rejoinPoint(cue: cue, filmVsyncs: filmVsyncs, interval: interval))
            #expect(point.nanoseconds % grid == 0, "on the quarter-second grid")
            let filmEnd = cue + Int64(Double(filmVsyncs) * interval * 1e9)
            #expect(point - filmEnd >= 500_000_000 && point - filmEnd < 500_000_000 + grid, "half a second to three quarters past the film")
        }
        #expect(ClockFollower.rejoinPoint(cue: nil, filmVsyncs: 30, interval: interval) == nil)
        #expect(ClockFollower.rejoinPoint(cue: WallTime(nanoseconds: 1), filmVsyncs: -1, interval: interval) == nil)
        #expect(ClockFollower.rejoinPoint(cue: WallTime(nanoseconds: 1), filmVsyncs: .max, interval: interval) == nil)
    }
}
