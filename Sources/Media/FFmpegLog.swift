import CFFmpeg
import CShim
import Foundation
import Playback
import Synchronization

/// FFmpeg's own log messages, through Marquee's logger instead of raw on standard error.
///
/// `route(to:)` installs one callback for the process (`av_log_set_callback`, through CShim,
/// which formats each message with `av_log_format_line2` and hands over whole lines). Each line
/// becomes a log record at the mapped level, with `component` (the FFmpeg context that logged,
/// e.g. `h264`, `mov,mp4,m4a,3gp,3g2,mj2`) as a field:
///
/// | FFmpeg | logger |
/// |---|---|
/// | `AV_LOG_PANIC`, `AV_LOG_FATAL`, `AV_LOG_ERROR` | error |
/// | `AV_LOG_WARNING` | warning |
/// | `AV_LOG_INFO`, `AV_LOG_VERBOSE` | debug |
/// | `AV_LOG_DEBUG`, `AV_LOG_TRACE` | not asked for (`av_log_set_level` stops them in FFmpeg) |
///
/// What FFmpeg logs while a hardware decoder is tried (`CodecSession(hardware:)`: "Cannot load
/// libcuda.so.1", "Could not find a valid device") is debug: Marquee's own `hardware decoding not
/// in use` line says what failed, once.
///
/// Repeats are limited (`FFmpegLogLimiter`): the same message (numbers aside: "error while decoding
/// MB 12 7" and "MB 3 9" are one) at most once per 10 s, with the count of those held back on its
/// next line (`repeated=N`), and at most 20 FFmpeg lines per 10 s in all (`suppressed=N` on the
/// next one that passes). A corrupt stream then costs a few lines, not thousands.
public enum FFmpegLog {
    private static let state = Mutex<FFmpegLogLimiter?>(nil)

    /// Routes FFmpeg's messages to `logger` (replacing any earlier route), asking FFmpeg for no
    /// more than the logger shows.
    public static func route(to logger: Logger) {
        state.withLock { $0 = FFmpegLogLimiter(logger: logger) }
        av_log_set_level(avLevel(showing: logger.level))
        mq_av_log_route { level, component, line in
            guard let line else { return }
            let text = String(cString: line)
            let name = component.map { String(cString: $0) }
            FFmpegLog.state.withLock { $0?.receive(avLevel: level, component: name, message: text) }
        }
    }

    /// FFmpeg's default again: its messages on standard error, at `AV_LOG_INFO`.
    public static func routeToStandardError() {
        mq_av_log_route(nil)
        state.withLock { $0 = nil }
        av_log_set_level(AV_LOG_INFO)
    }

    /// From now on what FFmpeg logs on this thread counts as `AV_LOG_VERBOSE` (debug) at most:
    /// while a hardware decoder is tried, whose failure Marquee reports itself. Returns what to
    /// give `restoreThisThread` afterwards.
    static func demoteThisThread() -> Int32 { mq_av_log_demote(AV_LOG_VERBOSE) }

    static func restoreThisThread(_ previous: Int32) { _ = mq_av_log_demote(previous) }

    /// The logger level of an FFmpeg message level (nil: not logged).
    public static func level(ofAVLevel level: Int32) -> Logger.Level? {
        switch level {
        case ...AV_LOG_ERROR: .error
        case ...AV_LOG_WARNING: .warning
        case ...AV_LOG_VERBOSE: .debug
        default: nil
        }
    }

    /// The most verbose FFmpeg level whose messages a logger at `level` shows.
    static func avLevel(showing level: Logger.Level) -> Int32 {
        switch level {
        case .debug: AV_LOG_VERBOSE
        case .info, .warning: AV_LOG_WARNING
        case .error: AV_LOG_ERROR
        }
    }
}

/// The rate limit of FFmpeg's lines (see `FFmpegLog`), on a clock of its own so that tests can
/// drive it. Not thread-safe by itself: `FFmpegLog` calls it under its lock.
public struct FFmpegLogLimiter {
    public let logger: Logger
    /// Seconds within which the same message is logged once.
    public let window: Double
    /// Lines in all per window.
    public let budget: Int
    private let now: () -> Double
    /// Per message (digits as `#`): when it was last logged and how many were held back since.
    private var seen: [String: (at: Double, held: Int)] = [:]
    private var windowStart = -Double.infinity
    private var linesInWindow = 0
    private var suppressed = 0

    public init(logger: Logger, window: Double = 10, budget: Int = 20,
                now: @escaping () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.logger = logger
        self.window = window
        self.budget = budget
        self.now = now
    }

    public mutating func receive(avLevel: Int32, component: String?, message: String) {
        guard let level = FFmpegLog.level(ofAVLevel: avLevel), level >= logger.level else { return }
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        let t = now()
        var key = (component ?? "") + ":"
        for character in text where !(character.isNumber && key.last == "#") { key.append(character.isNumber ? "#" : character) }
        if let last = seen[key], t - last.at < window {
            seen[key] = (last.at, last.held + 1)
            return
        }
        if t - windowStart >= window {
            windowStart = t
            linesInWindow = 0
        }
        guard linesInWindow < budget else {
            suppressed += 1
            return
        }
        linesInWindow += 1
        if seen.count >= 1024 { seen = seen.filter { t - $0.value.at < window } }
        let held = seen[key]?.held ?? 0
        seen[key] = (t, 0)
        var fields: [(String, String)] = [("component", component ?? "ffmpeg")]
        if held > 0 { fields.append(("repeated", "\(held)")) }
        if suppressed > 0 { fields.append(("suppressed", "\(suppressed)")) }
        suppressed = 0
        logger.log(level, "ffmpeg: " + text, fields: fields)
    }
}
