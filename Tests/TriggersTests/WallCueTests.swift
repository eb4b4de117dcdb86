import Playback
import PlaybackTestSupport
import Testing
import Triggers

/// Wall cues on virtual vsyncs: a cut lands on the first vsync whose wall time is at or after the
/// cue's, on every node whatever its vsync phase; a late cue cuts at once and says by how much.
@Suite("Wall cues")
struct WallCueTests {
    static let interval: Int64 = 16_666_667  // 60 Hz in nanoseconds
    static let base = WallTime(nanoseconds: 1_780_000_000_000_000_000)

    /// A node's vsyncs: vsync n at `phase` + n intervals after `base`.
    struct Node {
        let phase: Int64
        func wall(_ n: Int64) -> WallTime { WallTime(nanoseconds: base.nanoseconds + phase + n * interval) }
    }

    /// Runs vsyncs 0..<`count` on `node`, returning the vsync and lateness each cut landed with.
    func land(_ schedule: inout CueSchedule<Int>, on node: Node, vsyncs count: Int64) -> [Int: (vsync: Int64, late: Int64?)] {
        var landed: [Int: (Int64, Int64?)] = [:]
        for n in 0..<count {
            for cut in schedule.due(vsyncAt: node.wall(n), interval: Self.interval) { landed[cut.payload] = (n, cut.lateBy) }
        }
        return landed
    }

    @Test("two nodes out of phase cut on their first vsync at or after the cue's time: both inside the same one-vsync window")
    func cutsLandInTheSameWindow() {
        var generator = SplitMix(seed: 8)
        for trial in 0..<200 {
            let phases = [Int64(generator.next() % UInt64(Self.interval)), Int64(generator.next() % UInt64(Self.interval))]
            // The cue's time anywhere between vsyncs 20 and 80, to the nanosecond; one on a vsync exactly.
            let at = trial == 0 ? Node(phase: phases[0]).wall(50) : Self.base + Int64(generator.next() % UInt64(60 * Self.interval)) + 20 * Self.interval
            var walls: [WallTime] = []
            for phase in phases {
                let node = Node(phase: phase)
                var schedule = CueSchedule<Int>()
                #expect(added(&schedule, at: at, 1))
                let landed = land(&schedule, on: node, vsyncs: 100)
                let (vsync, late) = try! #require(landed[1])
                #expect(late == nil)
                #expect(node.wall(vsync) >= at && node.wall(vsync - 1) < at, "the first vsync at or after the cue's time")
                walls.append(node.wall(vsync))
                #expect(schedule.waiting.isEmpty)
            }
            for wall in walls { #expect(wall - at >= 0 && wall - at < Self.interval, "inside [at, at + one vsync)") }
            #expect(abs(walls[0] - walls[1]) < Self.interval)
        }
    }

    @Test("a cue that comes after its time cuts on the next vsync asked for, marked late by how far past its window")
    func aLateCueCutsAtOnce() {
        let node = Node(phase: 3_000_000)
        var schedule = CueSchedule<Int>()
        // Asked for vsyncs 0...9 with nothing waiting; then a cue whose time was vsync 2's.
        _ = land(&schedule, on: node, vsyncs: 10)
        #expect(added(&schedule, at: node.wall(2), 7))
        let cuts = schedule.due(vsyncAt: node.wall(10), interval: Self.interval)
        #expect(cuts.map(\.payload) == [7])
        #expect(cuts.first?.lateBy == node.wall(10) - node.wall(2) - Self.interval + 1)
        // Just inside its window (the cue's time a hair after the previous vsync): on time.
        #expect(added(&schedule, at: node.wall(10) + 1, 8))
        #expect(due(&schedule, vsyncAt: node.wall(10), interval: Self.interval).isEmpty)
        let next = schedule.due(vsyncAt: node.wall(11), interval: Self.interval)
        #expect(next.map(\.payload) == [8] && next[0].lateBy == nil)
    }

    @Test("cuts come out in the order of their times, several on one vsync; a clock with no wall time cuts at once; a flood is refused")
    func orderAndLimits() {
        var schedule = CueSchedule<Int>()
        let node = Node(phase: 0)
        #expect(added(&schedule, at: node.wall(5), 2))
        #expect(added(&schedule, at: node.wall(3), 1))
        #expect(added(&schedule, at: node.wall(5) + (-1), 3))
        #expect(due(&schedule, vsyncAt: node.wall(2), interval: Self.interval).isEmpty)
        #expect(due(&schedule, vsyncAt: node.wall(5), interval: Self.interval).map(\.payload) == [1, 3, 2])
        #expect(added(&schedule, at: node.wall(9), 4))
        #expect(due(&schedule, vsyncAt: nil, interval: Self.interval).map(\.payload) == [4])
        for i in 0..<CueSchedule<Int>.limit { #expect(added(&schedule, at: node.wall(20), i)) }
        #expect(!added(&schedule, at: node.wall(20), 99), "the queue of cuts is bounded")
        #expect(schedule.waiting.count == CueSchedule<Int>.limit)
    }

    @Test("a cue's datagram round-trips; anything else is refused, never trapping")
    func datagrams() {
        let cue = WallCue(sequence: 41, rule: 2, at: WallTime(nanoseconds: 1_780_000_000_123_456_789))
        #expect(String(decoding: cue.encoded, as: UTF8.self) == "marquee-cue 1 41 2 1780000000123456789")
        #expect(WallCue.parse(cue.encoded, rules: 3) == cue)
        let refused = [
            "marquee-cue 1 41 3 1780000000123456789",  // no rule 3
            "marquee-cue 1 41 -1 1780000000123456789",
            "marquee-cue 2 41 2 1780000000123456789",  // another version
            "marquee-cue 1 41 2",
            "marquee-cue 1 41 2 1780000000123456789 x",
            "marquee-cue 1 18446744073709551616 2 1780000000123456789",  // past UInt64
            "marquee-cue 1 41 2 99999999999999999999",  // past Int64
            "marquee-cue 1 41 2 0",
            "marquee-cue  1 41 2 1780000000123456789",
            "marquee-cue 1 4a 2 1780000000123456789",
            "", "marquee-cue",
            "marquee-cue 1 41 2 " + String(repeating: "1", count: 100),
        ]
        for text in refused { #expect(WallCue.parse(Array(text.utf8), rules: 3) == nil, "\(text)") }
        #expect(WallCue.parse(Array("marquee-cue 1 41 2 17800000001234\u{0}".utf8), rules: 3) == nil)
        #expect(WallCue.parse([0xff, 0xfe] + cue.encoded, rules: 3) == nil)
        var generator = SplitMix(seed: 5)
        for _ in 0..<2000 {
            let bytes = (0..<Int(generator.next() % 120)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            _ = WallCue.parse(bytes, rules: 3)
        }
    }

    @Test("the second copy of a cue is ignored; the same sequence from another sender, or at another time (a restarted sender), is new")
    func duplicates() {
        var seen = CueDeduplicator(capacity: 4)
        let cue = WallCue(sequence: 1, rule: 0, at: Self.base)
        #expect(isNew(&seen, cue, from: "pi-1"))
        #expect(!isNew(&seen, cue, from: "pi-1"))
        #expect(isNew(&seen, cue, from: "pi-2"))
        #expect(isNew(&seen, WallCue(sequence: 1, rule: 0, at: Self.base + 5), from: "pi-1"))
        for s in 2...5 { #expect(isNew(&seen, WallCue(sequence: UInt64(s), rule: 0, at: Self.base), from: "pi-1")) }
        #expect(isNew(&seen, cue, from: "pi-1"), "only the last few are remembered: memory stays bounded")
    }

    @Test("a cue from another node plays whatever the phase here; the item it interrupts ends; other actions are not cued")
    func theEngineTakesACue() {
        var engine = TriggerEngine(rules: [TriggerRule(source: .osc("/a"), plays: true, rearm: 2),
                                           TriggerRule(source: .osc("/b"), plays: true),
                                           TriggerRule(source: .osc("/c"), plays: false)])
        var step: [TriggerEngine.Effect]
        step = engine.cued(0, at: 1)
        #expect(step == [.fire(rule: 0)])
        #expect(engine.phase == .playing(rule: 0, lastInput: 1))
        step = engine.pulse(.osc("/b"), at: 1.5)
        #expect(step == [], "a press here is locked out while the film plays")
        step = engine.cued(1, at: 2)
        #expect(step == [.ended(rule: 0), .fire(rule: 1)], "the wall's film wins: every node plays it")
        step = engine.triggeredItemEnded(at: 3)
        #expect(step == [.ended(rule: 1)])
        step = engine.cued(0, at: 3.1)
        #expect(step == [.fire(rule: 0)], "re-arming here does not lock out the wall")
        let none = [engine.cued(2, at: 4), engine.cued(7, at: 4), engine.cued(-1, at: 4)]
        #expect(none.allSatisfy { $0.isEmpty })
        #expect(engine.counters.fired == 3)
    }
}

/// The gate in front of a real player on the virtual vsync: the prerolled film's first frame is
/// the picture of the vsync the cut was due on.
@Suite("Wall cue on the player")
struct WallCuePlayerTests {
    let backend = FakeBackend()

    @Test("20 cues at varied times: each film starts on the first vsync at or after its cue's time")
    func theFilmStartsOnTheCueVsync() throws {
        let loopURL = backend.add("attract.mp4", .init(frames: 120, fps: 30))
        let filmURL = backend.add("film.mp4", .init(frames: 30, fps: 30))
        let player = QueuePlayer(logger: quiet)
        let template = PlayerItem(url: loopURL, backend: backend)
        template.playlistIndex = 0
        let looper = PlayerLooper(player: player, templateItems: [template])
        let backend = backend
        let stage = TriggerStage(player: player) { _ in
            let film = PlayerItem(url: filmURL, backend: backend)
            film.playlistIndex = 100
            return [film]
        }
        let display = try VirtualDisplay(player)
        player.play()
        stage.prepare(rules: [0])
        let node = WallCueTests.Node(phase: 7_000_000)
        var schedule = CueSchedule<Int>()
        var generator = SplitMix(seed: 29)
        display.step(10)
        for press in 0..<20 {
            #expect(stage.waitUntilReady(0, timeout: 10))
            let at = node.wall(display.vsync) + 6 * WallCueTests.interval + Int64(generator.next() % UInt64(WallCueTests.interval))
            #expect(added(&schedule, at: at, press))
            var cutOn: Int64?
            let before = display.shown.count
            for _ in 0..<(30 * 2 + 20) {
                let n = display.vsync + 1
                for cut in schedule.due(vsyncAt: node.wall(n), interval: WallCueTests.interval) {
                    #expect(cut.lateBy == nil)
                    cutOn = n
                    #expect(stage.play(rule: 0, then: .resume))
                }
                display.step()
            }
            let vsync = try #require(cutOn)
            #expect(node.wall(vsync) >= at && node.wall(vsync) - at < WallCueTests.interval)
            let film = display.shown[before...].filter { $0.item == 100 }
            #expect(film.first?.frame == 0 && film.first?.vsync == vsync, "the film's first frame is the cut vsync's picture: \(film.first.map { "\($0)" } ?? "none")")
            #expect(film.count == 30)
        }
        withExtendedLifetime(looper) {}
    }
}

func added(_ schedule: inout CueSchedule<Int>, at: WallTime, _ payload: Int) -> Bool { schedule.add(at: at, payload) }
func due(_ schedule: inout CueSchedule<Int>, vsyncAt wall: WallTime?, interval: Int64) -> [CueSchedule<Int>.Cut] { schedule.due(vsyncAt: wall, interval: interval) }
func isNew(_ seen: inout CueDeduplicator, _ cue: WallCue, from sender: String) -> Bool { seen.isNew(cue, from: sender) }
