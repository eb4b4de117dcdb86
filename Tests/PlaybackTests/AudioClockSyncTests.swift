import Playback
import PlaybackTestSupport
import Testing

/// A writer feeding a sound device whose clock runs off the picture's clock, simulated on a
/// virtual clock: every 10 ms of picture time the device plays its share, the writer tops its
/// buffer up to 40 ms with blocks resampled by the controller's ratio, and reads the device's
/// delay (quantised to 1 ms with a little jitter, as a DMA pointer reads).
struct SimulatedSoundDevice {
    let rate = 48_000.0
    /// How much faster the device's clock runs than the picture's (200e-6: 200 ppm).
    let drift: Double
    var controller = AudioClockSync()
    /// Picture timeline now (s), output frames written and played, the media time of the next
    /// input sample (s).
    var now = 0.0
    var written = 0.0
    var played = 0.0
    var nextSample: Double
    var jitterState: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// True error (s) after each step: when the next sample is really heard minus its time.
    var errors: [Double] = []
    var ratios: [Double] = []
    /// The picture time of each ratio in `ratios`.
    var ratioTimes: [Double] = []
    var realigned: [Double] = []

    init(drift: Double, initialError: Double) {
        self.drift = drift
        nextSample = -initialError
        refill()
    }

    mutating func jitter() -> Double {
        jitterState = jitterState &* 6364136223846793005 &+ 1442695040888963407
        return (Double(jitterState >> 11) / Double(1 << 53) - 0.5) * 0.002  // ±1 ms
    }

    /// One 10 ms step of picture time.
    mutating func step() {
        now += 0.01
        played = min(written, played + 0.01 * rate * (1 + drift))
        refill()
    }

    /// Tops the device buffer up to 40 ms, then records the error of the next sample.
    mutating func refill() {
        while written - played < 0.04 * rate {
            let queued = (written - played) / rate
            let reported = max(0, (queued * 1000).rounded(.down) / 1000 + jitter())
            let block = 480.0  // input frames
            switch controller.update(timelineNow: now, deviceDelay: reported, sampleTime: nextSample) {
            case .resample(let ratio):
                ratios.append(ratio)
                ratioTimes.append(now)
                written += block * ratio
                nextSample += block / rate
            case .realign(let seconds):
                realigned.append(seconds)
                if seconds > 0 {
                    nextSample += seconds  // drop that much sound
                } else {
                    written += -seconds * rate  // silence
                }
            }
        }
        // The next input sample is heard once the device has played what is queued before it.
        let heardAt = now + (written - played) / (rate * (1 + drift))
        errors.append(heardAt - nextSample)
    }

    mutating func run(seconds: Double) {
        for _ in 0..<Int(seconds * 100) { step() }
    }
}

@Suite struct AudioClockSyncTests {
    @Test func aDeviceClock200ppmFastConvergesWithin10msAndStaysThere() {
        var device = SimulatedSoundDevice(drift: 200e-6, initialError: 0.005)
        device.run(seconds: 600)
        let settled = device.errors.dropFirst(30 * 100)
        let worst = settled.map(abs).max() ?? .infinity
        print("200 ppm fast device, 10 min: worst error after 30 s \(worst * 1000) ms")
        #expect(worst < 0.010, "worst error after 30 s: \(worst * 1000) ms")
        // The last minute: the mean error is near zero (the integral took up the drift).
        let lastMinute = device.errors.suffix(60 * 100)
        let mean = lastMinute.reduce(0, +) / Double(lastMinute.count)
        #expect(abs(mean) < 0.002, "mean error over the last minute: \(mean * 1000) ms")
        // The ratio settles where it cancels the drift: output frames per input frame = 1 + drift.
        let lastRatios = device.ratios.suffix(1000)
        let ratio = lastRatios.reduce(0, +) / Double(lastRatios.count)
        #expect(abs(ratio - (1 + 200e-6)) < 50e-6, "ratio \(ratio)")
        print("200 ppm fast device: mean error over the last minute \(mean * 1000) ms, ratio \(ratio)")
        #expect(device.realigned.isEmpty)
    }

    @Test func withoutCorrectionTheSameDriftLeaves10msWithinAMinute() {
        // The simulation itself: with the controller held at 1 the error grows by 0.2 ms a second.
        var device = SimulatedSoundDevice(drift: 200e-6, initialError: 0)
        device.controller.maxCorrection = 0
        device.controller.maxSlew = 0
        device.run(seconds: 60)
        let last = device.errors.last ?? 0
        #expect(last < -0.010, "error after 60 s uncorrected: \(last * 1000) ms")
    }

    @Test func theRatioStaysWithinHalfAPercentAndChangesSmoothly() {
        var device = SimulatedSoundDevice(drift: -300e-6, initialError: -0.08)
        device.run(seconds: 120)
        #expect(device.ratios.allSatisfy { abs($0 - 1) <= 0.005 + 1e-12 })
        // At most maxSlew (0.002 per second) times the picture time between two updates.
        var worstRate = 0.0
        for i in device.ratios.indices.dropFirst() {
            let change = abs(device.ratios[i] - device.ratios[i - 1])
            let time = device.ratioTimes[i] - device.ratioTimes[i - 1]
            worstRate = max(worstRate, time > 0 ? change / time : (change == 0 ? 0 : .infinity))
        }
        #expect(worstRate <= 0.002 + 1e-9, "fastest change of the ratio: \(worstRate) per second")
        #expect((device.errors.suffix(60 * 100).map(abs).max() ?? .infinity) < 0.010)
    }

    @Test func aStepErrorRealignsAtOnceAndASmallOneIsResampledAway() {
        var device = SimulatedSoundDevice(drift: 100e-6, initialError: 0)
        device.run(seconds: 30)
        #expect(device.realigned.isEmpty)
        // A stall: the sound falls 250 ms behind (e.g. the writer was held up).
        device.nextSample -= 0.25
        device.run(seconds: 0.05)
        #expect(device.realigned.count == 1)
        #expect(abs((device.realigned.first ?? 0) - 0.25) < 0.005)
        #expect(abs(device.errors.last ?? 1) < 0.010, "error just after the realignment: \((device.errors.last ?? 0) * 1000) ms")
        // A 40 ms step is below the realignment threshold: resampled away within 20 s.
        device.nextSample += 0.04
        device.run(seconds: 20)
        #expect(device.realigned.count == 1)
        #expect((device.errors.suffix(5 * 100).map(abs).max() ?? .infinity) < 0.010)
    }

    @Test(arguments: [0.02, 0.05, -0.03])
    func aCorrectionEndsOnZeroErrorRatherThanPastIt(initialError: Double) {
        // Before the controller braked, a 20-50 ms error came back through zero to 6-10 ms on the
        // other side and took 16-23 s to settle within 2 ms (the guest's sound did the same).
        for drift in [0, 200e-6, -300e-6] {
            var device = SimulatedSoundDevice(drift: drift, initialError: initialError)
            device.run(seconds: 40)
            let overshoot = device.errors.map { initialError > 0 ? -$0 : $0 }.max() ?? .infinity
            let lastOutside = device.errors.lastIndex { abs($0) > 0.002 } ?? 0
            print("\(initialError * 1000) ms at \(drift * 1e6) ppm: overshoot \(overshoot * 1000) ms, within 2 ms from \(Double(lastOutside) / 100) s")
            #expect(overshoot < 0.0035, "\(initialError * 1000) ms at \(drift * 1e6) ppm overshot by \(overshoot * 1000) ms")
            #expect(lastOutside < 20 * 100, "\(initialError * 1000) ms at \(drift * 1e6) ppm: still over 2 ms at \(Double(lastOutside) / 100) s")
            #expect(device.realigned.isEmpty)
        }
    }

    @Test func resetAfterASeekMeasuresAfresh() {
        var sync = AudioClockSync()
        _ = sync.update(timelineNow: 1, deviceDelay: 0.04, sampleTime: 1.04)
        for i in 1...200 { _ = sync.update(timelineNow: 1 + Double(i) * 0.01, deviceDelay: 0.04, sampleTime: 1.03 + Double(i) * 0.01) }
        #expect(sync.ratio < 1)  // 10 ms late: faster
        sync.reset()
        #expect(sync.ratio == 1)
        guard case .realign(let seconds) = sync.update(timelineNow: 30, deviceDelay: 0.04, sampleTime: 12) else {
            Issue.record("an 18 s error after a seek must realign")
            return
        }
        #expect(abs(seconds - 18.04) < 1e-9)
    }

    @Test func valuesThatAreNotFiniteChangeNothing() {
        var sync = AudioClockSync()
        #expect(sync.update(timelineNow: .nan, deviceDelay: 0, sampleTime: 0) == .resample(ratio: 1))
        #expect(sync.update(timelineNow: 0, deviceDelay: -1, sampleTime: 0) == .resample(ratio: 1))
        #expect(sync.update(timelineNow: 0, deviceDelay: 0, sampleTime: .infinity) == .resample(ratio: 1))
        #expect(sync.realignments == 0)
    }
}
