import Playback
/// Keeps sound on the picture's clock by resampling it (the display clock is the master, as
/// mpv's `display-resample`): the pictures stay vsync-exact and the audio is played a little
/// faster or slower, by a smoothly varying factor, so that each sample is heard when the
/// picture timeline reaches its time.
///
/// Each time a block of samples is written to the device, the writer tells it where the
/// picture timeline is now, how long the device will take to play what it already holds (ALSA's
/// delay: the output latency) and the timeline time of the block's first sample. The sample is
/// heard at `now + delay`; the difference from its own time is the error. A small error is
/// corrected by resampling: the filtered error drives a proportional-integral controller whose
/// output (the resampling ratio) is bounded (`maxCorrection`, 0.5 %) and changes at most
/// `maxSlew` per second, so the pitch never jumps; it brakes in time so that a correction ends
/// on zero error rather than past it. An error larger than `realignThreshold` (a
/// stall, a wrong start) is not resampled away: `update` asks the writer to drop or insert that
/// much audio at once. A seek or an item change calls `reset()` and re-aligns the same way.
///
/// Pure arithmetic on the times it is given: tested against a virtual clock.
public struct AudioClockSync: Sendable {
    /// What the writer does with the next block.
    public enum Correction: Sendable, Equatable {
        /// Resample by `ratio`: output frames per input frame (above 1: the sound plays slower,
        /// for sound that runs early).
        case resample(ratio: Double)
        /// The error is too large to resample away: drop this much of the sound (positive: the
        /// sound is late) or insert this much silence (negative: the sound is early), in seconds,
        /// then play at the nominal rate.
        case realign(seconds: Double)
    }

    /// The largest resampling correction (0.005: ±0.5 %, inaudible for speech and music).
    public var maxCorrection = 0.005
    /// The fastest the ratio may change, per second.
    public var maxSlew = 0.002
    /// An error beyond this (seconds) is corrected by dropping or inserting audio at once.
    public var realignThreshold = 0.1
    /// Proportional gain (per second): 0.5 corrects a 10 ms error at the full 0.5 %.
    public var proportionalGain = 0.5
    /// Integral gain (per second squared): takes up a steady drift between the clocks.
    public var integralGain = 0.06
    /// Time constant of the error's low-pass filter (seconds): ALSA's delay moves in steps of
    /// its pointer's granularity, the filter takes the jitter out before it reaches the pitch.
    public var filterTime = 0.5
    /// The integral learns only while the filtered error is within this (seconds): wide enough
    /// for the proportional part's share of the largest drift, narrow enough that a large
    /// error does not wind it up.
    public var integrateWithin = 0.01
    /// The share of the braking distance the proportional part may use (below 1: the ratio's
    /// steps are discrete, and the error is measured with jitter).
    public var brakeMargin = 0.8

    /// The ratio in use now.
    public private(set) var ratio = 1.0
    /// The last measured error (seconds; positive: the sound is late) and its filtered value.
    public private(set) var error = 0.0
    public private(set) var filteredError = 0.0
    /// Realignments asked for so far.
    public private(set) var realignments = 0

    private var integral = 0.0
    private var lastUpdate: Double?

    public init() {}

    /// Forgets the past (after a seek, an item change, a device reopened): the next update
    /// measures afresh and realigns when it is off by more than `realignThreshold`.
    public mutating func reset() {
        ratio = 1
        integral = 0
        filteredError = 0
        lastUpdate = nil
    }

    /// The correction for the block about to be written.
    /// - Parameters:
    ///   - timelineNow: where the picture timeline is now (seconds), from the presentation clock.
    ///   - deviceDelay: seconds of sound the device holds before the block is heard (ALSA delay).
    ///   - sampleTime: the timeline time (seconds) of the block's first sample.
    /// Values that are not finite, or a negative delay, change nothing (the current ratio stays).
    public mutating func update(timelineNow: Double, deviceDelay: Double, sampleTime: Double) -> Correction {
        guard timelineNow.isFinite, deviceDelay.isFinite, deviceDelay >= 0, sampleTime.isFinite else {
            return .resample(ratio: ratio)
        }
        let measured = timelineNow + deviceDelay - sampleTime
        error = measured
        guard abs(measured) <= realignThreshold else {
            realignments += 1
            reset()
            lastUpdate = timelineNow
            return .realign(seconds: measured)
        }
        guard let last = lastUpdate else {
            filteredError = measured
            lastUpdate = timelineNow
            return .resample(ratio: ratio)
        }
        // Time between updates on the picture's clock. Several blocks written at one moment
        // move nothing; a clock that went back waits for it to pass the last update; a long
        // pause counts as a tenth of a second.
        let elapsed = min(timelineNow - last, 0.1)
        guard elapsed > 0 else { return .resample(ratio: ratio) }
        lastUpdate = timelineNow
        // The filter predicts what the ratio in use does to the error (the correction beyond
        // the drift's moves it by that much a second), so that its lag never hides a correction
        // that has already worked: a lagging error kept the pitch bent too long and overshot.
        let drift = integralGain * integral
        let predicted = filteredError - ((1 - ratio) - drift) * elapsed
        filteredError = predicted + (measured - predicted) * min(1, elapsed / max(filterTime, 1e-6))
        // The integral learns the drift between the clocks, so it runs only near zero error: a
        // large error taken up by the proportional part would otherwise wind it up.
        if abs(filteredError) < integrateWithin {
            // Bounded so that it alone never asks for more than the largest correction.
            let integralLimit = maxCorrection / max(integralGain, 1e-12)
            integral = min(max(integral + filteredError * elapsed, -integralLimit), integralLimit)
        }
        // The ratio can only come back at `maxSlew`; on the way back from a correction c it still
        // takes up c² / (2 maxSlew) seconds of error. So the proportional part never asks for more
        // than the error left can absorb: it brakes in time and the error lands on zero.
        let brake = (2 * maxSlew * abs(filteredError)).squareRoot() * brakeMargin
        let proportional = min(max(proportionalGain * filteredError, -brake), brake)
        // Late sound (positive error) plays faster: fewer output frames per input frame.
        let correction = proportional + drift
        let target = 1 - min(max(correction, -maxCorrection), maxCorrection)
        let step = maxSlew * elapsed
        ratio = min(max(target, ratio - step), ratio + step)
        return .resample(ratio: ratio)
    }
}
