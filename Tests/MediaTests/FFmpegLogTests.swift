import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport

/// FFmpeg's own messages through the logger: level mapping, the rate limit (on a clock of the
/// test's own), and a real decoder's errors arriving as log records.
@Suite(.serialized) struct FFmpegLogTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func logger(_ level: Logger.Level) -> Logger { Logger(level: level) { [self] line in lines.withLock { $0.append(line) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    final class Clock: @unchecked Sendable {
        var t = 100.0
    }

    // FFmpeg's AV_LOG_* values (libavutil/log.h).
    let panic: Int32 = 0, fatal: Int32 = 8, error: Int32 = 16, warning: Int32 = 24, info: Int32 = 32, verbose: Int32 = 40,
        debug: Int32 = 48, trace: Int32 = 56

    @Test func levelsMapOntoTheLoggers() {
        #expect([panic, fatal, error].map(FFmpegLog.level(ofAVLevel:)) == [.error, .error, .error])
        #expect(FFmpegLog.level(ofAVLevel: warning) == .warning)
        #expect([info, verbose].map(FFmpegLog.level(ofAVLevel:)) == [.debug, .debug])
        #expect([debug, trace].map(FFmpegLog.level(ofAVLevel:)) == [nil, nil])

        let lines = Lines()
        var limiter = FFmpegLogLimiter(logger: lines.logger(.info))
        limiter.receive(avLevel: error, component: "h264", message: "error while decoding MB 3 7, bytestream -5\n")
        limiter.receive(avLevel: warning, component: nil, message: "a warning")
        limiter.receive(avLevel: info, component: "h264", message: "Reinit context to 320x192")  // debug: below info
        limiter.receive(avLevel: error, component: "mov,mp4,m4a,3gp,3g2,mj2", message: "   ")
        #expect(lines.all == [#"level=error msg="ffmpeg: error while decoding MB 3 7, bytestream -5" component=h264"#,
                              #"level=warning msg="ffmpeg: a warning" component=ffmpeg"#])
    }

    @Test func repeatsAreHeldBackAndCounted() {
        let lines = Lines()
        let clock = Clock()
        var limiter = FFmpegLogLimiter(logger: lines.logger(.debug), window: 10, budget: 20, now: { clock.t })
        // A corrupt stream: the same message with other numbers, 100 times in a second.
        for i in 0..<100 {
            limiter.receive(avLevel: error, component: "h264", message: "error while decoding MB \(i % 20) \(i / 20), bytestream \(i)")
            clock.t += 0.01
        }
        #expect(lines.all.count == 1)
        clock.t += 10
        limiter.receive(avLevel: error, component: "h264", message: "error while decoding MB 1 1, bytestream 9")
        #expect(lines.all.count == 2 && lines.all[1].hasSuffix("component=h264 repeated=99"), "\(lines.all)")
        // The same text from another component is another message.
        limiter.receive(avLevel: error, component: "hevc", message: "error while decoding MB 1 1, bytestream 9")
        #expect(lines.all.count == 3)
    }

    @Test func atMostABudgetOfLinesPerWindow() {
        let lines = Lines()
        let clock = Clock()
        var limiter = FFmpegLogLimiter(logger: lines.logger(.debug), window: 10, budget: 20, now: { clock.t })
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
        for a in words { for b in words.prefix(3) { limiter.receive(avLevel: warning, component: "x", message: "\(a) \(b)") } }
        #expect(lines.all.count == 20, "\(lines.all.count)")
        clock.t += 10
        limiter.receive(avLevel: warning, component: "x", message: "after the window")
        #expect(lines.all.count == 21 && lines.all[20].hasSuffix("suppressed=10"), "\(lines.all.last ?? "")")
    }

}
