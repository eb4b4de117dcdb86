import Foundation
import Playback
import PlaybackTestSupport
import Testing

/// A virtual-clock output at 60 Hz that records every picture it draws: the frame, the mix, and
/// the vsync it flipped on.
final class MixRecordingOutput: OutputDriver {
    typealias Frame = ScriptFrame
    struct Drawn: Equatable {
        var vsync: Int64 = -1
        var frame: Int?
        var framePts: MediaTime?
        var frameWeight: Float?
        var other: Int?
        var otherPts: MediaTime?
        var otherWeight: Float?
    }
    let name = "mix-0"
    let clock: any VsyncClock = VirtualVsyncClock(refresh: RefreshRate(numerator: 60))
    private(set) var drawn: [Drawn] = []
    private var pending: Drawn?
    private var queued: Int64?

    func draw(_ frames: [ScriptFrame?]) throws {
        let frame = frames.first ?? nil
        pending = Drawn(frame: frame?.index, framePts: frame?.pts)
    }
    func draw(_ frames: [ScriptFrame?], mixes: [FrameMix<ScriptFrame>?]) throws {
        try draw(frames)
        guard let mix = mixes.first ?? nil else { return }
        pending?.frameWeight = mix.frameWeight
        pending?.other = mix.other?.index
        pending?.otherPts = mix.other?.pts
        pending?.otherWeight = mix.otherWeight
    }
    func queue(forVsync vsync: Int64) throws { queued = vsync }
    func waitForEvent(timeout: Double) throws -> OutputEvent {
        guard let vsync = queued else { return .timedOut }
        queued = nil
        if var p = pending {
            p.vsync = vsync
            drawn.append(p)
        }
        return .flipped(vsync: vsync)
    }

    /// What was on screen on vsync `n` (the last picture drawn at or before it).
    func picture(onVsync n: Int64) -> Drawn? { drawn.last { $0.vsync <= n } }
}

@Suite("Transitions: crossfade and fade weights per vsync on a virtual clock")
struct TransitionTests {
    /// Plays `items` (name, frames at 30 fps, transition into it) once through a presenter on a
    /// 60 Hz virtual clock; returns what was drawn.
    func play(_ items: [(String, Int, Transition)], loops: Int? = nil) throws -> (MixRecordingOutput, PresentationStats) {
        let backend = FakeBackend()
        let playerItems = items.map { name, frames, transition in
            let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: 30)), backend: backend)
            item.transition = transition
            return item
        }
        let output = MixRecordingOutput()
        let player: QueuePlayer
        var looper: PlayerLooper?
        if let loops {
            player = QueuePlayer(logger: quiet)
            looper = PlayerLooper(player: player, templateItems: playerItems)
            _ = loops
        } else {
            player = QueuePlayer(items: playerItems, logger: quiet)
        }
        let presenter = try PlayerPresenter(player: player, output: output, logger: quiet)
        player.play()
        let limit = Int64(items.reduce(0) { $0 + $1.1 } * 2 * (loops ?? 1) + 10)
        let stats = try presenter.run(stopWhenEmpty: true) { (output.drawn.last?.vsync ?? 0) < limit }
        looper?.disableLooping()
        return (output, stats)
    }

    static func seconds(_ s: Double) -> MediaTime { MediaTime(seconds: s, preferredTimescale: 90_000) }

    @Test("crossfade 0.5 s at 60 Hz: the incoming item starts on the cut's vsync, the k-th of 30 vsyncs has weight k/30 over the outgoing item's last frame, every vsync drawn, no frame lost")
    func crossfadeWeights() throws {
        let (output, stats) = try play([("a.mp4", 30, .cut), ("b.mp4", 60, Transition(.crossfade, duration: Self.seconds(0.5)))])
        // a: 30 frames at 30 fps = vsyncs 0..59; b starts on vsync 60, as with a cut.
        let first = try #require(output.drawn.first { $0.framePts == .zero && $0.vsync > 0 })
        #expect(first.vsync == 60)
        for k in 1...29 {
            let n = Int64(59 + k)
            let d = try #require(output.drawn.first { $0.vsync == n }, "nothing drawn on vsync \(n)")
            #expect(d.frameWeight == Float(k) / 30, "vsync \(n): weight \(String(describing: d.frameWeight))")
            #expect(d.otherWeight.map { abs($0 - (1 - Float(k) / 30)) < 1e-6 } == true)
            // The outgoing item's last frame (a's frame 29) is the other picture.
            #expect(d.other == 29 && d.otherPts == MediaTime(value: 29, timescale: 30))
            // b's own frame is the one its timeline says: frame j on vsync 60 + 2j.
            #expect(d.frame == Int(n - 60) / 2, "vsync \(n) showed b's frame \(String(describing: d.frame))")
        }
        // Vsync 89 (k = 30): b alone, and no mix after.
        let done = try #require(output.drawn.first { $0.vsync == 89 })
        #expect(done.frameWeight == nil && done.other == nil)
        #expect(!output.drawn.contains { $0.vsync > 89 && $0.frameWeight != nil })
        #expect(stats.presented == 90 && stats.dropped == 0, "\(stats)")
    }

    @Test("fade 0.4 s: a's last 12 vsyncs fade out to the background alone on its last vsync (the middle), b's first 12 fade in; no overlap")
    func fadeReachesTheBackgroundAtItsMiddle() throws {
        let (output, stats) = try play([("a.mp4", 30, .cut), ("b.mp4", 30, Transition(.fade, duration: Self.seconds(0.4)))])
        for n in Int64(48)...71 {
            let d = try #require(output.drawn.first { $0.vsync == n }, "nothing drawn on vsync \(n)")
            #expect(d.other == nil)
            if n < 60 {
                #expect(d.framePts.map { $0 < MediaTime(value: 1, timescale: 1) } == true, "vsync \(n) shows a")
                #expect(d.frameWeight == Float(59 - n) / 12, "vsync \(n): \(String(describing: d.frameWeight))")
            } else {
                #expect(d.frameWeight == (n < 71 ? Float(n - 59) / 12 : nil), "vsync \(n): \(String(describing: d.frameWeight))")
            }
        }
        #expect(output.picture(onVsync: 59)?.frameWeight == 0, "the middle is the background alone")
        #expect(output.picture(onVsync: 47)?.frameWeight == nil)
        #expect(stats.presented == 60 && stats.dropped == 0, "\(stats)")
    }

    @Test("the loop point: a single looping item with a crossfade mixes its start over its own last frame")
    func loopPointCrossfade() throws {
        let (output, _) = try play([("loop.mp4", 30, Transition(.crossfade, duration: Self.seconds(0.25)))], loops: 2)
        // 0.25 s = 15 vsyncs; the first pass starts with nothing before it: no mix.
        #expect(!output.drawn.contains { $0.vsync < 60 && $0.frameWeight != nil })
        for k in 1...14 {
            let d = try #require(output.drawn.first { $0.vsync == Int64(59 + k) })
            #expect(d.frameWeight == Float(k) / 15 && d.other == 29, "vsync \(59 + k)")
        }
    }

    @Test("a crossfade longer than half the incoming item is clamped to half of it")
    func clampedToHalfTheItem() throws {
        let (output, _) = try play([("a.mp4", 30, .cut), ("b.mp4", 12, Transition(.crossfade, duration: Self.seconds(5)))])
        // b lasts 0.4 s = 24 vsyncs: the crossfade lasts 12.
        let mixed = output.drawn.filter { $0.frameWeight != nil }.map(\.vsync)
        #expect(mixed == Array(60...70))
        #expect(output.drawn.first { $0.vsync == 60 }?.frameWeight == Float(1) / 12)
    }

    @Test("cut (the default) draws no mix")
    func cutDrawsNoMix() throws {
        let (output, stats) = try play([("a.mp4", 30, .cut), ("b.mp4", 30, .cut)])
        #expect(!output.drawn.contains { $0.frameWeight != nil })
        #expect(output.drawn.first { $0.vsync == 60 }?.framePts == .zero)
        #expect(stats.presented == 60)
    }
}
