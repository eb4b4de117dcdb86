import Foundation
@testable import Kiosk
import Media
import Playback
import Render
import Testing

@Suite struct WallConfigTests {
    static let twoNodes = """
        {"playlist": [{"uri": "a.mp4"}],
         "wall": {"canvas": {"width": 3840, "height": 1080},
                  "outputs": [{"name": "left", "x": 0, "y": 0, "width": 1920, "height": 1080, "connector": "HDMI-A-1", "node": "pi-1"},
                              {"name": "right", "x": 1920, "y": 0, "width": 1920, "height": 1080, "rotation": 180, "node": "pi-2"}],
                  "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z"}}}
        """

    @Test func aSpanAcrossTwoNodes() throws {
        let config = try KioskConfig.parse(Self.twoNodes, baseDirectory: "/media")
        let wall = try #require(config.wall)
        #expect(wall.canvas == PixelRect(x: 0, y: 0, width: 3840, height: 1080))
        #expect(wall.regions == [WallConfig.Region(rect: wall.canvas)])  // absent: one region, the top-level playlist
        #expect(config.playlist(ofRegion: 0).map(\.path) == ["/media/a.mp4"])
        #expect(wall.outputs[1] == WallConfig.Output(name: "right", rect: PixelRect(x: 1920, y: 0, width: 1920, height: 1080),
                                                    rotation: .upsideDown, node: "pi-2"))
        #expect(wall.sync == WallConfig.Sync(mode: .clock, epoch: WallTime(iso8601: "2026-01-01T00:00:00Z")!))
        #expect(wall.nodes == ["pi-1", "pi-2"])
        #expect(try wall.outputs(forNode: "pi-2").map(\.name) == ["right"])
        #expect(throws: WallConfigError.self) { try wall.outputs(forNode: "pi-3") }
        do {
            _ = try wall.outputs(forNode: "pi-3")
        } catch {
            #expect(error.message == #"node "pi-3" drives no output of the wall: its nodes are "pi-1", "pi-2" (choose one with --node NAME)"#)
        }
        #expect(wall.placement(of: wall.regions[0], on: wall.outputs[1])
            == WallPlacement(window: PixelRect(x: 1920, y: 0, width: 1920, height: 1080), region: wall.canvas))
    }

    @Test func aMosaicNeedsNoTopLevelPlaylist() throws {
        let config = try KioskConfig.parse("""
            {"wall": {"canvas": {"width": 656, "height": 376},
                      "regions": [{"x": 0, "y": 0, "width": 400, "height": 376, "playlist": [{"uri": "a.mp4"}], "gravity": "resizeAspectFill"},
                                  {"x": 400, "y": 0, "width": 256, "height": 376, "playlist": [{"uri": "b.mp4"}, {"uri": "c.mp4"}]}],
                      "outputs": [{"name": "a", "x": 0, "y": 0, "width": 320, "height": 180},
                                  {"name": "b", "x": 336, "y": 0, "width": 320, "height": 180}]}}
            """, baseDirectory: "/media")
        let wall = try #require(config.wall)
        #expect(wall.regions.count == 2 && wall.regions[0].gravity == .resizeAspectFill)
        #expect(config.playlist(ofRegion: 1).map(\.uri) == ["b.mp4", "c.mp4"])
        #expect(wall.sync.mode == .free)
        // Outputs naming no node belong to every node.
        #expect(try wall.outputs(forNode: "anything").count == 2)
        #expect(wall.regions(seenBy: wall.outputs[1]).map(\.index) == [0, 1])
        #expect(wall.regions(seenBy: wall.outputs[0]).map(\.index) == [0])
    }

    @Test func theSingleScreenConfigIsAWallOfOneOutput() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "display": {"mode": "1280x720@50", "connector": "DP-1"}}"#,
                                           baseDirectory: "/media")
        #expect(config.wall == nil)
        let wall = config.effectiveWall
        #expect(wall.canvas == PixelRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(wall.outputs == [WallConfig.Output(name: "screen", rect: wall.canvas, connector: "DP-1")])
        #expect(wall.regions.count == 1 && wall.regions[0].playlist == nil)
        #expect(try wall.outputs(forNode: defaultWallNodeName()).count == 1)
        #expect(!defaultWallNodeName().isEmpty)
    }

    @Test func mistakesAreNamedWithTheirPaths() {
        #expect(problems("""
            {"playlist": [{"uri": "a.mp4"}],
             "wall": {"canvas": {"width": 640, "height": 360},
                      "regions": [{"x": 0, "y": 0, "width": 400, "height": 360},
                                  {"x": 300, "y": 0, "width": 400, "height": 360}],
                      "outputs": [{"name": "a", "x": 0, "y": 0, "width": 320, "height": 360, "rotation": 45},
                                  {"name": "a", "x": 400, "y": 0, "width": 320, "height": 360, "node": "pi-1"}],
                      "sync": {"mode": "clock", "epoch": "next tuesday"}}}
            """) == [
            "wall.regions[1]: 400x360+300+0 reaches past the canvas (640x360)",
            "wall.regions[1]: overlaps wall.regions[0] (by 100x360+300+0): regions of a mosaic must not overlap",
            "wall.outputs[0].rotation: expected 0, 90, 180 or 270 (degrees clockwise), found 45",
            #"wall.outputs[1].name: "a" is already the name of wall.outputs[0]"#,
            "wall.outputs[1]: 320x360+400+0 reaches past the canvas (640x360)",
            "wall.outputs[0].node: missing: the other outputs name their node (pi-1), so this one must too",
            #"wall.sync.epoch: "next tuesday" is not an ISO-8601 time with its zone: write e.g. 2026-01-01T00:00:00Z"#,
        ])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 0, "height": 1.5}, "outputs": []}}"#) == [
            "wall.canvas.width: 0 is less than 1",
            "wall.canvas.height: expected a whole number, found 1.5",
            "wall.outputs: empty: give at least one output",
        ])
        #expect(problems(#"{"wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"x": 0, "y": 0, "width": 10}], "sync": {"mode": "leader"}}}"#) == [
            "playlist: missing: the list of items to play",
            "wall.outputs[0].name: missing: name the output, e.g. \"left\"",
            "wall.outputs[0].height: missing: a rectangle needs x, y, width and height (pixels)",
            #"wall.sync.mode: "leader" is not one of "free", "clock""#,
        ])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "wall": {"canvas": {"width": 10, "height": 10}, "outputs": [{"name": "x", "x": 0, "y": 0, "width": 10, "height": 10, "node": ""}], "bezel": 3}}"#) == [
            "wall.bezel: unknown key (allowed here: canvas, regions, outputs, sync)",
            "wall.outputs[0].node: empty: give the node's name (its host name or --node)",
        ])
    }
}
