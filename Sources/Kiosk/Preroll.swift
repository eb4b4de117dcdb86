import Foundation
import Playback

/// A session's preroll: raised once a reader of it has handed out its first `frames` frames, or
/// reached its end, or a file failed. Presentation starts when every session an output shows has
/// its first frames, or after `limit` seconds (the background shows until a picture comes).
final class Preroll: Sendable {
    /// How many frames the first reader hands out before presentation starts: the first picture
    /// and the ones after it are ready when their vsyncs come.
    static let frames = 3
    /// How long presentation waits for them (seconds); then it starts anyway.
    static let limit = 2.0
    private let ready = Latch<Bool>()

    init() {}

    /// The first frames are there (or none will come).
    func raise() { ready.set(true) }

    /// Waits until every one of `prerolls` is raised, `limit` seconds at most in all; says so in
    /// the log (for `output`) when they were not.
    static func wait(for prerolls: [Preroll], output: String, logger: Logger, limit: Double = Preroll.limit) {
        let deadline = ContinuousClock.now + .milliseconds(Int(limit * 1000))
        for preroll in prerolls where preroll.ready.wait(timeout: max(0, (deadline - ContinuousClock.now).seconds)) == nil {
            logger.info("no first frames within the preroll limit; presenting anyway",
                        ["limit_s": limit.formatted(decimals: 1), "output": output])
            break
        }
    }
}
