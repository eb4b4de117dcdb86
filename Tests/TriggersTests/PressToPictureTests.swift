import Playback
import PlaybackTestSupport
import Testing
import Triggers

/// Press to picture on the virtual vsync: a prerolled target's first frame on the vsync after the
/// press, and the attract loop back on the frame after the one it left (or frame 0), gapless.
@Suite("Press to picture")
struct PressToPictureTests {
    let backend = FakeBackend()
    static let loopIndex = 0, filmIndex = 100

    /// A looped 120-frame attract loop and a stage whose rule 0 plays a 30-frame film (both 30 fps,
    /// shown at 60 Hz: 2 vsyncs a frame).
    func makeShow() throws -> (QueuePlayer, PlayerLooper, TriggerStage, VirtualDisplay) {
        let loopURL = backend.add("attract.mp4", .init(frames: 120, fps: 30))
        let filmURL = backend.add("film.mp4", .init(frames: 30, fps: 30))
        let player = QueuePlayer(logger: quiet)
        let template = PlayerItem(url: loopURL, backend: backend)
        template.playlistIndex = Self.loopIndex
        let looper = PlayerLooper(player: player, templateItems: [template])
        let backend = backend
        let stage = TriggerStage(player: player) { _ in
            let film = PlayerItem(url: filmURL, backend: backend)
            film.playlistIndex = Self.filmIndex
            return [film]
        }
        let display = try VirtualDisplay(player)
        player.play()
        return (player, looper, stage, display)
    }

    struct PressResult {
        var latency: Int64
        var lastLoopFrame: Int
        var resumedFrame: Int
    }

    /// Presses at vsync `press` (the press comes after that vsync's picture), plays the film out and
    /// checks every frame of the cut: returns the press's latency in vsyncs and the loop's frames
    /// either side.
    func press(_ stage: TriggerStage, _ display: VirtualDisplay, at press: Int64, then: QueuePlayer.CutInReturn) throws -> PressResult {
        #expect(stage.waitUntilReady(0, timeout: 10), "the film's first frame is decoded before the press")
        display.step(Int(press - display.vsync))
        let before = display.shown.count
        #expect(stage.play(rule: 0, then: then))
        display.step(30 * 2 + 8)
        let after = Array(display.shown[before...])
        let lastLoop = try #require(display.shown[..<before].last { $0.item == Self.loopIndex })
        let film = after.filter { $0.item == Self.filmIndex }
        #expect(film.map(\.frame) == (0..<30).map { $0 }, "every film frame once, in order")
        let first = try #require(film.first)
        // The film starts at most 2 vsyncs after the loop's last frame (a frame lasts 2 vsyncs): no gap.
        #expect(first.vsync - lastLoop.vsync <= 2)
        let filmHolds = zip(film, film.dropFirst()).map { $1.vsync - $0.vsync }
        #expect(filmHolds.allSatisfy { $0 == 2 }, "film frame holds \(filmHolds)")
        let back = try #require(after.first { $0.item == Self.loopIndex })
        #expect(back.vsync - film.last!.vsync == 2, "the loop follows the film's last frame on its due vsync")
        #expect(!after.contains { $0.frame == nil }, "no background between")
        return PressResult(latency: first.vsync - press, lastLoopFrame: lastLoop.frame ?? -1, resumedFrame: back.frame ?? -1)
    }

    @Test("100 presses at varied vsyncs: the film's first frame at most 2 vsyncs after the press; the loop resumes on the frame after the one it left")
    func hundredPressesResume() throws {
        let (_, looper, stage, display) = try makeShow()
        stage.prepare(rules: [0])
        display.step(10)
        var latencies: [Int64] = []
        var generator = SplitMix(seed: 29)
        for _ in 0..<100 {
            let at = display.vsync + 3 + Int64(generator.next() % 150)
            let result = try press(stage, display, at: at, then: .resume)
            latencies.append(result.latency)
            #expect(result.resumedFrame == (result.lastLoopFrame + 1) % 120,
                    "left on frame \(result.lastLoopFrame), came back on \(result.resumedFrame)")
        }
        let sorted = latencies.sorted()
        let median = sorted[sorted.count / 2], worst = sorted.last!
        print("press to first frame over 100 virtual presses: median \(median) vsync(s), worst \(worst), histogram \(Dictionary(grouping: latencies) { $0 }.mapValues(\.count))")
        #expect(worst <= 2)
        withExtendedLifetime(looper) {}
    }

    @Test("items made after a film has gone are never taken for it, though one may sit at its freed address")
    func aFreedFilmIsNotAnotherItem() throws {
        let (player, _, stage, display) = try makeShow()
        stage.prepare(rules: [0])
        display.step(10)
        _ = try press(stage, display, at: display.vsync + 5, then: .resume)
        #expect(!player.items().contains { stage.isTriggered($0) }, "the film has left the queue")
        let url = backend.add("other.mp4", .init(frames: 10, fps: 30))
        // One at a time, each freed before the next: the allocator hands freed addresses out again.
        var taken = 0
        for _ in 0..<200 where stage.isTriggered(PlayerItem(url: url, backend: backend)) { taken += 1 }
        #expect(taken == 0, "\(taken) of 200 new items were taken for the film")
    }

    @Test("then restart: the loop comes back on its frame 0; then next: the item queued after it")
    func restartAndNext() throws {
        let (_, looper, stage, display) = try makeShow()
        stage.prepare(rules: [0])
        display.step(10)
        let restarted = try press(stage, display, at: display.vsync + 41, then: .restart)
        #expect(restarted.latency <= 2)
        #expect(restarted.resumedFrame == 0)
        let next = try press(stage, display, at: display.vsync + 77, then: .next)
        #expect(next.latency <= 2)
        #expect(next.resumedFrame == 0, "the looper's next pass starts on frame 0")
        withExtendedLifetime(looper) {}
    }

    @Test("a press while the film plays cuts to a fresh film; the loop still comes back once, where it was left")
    func pressDuringTheFilm() throws {
        let (_, looper, stage, display) = try makeShow()
        stage.prepare(rules: [0])
        display.step(31)
        let lastLoop = try #require(display.shown.last { $0.item == Self.loopIndex }?.frame)
        #expect(stage.waitUntilReady(0, timeout: 10))
        stage.play(rule: 0, then: .resume)
        display.step(20)
        #expect(stage.waitUntilReady(0, timeout: 10))
        let before = display.shown.count
        stage.play(rule: 0, then: .resume)
        display.step(70)
        let after = Array(display.shown[before...])
        #expect(after.filter { $0.item == Self.filmIndex }.map(\.frame) == (0..<30).map { $0 })
        let back = try #require(after.first { $0.item == Self.loopIndex })
        #expect(back.frame == lastLoop + 1)
        withExtendedLifetime(looper) {}
    }
}

/// A small seeded generator: the same press vsyncs on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
