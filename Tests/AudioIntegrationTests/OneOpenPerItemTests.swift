import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport
@testable import AudioTests

/// An item opens its file once (`Media.Demuxer`): its asset's probe, its preroll, the hand-over to
/// its own decoder, its sound and the passes of a loop all read the one opened file.
@Suite struct OneOpenPerItemTests {
    /// A copy of `clip` at a path of its own, so that the count is this test's alone.
    static func copy(_ clip: String, _ name: String) throws -> String {
        let path = TestMedia.folder + "/one-open-\(name)-\(UUID().uuidString).\(URL(fileURLWithPath: clip).pathExtension)"
        try FileManager.default.copyItem(atPath: clip, toPath: path)
        return path
    }

    /// Two items with pictures and sound in a queue: the second is prerolled while the first
    /// plays and handed over at its end; at the second's end the guide's loop (`actionAtItemEnd`
    /// `.none` and a seek to zero) goes back to its primed start three times. Each file is opened once, and the tone runs on
    /// across every seam (one demuxer feeding both decoders keeps gapless sound).
    @Test(arguments: [false, true])
    func eachItemOpensItsFileOnce(aac: Bool) throws {
        let (opens, loops) = try Self.play(aac: aac, backend: FFmpegBackend())
        #expect(loops >= 3)
        #expect(opens.0 == 1, "the first item opened its file \(opens.0) times")
        #expect(opens.1 == 1, "the looped item opened its file \(opens.1) times")
    }

    /// The same through a backend that shares nothing (each reader its own file, as before one
    /// demuxer per item): the count sees every open.
    @Test func aBackendWithoutASourceOpensForEveryReader() throws {
        let (opens, loops) = try Self.play(aac: true, backend: PerCallBackend())
        #expect(loops >= 3)
        #expect(opens.0 >= 3 && opens.1 >= 6, "opens \(opens)")
    }

    struct PerCallBackend: MediaBackend {
        let inner = FFmpegBackend()
        func probe(_ url: URL) throws -> AssetDescription { try inner.probe(url) }
        func openReader(_ url: URL) throws -> any FrameReader { try inner.openReader(url) }
        func openPrerollReader(_ url: URL) throws -> any FrameReader { try inner.openPrerollReader(url) }
        func openAudioReader(_ url: URL) throws -> (any AudioReader)? { try inner.openAudioReader(url) }
    }

    /// Plays the scenario above; the opens of each file and the loops made.
    static func play(aac: Bool, backend: any MediaBackend) throws -> (opens: (Int, Int), loops: Int) {
        let first = try Self.copy(try AVClips.tone(aac: aac), "first")
        let second = try Self.copy(try AVClips.tone(aac: aac), "second")
        let looped = item(second, backend: backend)
        let player = QueuePlayer(items: [item(first, backend: backend), looped])
        let ends = Atomic(0)
        player.consumeEvents(onThread: "test-end-handler") { event in
            guard case .didPlayToEndTime = event.event else { return }
            // The queue has advanced to the looped item: it stays at its end from now on.
            guard event.item === looped else { return try! player.setActionAtItemEnd(.none) }
            ends.add(1, ordering: .relaxed)
            player.seek(to: .zero) { _ in }
        }
        var step = try Lockstep(player: player)
        player.play()
        try step.run(vsyncs: 0...(5 * 60 + 30))
        let left = step.left
        let stats = step.audio.stats
        let opens = (FileOpens.of(first), FileOpens.of(second))
        let worst = sineBreak(left, frequency: 1000, rate: 48_000, from: 4800, to: 5 * 48_000)
        print("\(type(of: backend)) (\(aac ? "AAC" : "FLAC")): opens \(opens), \(ends.load(ordering: .relaxed)) loops, "
              + "\(left.count) frames, worst break \(worst.value) at \(worst.at); \(stats)")
        #expect(left.count >= 5 * 48_000)
        #expect(worst.value < (aac ? breakLimit : 0.002), "break of \(worst.value) at frame \(worst.at)")
        #expect(stats.silentFrames == 0 && stats.realignments == 0, "\(stats)")
        return (opens, ends.load(ordering: .relaxed))
    }
}
