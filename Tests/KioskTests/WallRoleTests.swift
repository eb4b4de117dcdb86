import Foundation
@testable import Kiosk
import Testing

@Suite struct WallRoleTests {
    @Test func theLeaderReportsIntoItsOwnStatus() {
        let own = KioskStatus()
        let role = WallRole.leader
        #expect(role.slot == 0 && role.regionRank == 0)
        #expect(role.isLeader && role.reportsOutput)
        #expect(role.outputStatus(own: own) === own)
    }

    @Test func aFollowerReportsItsOutputIntoItsLeadersStatus() {
        let (own, leader) = (KioskStatus(), KioskStatus())
        let role = WallRole.follower(slot: 2, reportsTo: leader)
        #expect(role.slot == 2 && role.regionRank == 0)
        #expect(!role.isLeader && role.reportsOutput)
        #expect(role.outputStatus(own: own) === leader)
    }

    @Test func aMosaicsFurtherRegionLeavesItsOutputToItsOutputsSession() {
        let (own, output) = (KioskStatus(), KioskStatus())
        let role = WallRole.region(slot: 1, rank: 2, reportsTo: output)
        #expect(role.slot == 1 && role.regionRank == 2)
        #expect(!role.isLeader && !role.reportsOutput)
        #expect(role.outputStatus(own: own) === output)
    }

    /// Each role plays the playlist of the region its output shows; on a node of several outputs,
    /// by the clock.
    @Test func eachRolePlaysItsRegionsPlaylist() throws {
        let config = try KioskConfig.parse("""
            {"wall": {"canvas": {"width": 656, "height": 376},
                      "regions": [{"x": 0, "y": 0, "width": 400, "height": 376, "playlist": [{"uri": "a.mp4"}]},
                                  {"x": 400, "y": 0, "width": 256, "height": 376, "playlist": [{"uri": "b.mp4"}, {"uri": "c.mp4"}]}],
                      "outputs": [{"name": "a", "x": 0, "y": 0, "width": 320, "height": 180},
                                  {"name": "b", "x": 336, "y": 0, "width": 320, "height": 180}]}}
            """, baseDirectory: "/media")
        let status = KioskStatus()
        let leader = WallRole.leader.config(config, entry: nil, node: "n")
        #expect(leader.playlist.map(\.uri) == ["a.mp4"])
        #expect(leader.wall?.sync.mode == .clock)  // two outputs: one timeline
        #expect(WallRole.follower(slot: 1, reportsTo: status).config(config, entry: nil, node: "n").playlist.map(\.uri) == ["a.mp4"])
        #expect(WallRole.region(slot: 1, rank: 1, reportsTo: status).config(config, entry: nil, node: "n").playlist.map(\.uri)
            == ["b.mp4", "c.mp4"])
    }

    @Test func withoutAWallEveryRolePlaysTheWholeConfig() throws {
        let config = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}, {"uri": "b.mp4"}]}"#, baseDirectory: "/media")
        #expect(WallRole.follower(slot: 3, reportsTo: KioskStatus()).config(config, entry: nil, node: "n").playlist.map(\.path) == ["/media/a.mp4", "/media/b.mp4"])
    }
}
