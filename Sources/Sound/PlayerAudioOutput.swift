import Foundation
import Playback
import Synchronization

/// What a player's audio path has done (status, health, tests).
public struct AudioPathStats: Sendable, Equatable {
    /// Frames written to the device.
    public var framesWritten = 0
    /// The device's underruns (it ran out of sound while playing).
    public var underruns = 0
    /// Times the sound was put back in place at once (a seek, an item change that was not
    /// foreseen, an error over `AudioClockSync.realignThreshold`).
    public var realignments = 0
    /// Frames of silence written where an item had no sound (or none decoded in time).
    public var silentFrames = 0
    /// Packets the decoders skipped, and items whose sound failed (they played in silence).
    public var corruptPackets = 0
    public var failedItems = 0
    /// Writes the device refused (a missing or failing device: the picture plays on).
    public var deviceFailures = 0
    /// The last failure, if any.
    public var lastError: String?
    /// The last measured offset (seconds): when a sample is heard minus when its picture is shown.
    public var offset: Double?
    /// The resampling ratio in use.
    public var ratio = 1.0
    public init() {}
}

/// Plays a player's sound with the display as the master clock (mpv's `display-resample`): the
/// pictures keep their vsyncs and the sound is resampled by a small, smoothly varying factor so
/// that the sample of a frame's time is heard when the frame is shown, the device's latency
/// included (`AudioClockSync`).
///
/// The path: a decode thread per item (`AudioFeeder`: the current item's, and the next one's,
/// primed while the current plays) -> gain (volume, mute) -> `AudioConverter` (the device's
/// format, the correction) -> `AudioSink` on the audio thread (`start()`), which alone writes
/// and waits on the device. Items follow each other sample for sample (gapless: the next item's
/// sound is taken up where the last one's ended, and a small difference from its pictures'
/// start is resampled away); an item without sound, a still or sound that fails plays silence
/// for its length. A seek, an item change the path did not foresee, a pause, or an error over
/// 100 ms puts the sound back in place at once (the device's content dropped, sound dropped or
/// silence inserted to the sample). Failures never reach the picture: they are counted
/// (`stats`) and the path goes on.
public final class PlayerAudioOutput: @unchecked Sendable {
    // @unchecked: the writer state below is the audio thread's (or the caller of `pump`'s)
    // alone; what others read is in Mutexes.
    public let player: Player
    public let sink: any AudioSink
    private let converter: any AudioConverter
    private let clock: any VsyncClock
    private let logger: Logger
    private let shared = Mutex(AudioPathStats())
    private let itemVolumes = Mutex<(@Sendable (PlayerItem) -> Float)?>(nil)
    private let extraDelay = Mutex(0.0)
    private let stopping = Latch<Void>()
    private let finished = Latch<Void>()
    private let running = Atomic(false)

    /// One item's sound on the timeline: timeline time of item time `t` is
    /// `timelineStart + (t - itemStart)`.
    final class Segment {
        let item: PlayerItem
        let feeder: AudioFeeder
        var timelineStart: MediaTime
        var itemStart: MediaTime
        /// True once the player's run of the item is known (the mapping is its); before that it
        /// follows on from the previous item's sound.
        var confirmed = false
        /// Item time of the next sample taken.
        var next: MediaTime
        /// Silence from `next` on (no sound, failed, or ended before its pictures).
        var silent = false
        /// True once sound was decoded: silence after it only where the pictures go on noticeably
        /// longer (`paddingTolerance`).
        var hadSound = false
        /// True once a block of this segment's sound was taken before the current one.
        var hadSoundBefore = false
        /// The item's start after its own end: a seek back to zero at the end (the guide's loop)
        /// is foreseen, as the player primes the start's pictures for it.
        let loopsBack: Bool
        init(item: PlayerItem, from: MediaTime, timelineStart: MediaTime, itemStart: MediaTime, loopsBack: Bool = false, logger: Logger) {
            self.item = item
            self.loopsBack = loopsBack
            feeder = AudioFeeder(item: item, from: from)
            self.timelineStart = timelineStart
            self.itemStart = itemStart
            next = from
            feeder.start(logger: logger)
        }
        func timeline(_ t: MediaTime) -> MediaTime { timelineStart + (t - itemStart) }
    }

    /// Sound that ends less than this (seconds) before its item's end is followed by the next
    /// item's at once; a larger gap is filled with silence, so the next item starts with its pictures.
    static let paddingTolerance = 0.02
    /// A gap in an item's sound larger than this (seconds) is filled with silence; one beyond
    /// `realignLimit` is left to the realignment.
    static let gapTolerance = 0.002
    /// How far a measure in the first `settleTime` seconds the device plays after an alignment
    /// may be off before the sound is put in place again (a little above ALSA's pointer steps),
    /// and how many times it may be put in place so. ALSA's delay reads 0 until the device starts
    /// at its start threshold, and just after the start it can read tens of milliseconds short
    /// (seen with snd-aloop in the guest: 3.4 ms read where the sound was 20 ms later than that).
    static let settleTolerance = 0.005
    static let settleTime = 0.5
    static let settleTries = 3
    static let realignLimit = 1.0

    // Writer state.
    private var sync = AudioClockSync()
    private var current: Segment?
    private var upcoming: Segment?
    private var matchedRun: Int?
    private var placement = AudioPlacement(tolerance: settleTolerance, settleTime: settleTime, tries: settleTries)
    private var active = false
    private var held: PCMBuffer?
    private var lastGain: Float?
    private var silenceFormat: PCMFormat
    private var mode = AudioWriterMode(grace: loopGrace, backoff: 0.5)
    private let started = ContinuousClock.now
    private var seenUnderruns = 0
    private var seenTimelineShifts = 0

    /// - Parameters:
    ///   - clock: the output's clock, whose vsyncs show the player's pictures: the master.
    public init(player: Player, sink: any AudioSink, converter: any AudioConverter, clock: any VsyncClock, logger: Logger) {
        self.player = player
        self.sink = sink
        self.converter = converter
        self.clock = clock
        self.logger = logger.with(["audio": sink.name])
        silenceFormat = PCMFormat(sampleRate: sink.format.sampleRate, channels: sink.format.channels,
                                  channelMask: sink.format.channelMask, encoding: .float32)!
    }

    deinit {
        current?.feeder.stop()
        upcoming?.feeder.stop()
    }

    public var stats: AudioPathStats { shared.withLock { $0 } }

    /// Seconds the sound plays later (positive) or earlier than its pictures, on top of the
    /// device's latency (mpv's `audio-delay`: a receiver's own latency ALSA does not know).
    public var delay: Double {
        get { extraDelay.withLock { $0 } }
        set { if newValue.isFinite { extraDelay.withLock { $0 = min(max(newValue, -10), 10) } } }
    }

    /// A gain per item (0...1, Marquee's per-item `volume`) on top of the player's volume.
    public func setItemVolume(_ volume: (@Sendable (PlayerItem) -> Float)?) {
        itemVolumes.withLock { $0 = volume }
    }

    /// Starts the audio thread; it runs `pump` until `stop()`.
    public func start() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        startThread(named: "marquee-audio") { [self] in
            defer { _ = finished.set(()) }
            while !stopping.isSet {
                if !pump(decodeWait: nil) { _ = stopping.wait(timeout: 0.005) }
            }
            current?.feeder.stop()
            upcoming?.feeder.stop()
            current = nil
            upcoming = nil
            if active { try? sink.drop() }
        }
    }

    /// Stops the audio thread, waiting up to `timeout` seconds for it to end (its device
    /// write waits at most its own limit); true when it ended.
    @discardableResult
    public func stop(timeout: Double = 3) -> Bool {
        _ = stopping.set(())
        guard running.load(ordering: .relaxed) else { return true }
        return finished.wait(timeout: timeout) != nil
    }

    // MARK: The writer

    /// One step of the audio thread: follows the player, takes the next block of sound (waiting up
    /// to `decodeWait` seconds for it to be decoded; nil: as long as the device's buffer lasts,
    /// then a little silence keeps it from running dry), corrects it and writes it. Returns false
    /// when there was nothing to write (paused, no item, decoding behind). For callers that
    /// drive time by hand (tests on a virtual clock); `start()` runs it on a thread.
    @discardableResult
    public func pump(decodeWait: Double? = 5) -> Bool {
        guard mode.mayWrite(now: secondsSinceStart) else { return false }
        do {
            return try step(decodeWait: decodeWait)
        } catch {
            // The device (or the conversion) failed: the picture plays on; the sound tries again
            // in half a second, put back in place.
            shared.withLock {
                $0.deviceFailures += 1
                $0.lastError = "\(error)"
            }
            if stats.deviceFailures == 1 || stats.deviceFailures % 100 == 0 {
                logger.error("audio output failed; the picture plays on", ["error": "\(error)", "failures": "\(stats.deviceFailures)"])
            }
            reset(dropDevice: true)
            mode.failed(now: secondsSinceStart)
            return false
        }
    }

    private var secondsSinceStart: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }

    private func step(decodeWait: Double?) throws -> Bool {
        let view = player.audioView()
        // At an end that waits for its handlers (a seek back to zero may come), sound already in
        // place plays on: the item's start follows its end as its pictures will (a loop), and the
        // device is dropped only once the end turns out to stay (the seam closes without a seek).
        // A handler that seeks a little late (a busy machine: the seam closed first) still finds
        // the start's sound going on. Bounded by sound written (`loopGrace` of it after the end,
        // seam or not): when no seek comes, at most that much of the start is heard.
        mode.observe(playing: view.playing, ended: view.ended, loopPrimed: current?.loopsBack == true || upcoming?.loopsBack == true)
        let coasting = !view.playing && mode.isCoasting && active && placement.isPlaced && current != nil
        guard view.playing || coasting, let item = view.item, let vsync = view.lastVsync else {
            if active || current != nil { reset(dropDevice: true) }
            return false
        }
        // Where the picture timeline is now: the position of the vsync asked for last, less the
        // time until it is shown (a virtual clock: it is now).
        let untilVsync = clock.timeUntilVsync(vsync)?.seconds ?? 0
        let now = view.position.seconds - untilVsync * view.rate

        if !coasting && view.run != matchedRun {
            if let seg = current, !seg.confirmed, seg.item === item, !seg.loopsBack || isLoop(view, to: seg) {
                confirm(seg, view)
            } else if let seg = upcoming, seg.item === item, current?.item !== item {
                confirm(seg, view)
            } else if let seg = upcoming, seg.loopsBack, seg.item === item, isLoop(view, to: seg) {
                // The seek back came before the end's sound was all taken (sound longer than
                // its pictures): the start follows at once.
                confirm(seg, view)
                advance()
            } else {
                restart(item, view, now: now)
            }
            matchedRun = view.run
        }
        guard let seg = current else { return false }
        primeUpcoming(after: seg, view)

        // The next block: the held one, decoded sound, or silence.
        var block: PCMBuffer
        if let h = held {
            block = h
            held = nil
        } else if seg.silent {
            guard let silence = silenceBlock(seg) else {
                advance()
                return true
            }
            block = silence
        } else {
            let wait = try decodeWait ?? (active ? min(0.05, max(0.001, sink.delay() - 0.015)) : 0.05)
            switch seg.feeder.queue.pop(timeout: wait) {
            case .element(.samples(let buffer)):
                block = buffer
                seg.hadSound = true
                silenceFormat = buffer.format
                // A gap in the file's sound (a lost packet) stays a gap: silence in its place, so
                // that the sound after it stays with its pictures; an overlap is dropped.
                let gap = (buffer.pts - seg.next).seconds
                if placement.isPlaced, seg.hadSoundBefore, gap.isFinite, abs(gap) > Self.gapTolerance, abs(gap) < Self.realignLimit {
                    let frames = Int((abs(gap) * Double(buffer.format.sampleRate)).rounded())
                    if gap > 0 {
                        shared.withLock { $0.silentFrames += frames }
                        try write(PCMBuffer.silence(buffer.format, frames: frames, pts: seg.next), gainFor: seg.item)
                    } else {
                        block = buffer.dropping(frames)
                        if block.frames == 0 { return true }
                    }
                }
                seg.hadSoundBefore = true
            case .element(.noAudio):
                seg.silent = true
                return true
            case .element(.end(let failure, let corrupt)):
                shared.withLock {
                    $0.corruptPackets += corrupt
                    if let failure {
                        $0.failedItems += 1
                        $0.lastError = failure
                    }
                }
                seg.silent = true  // silence up to the item's end, if its pictures go on
                return true
            case .timedOut, .closed:
                // Decoding is behind: keep the device from running dry with a little silence.
                // The silence takes the place of sound due meanwhile, as a gap would: the next
                // block is put back in place at once (what is late of it dropped), not played
                // 10 ms late and resampled back over seconds.
                guard decodeWait == nil, active, try sink.delay() < 0.015 else { return false }
                let frames = silenceFormat.sampleRate / 100
                shared.withLock { $0.silentFrames += frames }
                try write(PCMBuffer.silence(silenceFormat, frames: frames, pts: .zero), gainFor: item)
                placement.lose()
                return true
            }
        }

        // The device ran dry since the last block (the thread was held up): what it plays next is
        // late by that time, and there is a gap anyway, so it is put back in place at once
        // rather than resampled away over seconds.
        // The timeline moved under the sound (the picture that started it was shown late): the
        // sound is put back in place at once, not resampled over seconds.
        if view.timelineShifts != seenTimelineShifts {
            seenTimelineShifts = view.timelineShifts
            if placement.lose() { shared.withLock { $0.realignments += 1 } }
        }
        let underruns = sink.underruns
        if underruns > seenUnderruns {
            seenUnderruns = underruns
            if placement.lose() { shared.withLock { $0.realignments += 1 } }
        }
        let shift = extraDelay.withLock { $0 }
        let sampleTime = seg.timeline(block.pts).seconds + shift
        let delay = try sink.delay()
        if coasting {
            // The timeline stands at the end while the handlers decide: no measure to follow.
            try write(block, gainFor: seg.item)
            seg.next = block.end
            mode.wrote(seconds: block.format.duration(frames: block.frames).seconds)
            return true
        }
        if !placement.isPlaced {
            // Put the sound in place to the sample: drop what is late, or wait with silence.
            let error = now + delay - sampleTime
            let rate = block.format.sampleRate
            if error > 0 {
                let late = wholeFrames(error, rate: rate, atMost: block.frames)
                if late >= block.frames {
                    seg.next = block.end
                    return true
                }
                block = block.dropping(late)
            } else if error < 0 {
                let early = wholeFrames(-error, rate: rate, atMost: rate * 3600)
                let chunk = min(early, block.format.sampleRate / 20)
                if chunk > 0 {
                    try write(PCMBuffer.silence(block.format, frames: chunk, pts: .zero), gainFor: seg.item)
                    if chunk < early {
                        held = block
                        return true
                    }
                }
            }
            placement.didPlace()
            sync.reset()
            _ = sync.update(timelineNow: now, deviceDelay: try sink.delay(), sampleTime: seg.timeline(block.pts).seconds + shift)
            logger.debug("audio aligned", ["error": error.formatted(decimals: 4), "delay": delay.formatted(decimals: 4),
                                           "item": "\(seg.item.traceIndex)"])
        } else {
            let error = now + delay - sampleTime
            if placement.check(now: now, error: error, delay: delay) == .placeAgain {
                // Put in place within the stream (the device keeps playing): drop what is late,
                // or wait with silence.
                logger.debug("audio put in place again", ["error": error.formatted(decimals: 4), "delay": delay.formatted(decimals: 4),
                                                          "item": "\(seg.item.traceIndex)"])
                held = block
                return true
            }
            switch sync.update(timelineNow: now, deviceDelay: delay, sampleTime: sampleTime) {
            case .realign(let seconds):
                logger.info("audio realigned", ["error": seconds.formatted(decimals: 3), "item": "\(seg.item.traceIndex)"])
                shared.withLock { $0.realignments += 1 }
                try sink.drop()
                placement.lose()
                held = block
                return true
            case .resample(let ratio):
                try converter.setRatio(ratio)
            }
        }
        shared.withLock {
            $0.offset = sync.error
            $0.ratio = sync.ratio
        }
        try write(block, gainFor: seg.item)
        seg.next = block.end
        return true
    }

    /// Converts and writes a block at the current gain (ramped from the last one).
    private func write(_ block: PCMBuffer, gainFor item: PlayerItem) throws {
        let itemGain = itemVolumes.withLock { $0 }.map { $0(item) } ?? 1
        let gain = player.audioGain * (itemGain.isFinite ? min(max(itemGain, 0), 1) : 1)
        let scaled = block.scaled(from: lastGain ?? gain, to: gain)
        lastGain = gain
        let out = try converter.convert(scaled)
        if out.frames > 0 { try sink.write(out) }
        active = true
        let underruns = sink.underruns
        shared.withLock {
            $0.framesWritten += out.frames
            $0.underruns = underruns
        }
    }

    /// The player's run is the one this segment's sound was started for: its mapping is the run's.
    private func confirm(_ seg: Segment, _ view: Player.AudioView) {
        seg.timelineStart = view.runStart
        seg.itemStart = view.runOrigin
        seg.confirmed = true
    }

    /// Starts the sound afresh where the picture is now (a seek, a start, an unforeseen change).
    private func restart(_ item: PlayerItem, _ view: Player.AudioView, now: Double) {
        reset(dropDevice: active)
        let elapsed = now - view.runStart.seconds
        let from = view.runOrigin + MediaTime(seconds: max(0, elapsed.isFinite ? elapsed : 0), preferredTimescale: 48_000)
        let seg = Segment(item: item, from: from, timelineStart: view.runStart, itemStart: view.runOrigin, logger: logger)
        seg.confirmed = true
        current = seg
        if stats.framesWritten > 0 { shared.withLock { $0.realignments += 1 } }
    }

    /// Forgets the sound in flight: the next step starts afresh.
    private func reset(dropDevice: Bool) {
        current?.feeder.stop()
        upcoming?.feeder.stop()
        current = nil
        upcoming = nil
        held = nil
        matchedRun = nil
        placement.reset()
        sync.reset()
        if dropDevice { try? sink.drop() }
        active = false
    }

    /// A new run of `seg`'s item is the loop `seg` foresaw: it starts at zero, where the
    /// previous sound ends (within `loopTolerance` on the timeline; a seek to zero made earlier
    /// in the item is not a loop).
    private func isLoop(_ view: Player.AudioView, to seg: Segment) -> Bool {
        guard view.runOrigin == .zero, let previous = current, previous !== seg || !seg.confirmed else { return false }
        let end: Double
        if previous === seg {
            end = seg.timelineStart.seconds  // it follows on from where the last sound ended
        } else {
            let fpet = previous.item.forwardPlaybackEndTime
            let length = fpet.isNumeric ? fpet : previous.item.duration
            guard length.isNumeric else { return false }
            end = previous.timeline(length).seconds
        }
        let gap = view.runStart.seconds - end
        return gap.isFinite && abs(gap) < Self.loopTolerance
    }

    /// How far (seconds) a seek back to zero may start from where the item's sound ended and
    /// still be taken for the loop the path foresaw (a seek that came up to `loopGrace` late).
    static let loopTolerance = 0.1

    /// How much sound (seconds) after the item's end the primed start plays on waiting for a
    /// seek back (at the seam, or a little after it on a busy machine); at most this much of it
    /// is heard when none comes.
    static let loopGrace = 0.1

    /// The item after `seg`'s on the player's queue gets its feeder now, so that its sound is
    /// decoded before it is due; the item's own start when the player primed it for a seek back
    /// to zero at the end (the guide's loop).
    private func primeUpcoming(after seg: Segment, _ view: Player.AudioView) {
        let next: PlayerItem?
        if seg.item === view.item {
            next = view.next
            if next == nil, view.startPrimed, seg.confirmed {
                if let up = upcoming, up.item === seg.item, up.loopsBack { return }
                upcoming?.feeder.stop()
                upcoming = Segment(item: seg.item, from: .zero, timelineStart: .zero, itemStart: .zero, loopsBack: true, logger: logger)
                return
            }
            // At the seam the seek back takes the primed pictures: the primed sound stays for it.
            if next == nil, let up = upcoming, up.loopsBack, !view.playing { return }
        } else if let up = upcoming, up.item === view.item {
            // The pictures are in the next item already and the sound is behind them (a writer
            // held up): the primed sound of the pictures' item follows this one's end.
            return
        } else {
            next = nil  // the sound is ahead in the next item already: primed when it is current
        }
        if let up = upcoming, up.item === next { return }
        upcoming?.feeder.stop()
        upcoming = nil
        guard let next else { return }
        let from = view.nextStart
        upcoming = Segment(item: next, from: from, timelineStart: .zero, itemStart: from, logger: logger)
    }

    /// The current segment's sound has ended: the next item's follows on, sample for sample.
    private func advance() {
        guard let seg = current else { return }
        seg.feeder.stop()
        current = nil
        guard let up = upcoming else { return }
        upcoming = nil
        if !up.confirmed {
            up.timelineStart = seg.timeline(seg.next)
            up.itemStart = up.next
        }
        current = up
    }

    /// 10 ms of silence from `seg.next`, or nil once the item's end is reached (its forward end
    /// time or duration; an item whose length is unknown is silent until the player moves on).
    private func silenceBlock(_ seg: Segment) -> PCMBuffer? {
        let fpet = seg.item.forwardPlaybackEndTime
        let duration = seg.item.duration
        let end: MediaTime? = fpet.isNumeric ? fpet : (duration.isNumeric ? duration : nil)
        let rate = silenceFormat.sampleRate
        var frames = rate / 100
        if let end {
            let left = (end - seg.next).seconds
            guard left.isFinite, left * Double(rate) >= 1 else { return nil }
            // Sound that ends within a few ms of its pictures is followed at once by the next
            // item's (a loop authored to be seamless stays sample-continuous).
            if seg.hadSound && left < Self.paddingTolerance { return nil }
            frames = wholeFrames(left, rate: rate, atMost: frames)
        }
        shared.withLock { $0.silentFrames += frames }
        return PCMBuffer.silence(silenceFormat, frames: frames, pts: seg.next)
    }
}
