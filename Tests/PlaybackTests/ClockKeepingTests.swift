import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing

/// A display driven vsync by vsync in virtual time, with a decoder that takes virtual time too:
/// by vsync `n` the reader may have decoded `headStart + decodesPerVsync * (n + 1)` frames
/// (skipped frames cost nothing), and a new picture takes `drawVsyncs` vsyncs to show (the output
/// reports it shown that much later). Nothing waits for the decoder: a real display's deadline.
final class PacedDisplay {
    let output: PlayerVideoOutput
    let backend: FakeBackend
    let player: Player
    var decodesPerVsync: Double
    var headStart: Int
    var drawVsyncs: Int64 = 1
    private(set) var vsync: Int64 = -1
    private var work = 0.0
    /// Every new frame: the vsync it was shown on and its index in the clip.
    private(set) var shown: [(vsync: Int64, frame: Int)] = []

    init(_ player: Player, backend: FakeBackend, decodesPerVsync: Double, headStart: Int = 2) throws {
        self.player = player
        self.backend = backend
        self.decodesPerVsync = decodesPerVsync
        self.headStart = headStart
        output = try PlayerVideoOutput(player: player, refresh: RefreshRate(numerator: 60), name: "paced-0")
        backend.limitDecoding(to: headStart)  // before the player starts decoding
    }

    /// Lets the decoder do one vsync's work.
    private func decodeOneVsync() {
        work += decodesPerVsync
        backend.allowDecoding(upTo: headStart + Int(work.rounded(.down))) { [player] in
            player.withLock { player.run.map { $0.feeder.queue.count >= $0.feeder.queue.capacity } ?? false }
        }
    }

    /// Runs until vsync `last` has passed.
    func run(through last: Int64) {
        while vsync < last {
            vsync += 1
            decodeOneVsync()
            let picture = output.picture(forVsync: vsync, waitingUpTo: 0)
            guard picture.isNew, let frame = picture.frame as? ScriptFrame else { continue }
            let on = vsync + drawVsyncs - 1
            shown.append((on, frame.index))
            if on > vsync {
                while vsync < on {
                    vsync += 1
                    decodeOneVsync()
                }
                output.didShow(onVsync: on)
            }
        }
    }

    /// Where the clip's clock starts: the vsync its first picture was shown on (the timeline
    /// starts with it).
    private var origin: Int64 { shown.first?.vsync ?? 0 }

    /// How far each picture was behind the clock when it was shown (seconds): the largest.
    func worstLagWhenShown(fps: Double = 30) -> Double {
        shown.map { Double($0.vsync - origin) / 60 - Double($0.frame) / fps }.max() ?? 0
    }

    /// How far the picture shown at each vsync is behind the clock (seconds, clip at 30 fps
    /// started with its first picture, 60 Hz): the largest value from vsync `from` on.
    func worstLag(from: Int64, fps: Double = 30) -> Double {
        var worst = 0.0
        for (i, s) in shown.enumerated() where s.vsync >= from {
            // The picture stays until the next one: its lag grows until then.
            let until = i + 1 < shown.count ? shown[i + 1].vsync - 1 : vsync
            worst = max(worst, Double(until - origin) / 60 - Double(s.frame) / fps)
        }
        return worst
    }
}

@Suite("Keeping the clock under load")
struct ClockKeepingTests {
    /// A 30 fps clip of `seconds`, one keyframe a second, odd frames non-reference.
    func slowClip(_ backend: FakeBackend, seconds: Int = 20, honoursFrameDrop: Bool = true) -> PlayerItem {
        var clip = FakeBackend.Clip(frames: 30 * seconds, fps: 30)
        clip.keyframeInterval = 30
        clip.nonReferenceEvery = 2
        clip.honoursFrameDrop = honoursFrameDrop
        return PlayerItem(url: backend.add("slow.mp4", clip), backend: backend)
    }

    @Test func aDecoderAtAQuarterOfRealTimeKeepsTheTimelineOnTheClockAndSkipsFrames() throws {
        let backend = FakeBackend()
        let player = try Player(item: slowClip(backend), logger: quiet)
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.125)  // 7.5 decodes/s
        player.play()
        display.run(through: 599)  // 10 s
        let timeline = player.currentTime().seconds
        let wall = 600.0 / 60
        #expect(abs(timeline / wall - 1) < 0.01, "timeline \(timeline) s in \(wall) s")
        let stats = player.stats
        #expect(stats.stalls == 0 && !player.isStalled)
        // It skipped frames at the decoder, down to keyframes when far behind, and the picture
        // stayed close to the clock (the old player showed every frame: 2.5 s of clip in 10 s).
        #expect(backend.frameDropLevels.contains(.nonReference) && backend.frameDropLevels.contains(.nonKey),
                "\(backend.frameDropLevels)")
        #expect(stats.decoderDropped > 150, "decoder skipped \(stats.decoderDropped)")
        #expect(backend.skippedCount >= stats.decoderDropped)
        let lastFrame = display.shown.last?.frame ?? 0
        #expect(lastFrame >= 250, "last frame shown \(lastFrame) of the 300 due")
        // A picture decoded too late is dropped rather than shown long after its time.
        #expect(display.worstLagWhenShown() < 0.3, "lag \(display.worstLagWhenShown()) s")
        #expect(display.shown.count > 40, "\(display.shown.count) pictures")
    }

    @Test func aDecoderAtHalfRealTimeSkipsNonReferenceFramesAndShowsEveryFrameItDecodes() throws {
        let backend = FakeBackend()
        let player = try Player(item: slowClip(backend), logger: quiet)
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.25)  // 15 decodes/s
        player.play()
        display.run(through: 599)
        #expect(abs(player.currentTime().seconds / 10 - 1) < 0.01, "\(player.currentTime().seconds)")
        #expect(backend.frameDropLevels.first == .nonReference, "\(backend.frameDropLevels)")
        #expect(!backend.frameDropLevels.contains(.nonKey), "\(backend.frameDropLevels)")
        // Half the frames are skipped; the others are all shown, a few vsyncs late at most (it
        // takes three late frames in a row to start skipping: 0.17 s behind at 15 decodes/s).
        let stats = player.stats
        #expect(stats.decoderDropped >= 130 && stats.dropped == 0, "\(stats)")
        #expect(display.shown.count >= 140, "\(display.shown.count) pictures")
        #expect(display.worstLag(from: 0) < 0.2, "lag \(display.worstLag(from: 0)) s")
        #expect(stats.stalls == 0)
    }

    @Test func withoutDecoderSkippingLateFramesStillDoNotSlowTheTimeline() throws {
        let backend = FakeBackend()
        let player = try Player(item: slowClip(backend, honoursFrameDrop: false), logger: quiet)
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.25)
        player.play()
        display.run(through: 599)
        #expect(abs(player.currentTime().seconds / 10 - 1) < 0.01, "\(player.currentTime().seconds)")
        // Every decoded frame came late: shown a little late at first, then, later and later,
        // dropped (counted); none was skipped at the decoder.
        let stats = player.stats
        #expect(stats.decoderDropped == 0 && stats.delayed > 5 && stats.dropped > 100 && stats.stalls == 0, "\(stats)")
        #expect(display.worstLagWhenShown() < 0.3, "lag \(display.worstLagWhenShown()) s")
    }

    @Test func noFrameForLongerThanTheStallTimeoutPausesTheTimelineAndReportsIt() async throws {
        let backend = FakeBackend()
        let item = slowClip(backend)
        let events = item.events()
        let player = try Player(item: item, logger: quiet)
        player.stallTimeout = 0.5
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.5, headStart: 3)
        player.play()
        display.run(through: 119)  // 2 s at the clock
        #expect(abs(player.currentTime().seconds - 2) < 0.04)
        // Storage stops for 1.5 s: no frame at all (the few already decoded are shown).
        display.decodesPerVsync = 0
        display.run(through: 209)
        let beforeStall = display.shown.last?.frame ?? -1
        #expect(beforeStall >= 59)
        #expect(player.isStalled && player.timeControlStatus == .waitingToPlayAtSpecifiedRate
                && player.reasonForWaitingToPlay == .toMinimizeStalls)
        let held = player.currentTime()
        display.run(through: 229)
        #expect(player.currentTime() == held, "the timeline waits while stalled: \(held.seconds) then \(player.currentTime().seconds)")
        // The timeline waits where the missing frame belongs.
        #expect(abs(held.seconds - Double(beforeStall + 1) / 30) < 0.001, "held at \(held.seconds), last frame \(beforeStall)")
        // Frames come again: the next frame is shown, nothing is dropped, and time runs on at 1.0.
        display.decodesPerVsync = 0.5
        display.run(through: 289)
        let resumed = display.shown.first { $0.vsync > 209 }
        #expect(resumed?.frame == beforeStall + 1)
        #expect(!player.isStalled && player.timeControlStatus == .playing)
        let stats = player.stats
        #expect(stats.stalls == 1 && stats.dropped == 0, "\(stats)")
        let after = player.currentTime().seconds - held.seconds
        #expect(after > 0.9 && after < 1.05, "\(after) s of timeline in about 1 s after the stall")
        let seen = await firstValues(1, of: events).map { "\($0)" }
        #expect(seen == ["playbackStalled"])
    }

    @Test func aPauseInDecodingShorterThanTheStallTimeoutIsNoStall() throws {
        let backend = FakeBackend()
        let player = try Player(item: slowClip(backend), logger: quiet)
        player.stallTimeout = 0.5
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.5, headStart: 3)
        player.play()
        display.run(through: 119)
        display.decodesPerVsync = 0
        display.run(through: 139)  // a third of a second without frames
        display.decodesPerVsync = 0.5
        display.run(through: 359)
        #expect(player.stats.stalls == 0 && !player.isStalled)
        #expect(abs(player.currentTime().seconds / 6 - 1) < 0.01, "\(player.currentTime().seconds)")
        // Skipping non-reference frames caught up with the clock.
        #expect(display.worstLag(from: 240) < 0.1, "lag \(display.worstLag(from: 240)) s")
    }
}

@Suite("Decoder frame drop policy")
struct FrameDropPolicyTests {
    let frame = 1.0 / 30

    @Test func lateFramesSkipNonReferenceThenKeyframesAndRelaxOneStepAtATime() {
        var policy = FrameDropPolicy()
        #expect(policy.update(lead: 0.1, frameDuration: frame, lateDropRate: 0) == .none)
        // Three frames in a row that missed their vsync: decoding has fallen behind.
        #expect(policy.update(lead: -0.01, frameDuration: frame, lateDropRate: 0) == .none)
        #expect(policy.update(lead: -0.01, frameDuration: frame, lateDropRate: 0) == .none)
        #expect(policy.update(lead: -0.01, frameDuration: frame, lateDropRate: 0) == .nonReference)
        #expect(policy.update(lead: 0.01, frameDuration: frame, lateDropRate: 0) == .nonReference)  // not caught up yet
        #expect(policy.update(lead: -0.6, frameDuration: frame, lateDropRate: 0) == .nonKey)
        #expect(policy.update(lead: -0.2, frameDuration: frame, lateDropRate: 0) == .nonKey)  // a keyframe, still late
        #expect(policy.update(lead: 0.3, frameDuration: frame, lateDropRate: 0) == .nonReference)
        #expect(policy.update(lead: 0.3, frameDuration: frame, lateDropRate: 0) == .none)
    }

    @Test("one late frame (an item's first while its decoder opens) skips nothing; one more than two frames late does")
    func oneLateFrameIsNotFallingBehind() {
        var policy = FrameDropPolicy()
        #expect(policy.update(lead: -0.008, frameDuration: 1.0 / 24, lateDropRate: 0) == .none)
        #expect(policy.update(lead: 0.1, frameDuration: 1.0 / 24, lateDropRate: 0) == .none)
        #expect(policy.update(lead: -0.008, frameDuration: 1.0 / 24, lateDropRate: 0) == .none)
        #expect(policy.update(lead: -0.09, frameDuration: 1.0 / 24, lateDropRate: 0) == .nonReference)
    }

    @Test func presentationDroppingLateFramesSkipsNonReferenceFramesUntilItKeepsUp() {
        var policy = FrameDropPolicy()
        #expect(policy.update(lead: 0.2, frameDuration: frame, lateDropRate: 0.5) == .nonReference)
        #expect(policy.update(lead: 0.2, frameDuration: frame, lateDropRate: 0.1) == .nonReference)
        #expect(policy.update(lead: 0.2, frameDuration: frame, lateDropRate: 0.01) == .none)
    }

    @Test func withoutAClockNothingIsSkippedAndAKeyframeSkipEndsAtTheNextFrame() {
        var policy = FrameDropPolicy()
        #expect(policy.update(lead: .infinity, frameDuration: frame, lateDropRate: 0) == .none)
        #expect(policy.update(lead: -5, frameDuration: frame, lateDropRate: 0) == .nonKey)
        #expect(policy.update(lead: .infinity, frameDuration: frame, lateDropRate: 0) == .nonReference)
        #expect(policy.update(lead: .infinity, frameDuration: 0, lateDropRate: 0) == .none)
    }
}
