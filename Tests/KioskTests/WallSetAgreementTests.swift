import Foundation
@testable import Kiosk
import Playback
import Testing

/// A clock-synced wall's agreement on when its remote M3U's new set takes over
/// (`WallSetAgreement`), on virtual wall times: nodes exchange their messages by hand (some lost,
/// some late), and every node must come to the same switch time, never before the last node has
/// the set; hostile datagrams are counted, never acted on.
@Suite struct WallSetAgreementTests {
    let old = String(repeating: "0a", count: 32)
    let new = String(repeating: "b7", count: 32)
    let newer = String(repeating: "c3", count: 32)
    let t0 = WallTime(nanoseconds: 1_780_000_000_123_456_789)
    /// The config's epoch.
    static let epoch = WallTime(nanoseconds: 1_700_000_000_000_000_000)
    var epoch: WallTime { Self.epoch }
    func at(_ seconds: Double) -> WallTime { t0 + Int64(seconds * 1e9) }

    /// A wall of `names` on virtual time: each node's messages go to the others unless `lose` says so.
    struct Wall {
        var nodes: [String: WallSetAgreement]
        init(_ names: [String], playing: String?, epoch: WallTime = WallSetAgreementTests.epoch) {
            nodes = Dictionary(uniqueKeysWithValues: names.map { ($0, WallSetAgreement(node: $0, nodes: names, epoch: epoch, playing: playing, since: nil)) })
        }
        /// One second of the wall: every node says where it stands (when due) and hears the others.
        mutating func tick(_ now: WallTime, lose: (String, String) -> Bool = { _, _ in false }) {
            var sent: [(String, WallSetMessage)] = []
            for name in nodes.keys.sorted() {
                if let message = nodes[name]!.due(now: now) { sent.append((name, message)) }
            }
            for (from, message) in sent {
                for to in nodes.keys.sorted() where to != from && !lose(from, to) {
                    nodes[to]!.received(message.encoded, from: from, now: now + 2_000_000)
                }
            }
        }
        mutating func decisions() -> [String: WallSetAgreement.Agreed?] { nodes.mapValues { var a = $0; return a.decide() } }
    }

    @Test func messagesRoundTripAndEverythingElseIsRefused() {
        let message = WallSetMessage(sent: at(0), playing: old, since: at(-100), ready: new, readyAt: at(-2))
        #expect(WallSetMessage.parse(message.encoded) == message)
        let none = WallSetMessage(sent: at(0), playing: nil, since: nil, ready: nil, readyAt: nil)
        #expect(WallSetMessage.parse(none.encoded) == none)
        #expect(message.encoded.count <= WallSetMessage.largestPacket)
        let bad: [String] = [
            "", "marquee-set", "marquee-set 2 1 - 0 - 0", "marquee-set 1 1 - 0 - 0 extra",
            "marquee-set 1 0 - 0 - 0",                                   // no sending time
            "marquee-set 1 -5 - 0 - 0",
            "marquee-set 1 99999999999999999999999 - 0 - 0",              // past Int64
            "marquee-set 1 1 \(old.uppercased()) 0 - 0",                  // not lowercase hex
            "marquee-set 1 1 \(old.dropLast()) 0 - 0",                    // 63 digits
            "marquee-set 1 1 \(old.dropLast())g 0 - 0",                   // not hex
            "marquee-set 1 1 - 0 \(new) 0",                               // ready without its time
            "marquee-set 1 1 - 0 - 5",                                    // a time without a set
            "marquee-set 1 1 - 5 - 0",                                    // since without a set
            "marquee-set 1 1 \(old) -1 - 0",
        ]
        for text in bad { #expect(WallSetMessage.parse(Array(text.utf8)) == nil, "\(text)") }
        #expect(WallSetMessage.parse([0xff, 0x00] + Array(message.encoded)) == nil)
        #expect(WallSetMessage.parse(Array(repeating: 0x41, count: 4096)) == nil)
        #expect(WallSetMessage.setID(of: Data("#EXTM3U\na.mp4\n".utf8)).count == 64)
        #expect(WallSetMessage.isSetID(WallSetMessage.setID(of: Data())))
    }

    @Test func allNodesReadyGiveTheSameSwitchTimeOnEveryNode() {
        var wall = Wall(["a", "b", "c"], playing: old)
        wall.nodes["a"]!.haveSet(new, now: at(1.2))
        wall.nodes["b"]!.haveSet(new, now: at(2.7))
        wall.nodes["c"]!.haveSet(new, now: at(2.1))
        wall.tick(at(3))
        let decided = wall.decisions()
        let expected = WallSetAgreement.Agreed(id: new, at: WallSetAgreement.switchTime(lastReady: at(2.7)))
        #expect(decided.values.allSatisfy { $0 == expected }, "\(decided)")
        // The latest ready time plus the margin, rounded up to a whole second.
        #expect(expected.at >= at(2.7) + WallSetAgreement.margin && expected.at - (at(2.7) + WallSetAgreement.margin) < 1_000_000_000)
        #expect(expected.at.nanoseconds % 1_000_000_000 == 0)
        // Switched, each plays it from that time, and nothing further is agreed on.
        for name in ["a", "b", "c"] { wall.nodes[name]!.switched(to: new, at: expected.at) }
        wall.tick(at(9))
        #expect(wall.decisions().values.allSatisfy { $0 == nil })
        #expect(wall.nodes["a"]!.heard["b"]?.playing == new && wall.nodes["a"]!.heard["b"]?.since == expected.at)
    }

    @Test func aNodeLackingTheSetHoldsEveryoneOnTheOldOne() {
        var wall = Wall(["a", "b", "c"], playing: old)
        wall.nodes["a"]!.haveSet(new, now: at(0))
        wall.nodes["b"]!.haveSet(new, now: at(0.5))
        for s in 1...60 {
            wall.tick(at(Double(s)))
            #expect(wall.decisions().values.allSatisfy { $0 == nil }, "second \(s)")
        }
        // A node whose set is another one (the list changed again) holds them too.
        wall.nodes["c"]!.haveSet(newer, now: at(61))
        wall.tick(at(62))
        #expect(wall.decisions().values.allSatisfy { $0 == nil })
        // Once all have the newer one, that is what they switch to.
        wall.nodes["a"]!.haveSet(newer, now: at(63))
        wall.nodes["b"]!.haveSet(newer, now: at(64.5))
        wall.tick(at(65))
        let decided = wall.decisions()
        #expect(decided.values.allSatisfy { $0 == .init(id: newer, at: WallSetAgreement.switchTime(lastReady: at(64.5))) }, "\(decided)")
    }

    @Test func lostDatagramsDelayTheAgreementButNotChangeIt() {
        var wall = Wall(["a", "b"], playing: old)
        wall.nodes["a"]!.haveSet(new, now: at(0.3))
        wall.nodes["b"]!.haveSet(new, now: at(0.9))
        // b hears nothing for three seconds; a hears b from the start.
        for s in 1...3 {
            wall.tick(at(Double(s))) { from, _ in from == "a" }
        }
        var decided = wall.decisions()
        let expected = WallSetAgreement.Agreed(id: new, at: WallSetAgreement.switchTime(lastReady: at(0.9)))
        #expect(decided["a"] == expected && decided["b"] == .some(nil), "\(decided)")
        wall.tick(at(4))
        decided = wall.decisions()
        #expect(decided.values.allSatisfy { $0 == expected }, "\(decided)")
        // A copy heard twice, and an older message after a newer one, change nothing.
        let copy = WallSetMessage(sent: at(3.5), playing: old, since: nil, ready: nil, readyAt: nil)
        #expect(wall.nodes["b"]!.received(copy.encoded, from: "a", now: at(4.1)) == .taken)
        #expect(wall.nodes["b"]!.heard["a"]?.ready == new)
        #expect(wall.nodes["b"]!.decide() == expected)
    }

    @Test func aLateNodeSetsTheTimeForAll() {
        var wall = Wall(["a", "b"], playing: old)
        wall.nodes["a"]!.haveSet(new, now: at(0))
        for s in 1...20 { wall.tick(at(Double(s))) }
        #expect(wall.decisions().values.allSatisfy { $0 == nil })
        wall.nodes["b"]!.haveSet(new, now: at(20.4))
        wall.tick(at(21))
        let decided = wall.decisions()
        let expected = WallSetAgreement.Agreed(id: new, at: WallSetAgreement.switchTime(lastReady: at(20.4)))
        #expect(decided.values.allSatisfy { $0 == expected }, "\(decided)")
        #expect(expected.at >= at(20.4) + WallSetAgreement.margin, "never before the late node had it")
        // Its ready time stays the first one told, however often it is told again.
        wall.nodes["b"]!.haveSet(new, now: at(22))
        #expect(wall.nodes["b"]!.ready?.at == at(20.4))
    }

    @Test func aNodeRestartingAfterTheSwitchTakesTheOthersSwitchTime() {
        var wall = Wall(["a", "b"], playing: old)
        let switchAt = at(7)
        wall.nodes["a"]!.switched(to: new, at: switchAt)
        // b restarted without its record of the switch: its copy is the old set, and it has the new one whole again.
        wall.nodes["b"] = WallSetAgreement(node: "b", nodes: ["a", "b"], epoch: epoch, playing: old, since: nil)
        wall.tick(at(30))
        #expect(wall.nodes["b"]!.decide() == nil, "it does not have the set yet")
        wall.nodes["b"]!.haveSet(new, now: at(31))
        #expect(wall.nodes["b"]!.decide() == .init(id: new, at: switchAt), "the switch time the others play on, in the past")
        // One that kept its record starts on it and agrees to nothing.
        var kept = WallSetAgreement(node: "b", nodes: ["a", "b"], epoch: epoch, playing: new, since: switchAt)
        kept.received(wall.nodes["a"]!.due(now: at(40))!.encoded, from: "a", now: at(40))
        #expect(kept.decide() == nil && kept.playing == new && kept.since == switchAt)
    }

    /// A peer playing the set on the config's epoch (a copy without its `.wall` record, or a node
    /// whose switch was not recorded) says no switch time: a node with that set whole joins it on
    /// the epoch, not waiting for ever on a readiness the peer never says.
    @Test func aPeerPlayingTheSetOnTheEpochIsJoinedOnTheEpoch() {
        var wall = Wall(["a", "b"], playing: old)
        wall.nodes["a"] = WallSetAgreement(node: "a", nodes: ["a", "b"], epoch: epoch, playing: new, since: nil)
        wall.nodes["b"]!.haveSet(new, now: at(1))
        wall.tick(at(2))
        #expect(wall.nodes["b"]!.decide() == .init(id: new, at: epoch))
    }

    /// Several peers playing the set since different times (a stale message, heard in any order):
    /// the latest switch time, the same on every node.
    @Test func ofSeveralPeersPlayingTheSetTheLatestSwitchTimeIsTaken() {
        let names = ["a", "b", "c", "d"]
        var wall = Wall(names, playing: old)
        wall.nodes["a"] = WallSetAgreement(node: "a", nodes: names, epoch: epoch, playing: new, since: at(-100))
        wall.nodes["b"] = WallSetAgreement(node: "b", nodes: names, epoch: epoch, playing: new, since: at(-10))
        wall.nodes["c"] = WallSetAgreement(node: "c", nodes: names, epoch: epoch, playing: new, since: nil)
        wall.nodes["d"]!.haveSet(new, now: at(1))
        wall.tick(at(2))
        #expect(wall.nodes["d"]!.decide() == .init(id: new, at: at(-10)))
        // Heard in the other order (a node hearing c and a before b): the same.
        var other = WallSetAgreement(node: "d", nodes: names, epoch: epoch, playing: old, since: nil)
        other.haveSet(new, now: at(1))
        for peer in ["c", "b", "a"] {
            var sender = wall.nodes[peer]!
            other.received(sender.due(now: at(3))!.encoded, from: peer, now: at(3))
        }
        #expect(other.decide() == .init(id: new, at: at(-10)))
    }

    /// The set playing, still held (a switch the playlist could not record): never agreed on again,
    /// which would cut it again and again.
    @Test func theSetPlayingIsNoNewSet() {
        var wall = Wall(["a", "b"], playing: old)
        wall.nodes["a"]!.switched(to: new, at: at(5))
        wall.nodes["b"]!.switched(to: new, at: at(5))
        wall.nodes["a"]!.haveSet(new, now: at(6))
        wall.tick(at(7))
        #expect(wall.nodes["a"]!.ready == nil && wall.nodes["a"]!.decide() == nil)
    }

    @Test func hostileDatagramsAreCountedAndNeverActedOn() {
        var node = WallSetAgreement(node: "a", nodes: ["a", "b"], epoch: epoch, playing: old, since: nil)
        node.haveSet(new, now: at(0))
        let now = at(10)
        let good = WallSetMessage(sent: now, playing: old, since: nil, ready: new, readyAt: at(5))
        // From a node not of the wall.
        #expect(node.received(good.encoded, from: "mallory", now: now) == .stranger)
        // Malformed: garbage, ids that are not hex, every byte value.
        #expect(node.received(Array("marquee-set 1 \(now.nanoseconds) zz 0 - 0".utf8), from: "b", now: now) == .malformed)
        for byte in UInt8.min...UInt8.max { node.received([byte], from: "b", now: now) }
        // Times far off: sent an hour away, a ready time or a since beyond the sending.
        let far = [WallSetMessage(sent: now + 3_600_000_000_000, playing: old, since: nil, ready: new, readyAt: at(5)),
                   WallSetMessage(sent: now + (-3_600_000_000_000), playing: old, since: nil, ready: new, readyAt: at(5)),
                   WallSetMessage(sent: now, playing: old, since: nil, ready: new, readyAt: now + 600_000_000_000),
                   WallSetMessage(sent: now, playing: new, since: now + 600_000_000_000, ready: nil, readyAt: nil)]
        for message in far { #expect(node.received(message.encoded, from: "b", now: now) == .farOff) }
        #expect(node.counters == .init(sent: 0, received: 0, malformed: 257, strangers: 1, farOff: 4))
        #expect(node.heard.isEmpty && node.decide() == nil, "nothing of it acted on")
        // The good one still is.
        #expect(node.received(good.encoded, from: "b", now: now) == .taken)
        #expect(node.decide() == .init(id: new, at: WallSetAgreement.switchTime(lastReady: at(5))))
    }

    @Test func aNodeSaysWhereItStandsOnceASecond() {
        var node = WallSetAgreement(node: "a", nodes: ["a", "b"], epoch: epoch, playing: nil, since: nil)
        var sent: [WallSetMessage] = []
        for tenth in 0..<35 { if let m = node.due(now: at(Double(tenth) / 10)) { sent.append(m) } }
        #expect(sent.count == 4 && sent.allSatisfy { $0.playing == nil && $0.ready == nil })
        node.haveSet(new, now: at(3.6))
        #expect(node.due(now: at(4.0))?.ready == new)
        // A clock stepped back does not silence it.
        #expect(node.due(now: at(-100)) != nil)
    }

    @Test func aWallOfSeveralNodesOnTheClockPlayingARemoteListNeedsItsCueSocket() {
        let text = #"""
            {"playlist": {"m3u": "http://10.0.0.5/l.m3u"}, "network": {"allow": ["http://10.0.0.0/8"], "cache": {}},
             "wall": {"canvas": {"width": 640, "height": 180},
                      "outputs": [{"name": "l", "node": "l", "x": 0, "y": 0, "width": 320, "height": 180},
                                  {"name": "r", "node": "r", "x": 320, "y": 0, "width": 320, "height": 180}],
                      "sync": {"mode": "clock"CUE}}}
            """#
        let problems = NetworkConfigTests().problems(text.replacingOccurrences(of: "CUE", with: ""))
        #expect(problems.count == 1 && problems[0].hasPrefix("wall.sync.cue: missing: a wall of 2 nodes on the clock playing a remote M3U needs wall.sync.cue.nodes"), "\(problems)")
        let cue = #", "cue": {"nodes": {"l": "10.0.0.11:7400", "r": "10.0.0.12:7400"}}"#
        #expect(NetworkConfigTests().problems(text.replacingOccurrences(of: "CUE", with: cue)).isEmpty)
        // One node: nothing to agree with.
        let single = #"{"playlist": {"m3u": "http://10.0.0.5/l.m3u"}, "network": {"allow": ["http://10.0.0.0/8"], "cache": {}}, "wall": {"canvas": {"width": 320, "height": 180}, "outputs": [{"name": "l", "node": "l", "x": 0, "y": 0, "width": 320, "height": 180}], "sync": {"mode": "clock"}}}"#
        #expect(NetworkConfigTests().problems(single).isEmpty)
    }
}
