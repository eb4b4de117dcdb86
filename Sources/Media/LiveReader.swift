import Foundation
import Network
import Playback
import Synchronization

/// A live network source (no duration: RTSP, live HLS, UDP/RTP) as a frame reader that comes
/// back by itself. A read that fails, times out (the stall limit) or ends closes the decoder; the
/// source is reopened with capped, jittered backoff (`LiveSourceHealth`) until it answers, while
/// the player keeps the last picture up. Frames after a reopen go on from where the item's clock is
/// (`resumePoint`): live, not late.
/// `onChange` hears each change: down (why), back once pictures come again, closed when the
/// reader goes while its source is down (its item ended: nobody waits for that source now), and
/// the lag of each frame kept while the item plays (`LiveLatency`: its age out of the decoder,
/// counted from when the open's packets began to come, plus its wait to be shown; frames over
/// its bound, and an open's backlog, are dropped, and counted through `follow`'s `dropped`).
final class LiveReader: FrameReader {
    let uri: String
    /// The largest lag of a frame shown (seconds, `LiveLatency`); infinite: unbounded.
    var lagBound: Double { latency?.bound ?? .infinity }
    private let open: () throws -> DecoderReader
    private var reader: DecoderReader?
    private var health: LiveSourceHealth
    private let onChange: (@Sendable (String, LiveSourceChange) -> Void)?
    /// Set from another thread (`canceller`); holds the canceller of the decoder in use.
    private let stop = LiveStop()
    /// Where the next frame goes on the item's timeline, the outage aside (the end of the last one handed out).
    private var timelineEnd = MediaTime.zero
    private var frameDrop = DecoderFrameDrop.none
    private var discardEndingBy: (@Sendable () -> MediaTime?)?
    private var reportedDown = false
    private var latency: LiveLatency?
    private var clock: (@Sendable () -> MediaTime?)?
    private var dropped: (@Sendable (Int) -> Void)?
    private var reportedLag = false
    private var generator = SystemRandomNumberGenerator()
    /// The stream's hold (`OneReaderStreams`), kept as long as this reader is.
    private let hold: OneReaderStreams.Hold?

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// - Parameter lagBound: the largest wait before a frame is shown (seconds); nil: unbounded.
    init(uri: String, first: DecoderReader, policy: LiveSourceHealth.Policy, lagBound: Double? = nil, holding hold: OneReaderStreams.Hold? = nil,
         onChange: (@Sendable (String, LiveSourceChange) -> Void)?, open: @escaping () throws -> DecoderReader) {
        self.uri = uri
        self.hold = hold
        latency = LiveLatency(bound: lagBound ?? .infinity)
        self.open = open
        self.onChange = onChange
        reader = first
        stop.current.withLock { $0 = first.canceller }
        health = LiveSourceHealth(policy: policy, now: Self.now())
        latency?.opened(at: first.decoder.demuxer.input.probeStarted, firstAt: 0)
    }

    deinit {
        if reportedDown { onChange?(uri, .closedWhileDown) }
        if reportedLag { onChange?(uri, .lag(nil)) }
    }

    func nextFrame() throws -> (any PresentableFrame)? {
        while !stop.cancelled.load(ordering: .relaxed) {
            guard let reader = try currentReader() else { continue }
            let reason: String
            do {
                if let frame = try reader.nextFrame() {
                    health.picture(at: Self.now())
                    if reportedDown {
                        reportedDown = false
                        onChange?(uri, .back)
                    }
                    guard keep(frame, from: reader) else { continue }
                    timelineEnd = frame.pts + frame.duration
                    return frame
                }
                reason = "the stream ended"
            } catch {
                if stop.cancelled.load(ordering: .relaxed) { return nil }
                reason = (error as? MediaError)?.reason ?? "\(error)"
            }
            down(reason)
        }
        return nil
    }

    /// Whether `frame` is handed out (`LiveLatency`); a frame dropped moves the frames after it
    /// earlier on the timeline by what `LiveLatency` pulls in, and is counted.
    private func keep(_ frame: any PresentableFrame, from reader: DecoderReader) -> Bool {
        guard var latency else { return true }
        // The decoder's shift holds the pull-in so far: the frame's time before it is its pts plus that.
        let clockNow = clock?().flatMap { $0.isNumeric ? $0.seconds : nil }
        let pulledBefore = latency.pullIn
        let decision = latency.frame(at: frame.pts.seconds + latency.pullIn, duration: frame.duration.seconds, clock: clockNow,
                                     now: Self.now())
        self.latency = latency
        guard decision == .drop else {
            if let lag = latency.lag, clockNow != nil {
                reportedLag = true
                onChange?(uri, .lag(lag))
            }
            return true
        }
        reader.decoder.timelineShift = reader.decoder.timelineShift
            - MediaTime(seconds: latency.pullIn - pulledBefore, preferredTimescale: 90_000)
        dropped?(1)
        return false
    }

    /// The decoder to read, opened again once the backoff allows; nil when this try failed (or
    /// the wait was cut short by a cancel).
    private func currentReader() throws -> DecoderReader? {
        if let reader { return reader }
        // Waits for the retry in slices, so that a cancel is seen within 50 ms.
        while health.tick(at: Self.now()) != .reopen {
            if stop.cancelled.load(ordering: .relaxed) { return nil }
            Thread.sleep(forTimeInterval: 0.05)
        }
        do {
            let opened = try open()
            let shift = resumePoint()
            opened.decoder.timelineShift = shift
            // The stream's start goes at `shift` (a frame's time there is its pts plus the pull-in).
            let pulledIn = latency?.pullIn ?? 0
            latency?.opened(at: opened.decoder.demuxer.input.probeStarted, firstAt: shift.seconds + pulledIn)
            if frameDrop != .none || discardEndingBy != nil { opened.setFrameDrop(frameDrop, discardingFramesEndingBy: discardEndingBy) }
            stop.current.withLock { $0 = opened.canceller }
            reader = opened
            return opened
        } catch {
            if stop.cancelled.load(ordering: .relaxed) { return nil }
            down((error as? MediaError)?.reason ?? "\(error)")
            return nil
        }
    }

    /// Where a reopened source's frames go on the item's timeline: where the item's clock is when
    /// it runs (the picture held, the clock ran on), else right after the last frame (the player
    /// stalled, paused, or waits for frames: its timeline stopped there too). Without a clock to
    /// follow, as far past the last frame as the source was away.
    private func resumePoint() -> MediaTime {
        guard let clock else { return timelineEnd + MediaTime(seconds: health.timelineGap(at: Self.now()), preferredTimescale: 90_000) }
        guard let now = clock(), now.isNumeric, now > timelineEnd else { return timelineEnd }
        return now
    }

    private func down(_ reason: String) {
        reader = nil
        stop.current.withLock { $0 = nil }
        health.failed(at: Self.now(), reason: reason, random: Double.random(in: 0..<1, using: &generator))
        reportedDown = true
        onChange?(uri, .down(reason))
    }

    func follow(clock: @escaping @Sendable () -> MediaTime?, dropped: @escaping @Sendable (Int) -> Void) {
        self.clock = clock
        self.dropped = dropped
    }

    /// A live source has no positions to go to: the picture is always the live one.
    func seek(to time: MediaTime) throws {}

    var canceller: (@Sendable () -> Void)? {
        { [stop] in
            stop.cancelled.store(true, ordering: .relaxed)
            stop.current.withLock { $0 }?()
        }
    }

    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
        frameDrop = drop
        discardEndingBy = clock
        reader?.setFrameDrop(drop, discardingFramesEndingBy: clock)
    }
}

extension FrameReader {
    /// A live source's lag bound (`LiveReader`); nil: not a live source's reader (for tests).
    package var liveLagBound: Double? { (self as? LiveReader)?.lagBound }
}

/// What a live source's reader reports (`FFmpegBackend.onLiveChange`).
public enum LiveSourceChange: Sendable, Equatable {
    /// No picture now, and why; the reader is reopening it.
    case down(String)
    /// Pictures again.
    case back
    /// The reader went (its item ended or was skipped) while the source was down.
    case closedWhileDown
    /// How far behind its source the last frame kept is shown (seconds, `LiveLatency`: its age
    /// out of the decoder plus its wait); nil: the reader went.
    case lag(Double?)
}

/// A live reader's cancel, shared with the thread that cancels it.
final class LiveStop: Sendable {
    let cancelled = Atomic(false)
    let current = Mutex<(@Sendable () -> Void)?>(nil)
}
