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

    @Test func anOutputThatShowsEveryPictureFiveVsyncsLateDropsFramesAndKeepsTheClock() throws {
        let backend = FakeBackend()
        // Decoding keeps up (real time); drawing is the bottleneck, as on a slow display.
        let player = try Player(item: slowClip(backend, seconds: 12, honoursFrameDrop: false), logger: quiet)
        let display = try PacedDisplay(player, backend: backend, decodesPerVsync: 0.5, headStart: 3)
        display.drawVsyncs = 5
        player.play()
        display.run(through: 599)
        #expect(abs(player.currentTime().seconds / 10 - 1) < 0.01, "\(player.currentTime().seconds)")
        let stats = player.stats
        // 12 pictures a second of 30 frames: the other 18 are dropped (the old player showed
        // every frame and its timeline ran at 0.4).
        #expect(display.shown.count >= 115 && display.shown.count <= 125, "\(display.shown.count) pictures")
        #expect(stats.dropped >= 160, "\(stats)")
        #expect(display.worstLag(from: 0) < 0.151, "lag \(display.worstLag(from: 0)) s")
        // Presentation dropping frames tells the decoder to skip non-reference frames.
        #expect(backend.frameDropLevels.first == .nonReference, "\(backend.frameDropLevels)")
    }

}
