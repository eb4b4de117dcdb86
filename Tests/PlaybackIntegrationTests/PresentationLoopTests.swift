import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
@testable import PlaybackTests

@Suite("The presentation loop (scripted drivers, virtual and real time)")
struct PresentationLoopTests {
    func player(_ backend: FakeBackend, frames: Int, fps: Int32 = 50) -> QueuePlayer {
        let url = backend.add("loop-\(frames)-\(fps).mp4", .init(frames: frames, fps: fps))
        return QueuePlayer(items: [PlayerItem(url: url, backend: backend)], logger: quiet)
    }

    @Test("a frame that is not decoded leaves the player's lock free: the loop waits on the decode thread, not under the lock")
    func waitingForDecodingHoldsNoLock() throws {
        let backend = FakeBackend()
        backend.limitDecoding(to: 5)
        let player = player(backend, frames: 100)
        // A virtual clock waits for decoding (here up to 3 s a vsync).
        let output = ScriptedVirtualOutput()
        let presenter = try PlayerPresenter(player: player, output: output, logger: quiet)
        presenter.decodeWaitLimit = 3
        player.play()
        let stop = LoopStop(), done = DispatchSemaphore(value: 0)
        let loop = UncheckedBox(presenter)
        Thread.detachNewThread {
            _ = try? loop.value.run { !stop.stopped }
            done.signal()
        }
        defer {
            stop.stop()
            backend.limitDecoding(to: 1_000)
            #expect(done.wait(timeout: .now() + 10) == .success, "the loop did not end")
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while player.stats.presented < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(player.stats.presented == 5)
        // The loop now waits for frame 5, which is not decoded. The player answers meanwhile.
        Thread.sleep(forTimeInterval: 0.1)
        var worst = 0.0
        for _ in 0..<20 {
            let t0 = ContinuousClock.now
            _ = player.currentTime()
            _ = player.rate
            _ = player.stats
            worst = max(worst, (ContinuousClock.now - t0).seconds)
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(worst < 0.25, "a call into the player took \(worst) s while the loop waited for decoding")
    }

    @Test("on a real clock a frame that is not decoded does not hold the loop past its vsync: vsyncs go on, the picture stays")
    func realClockDoesNotBlock() throws {
        let backend = FakeBackend()
        backend.limitDecoding(to: 5)
        defer { backend.limitDecoding(to: 1_000) }
        let player = player(backend, frames: 100)
        let driver = RealTimeDriver()
        let presenter = try PlayerPresenter(player: player, output: driver, logger: quiet)
        var beats: [ContinuousClock.Instant] = []
        presenter.onVsync = { _ in beats.append(.now) }
        player.play()
        // 0.8 s after the fifth frame was shown (the fake decoder's thread may start late on a busy
        // machine; a minute at most).
        let start = ContinuousClock.now
        var shownAll: ContinuousClock.Instant?
        _ = try presenter.run {
            if shownAll == nil && player.stats.presented >= 5 { shownAll = .now }
            let now = ContinuousClock.now
            return now - start < .seconds(60) && (shownAll.map { now - $0 < .milliseconds(800) } ?? true)
        }
        #expect(player.stats.presented == 5)
        // 0.8 s at 50 Hz: about 40 vsyncs asked for although 95 frames never came.
        let waited = beats.filter { beat in shownAll.map { beat >= $0 } ?? false }
        #expect(waited.count >= 15, "\(waited.count) vsyncs in the 0.8 s after the fifth frame")
        let gaps = zip(waited, waited.dropFirst()).map { ($1 - $0).seconds }
        #expect((gaps.max() ?? 0) < 0.3, "the loop stood still for \(gaps.max() ?? 0) s")
        #expect(!player.isStalled)   // under the 2 s stall timeout
    }

}
