import CFFmpeg
@testable import Media
import Playback
import Testing

/// The checked conversions of numbers read from media files: extremes give nil or a neutral
/// value, never a trap.
@Suite struct ContainerValueTests {
    let noPTS = Int64.min  // AV_NOPTS_VALUE

    @Test func timestampsAtTheExtremesConvertOrGiveNil() {
        let ninetyK = AVRational(num: 1, den: 90000)
        #expect(ContainerValue.time(ticks: 90000, timeBase: ninetyK) == MediaTime(value: 1, timescale: 1))
        #expect(ContainerValue.time(ticks: noPTS, timeBase: ninetyK) == nil)
        // ticks * num overflows 64 bits: rounded through seconds instead of a trap.
        let big = ContainerValue.time(ticks: .max, timeBase: AVRational(num: 1001, den: 30000))
        #expect(big?.isNumeric == true)
        #expect(ContainerValue.time(ticks: .max, timeBase: AVRational(num: .max, den: 1)) == nil)
        // Unusable time bases.
        for base in [AVRational(num: 0, den: 0), AVRational(num: 1, den: 0), AVRational(num: -1, den: 25), AVRational(num: 1, den: -25)] {
            #expect(ContainerValue.time(ticks: 1, timeBase: base) == nil)
            #expect(ContainerValue.ticks(seconds: 1, timeBase: base) == nil)
        }
        #expect(ContainerValue.ticks(seconds: .infinity, timeBase: ninetyK) == nil)
        #expect(ContainerValue.ticks(seconds: 1e300, timeBase: ninetyK) == nil)
        #expect(ContainerValue.ticks(seconds: 0.04, timeBase: ninetyK) == 3600)
        #expect(ContainerValue.sum(.max, 1) == nil && ContainerValue.difference(.min, 1) == nil)
        #expect(ContainerValue.sum(1, 2) == 3 && ContainerValue.difference(.min + 1, 1) == .min)
    }

    @Test func sizesRatesAspectsAndAnglesOutOfRangeAreRefusedOrNeutral() {
        #expect(ContainerValue.pictureSize(width: 0, height: 16) == nil)
        #expect(ContainerValue.pictureSize(width: -4, height: 16) == nil)
        #expect(ContainerValue.pictureSize(width: 65535, height: 65535) == nil)
        #expect(ContainerValue.pictureSize(width: .max, height: 1) == nil)
        #expect(ContainerValue.pictureSize(width: 16400, height: 16).map { [$0.width, $0.height] } == [16400, 16])
        #expect(ContainerValue.framesPerSecond(AVRational(num: 30000, den: 1001)).map { abs($0 - 29.97) < 0.001 } == true)
        #expect(ContainerValue.framesPerSecond(AVRational(num: 0, den: 0)) == nil)
        #expect(ContainerValue.framesPerSecond(AVRational(num: .max, den: 1)) == nil)
        #expect(ContainerValue.pixelAspect(AVRational(num: 0, den: 1)) == 1)
        #expect(ContainerValue.pixelAspect(AVRational(num: .max, den: 1)) == 1)
        #expect(ContainerValue.pixelAspect(AVRational(num: -4, den: 3)) == 1)
        #expect(ContainerValue.pixelAspect(AVRational(num: 4, den: 3)) == 4.0 / 3)
        // Display-matrix angles: NaN, infinities and huge values are no turn or the nearest one.
        #expect(Rotation(degrees: .nan) == .none)
        #expect(Rotation(degrees: .infinity) == .none)
        #expect(Rotation(degrees: -.infinity) == .none)
        #expect(Rotation(degrees: 1e300) == Rotation(degrees: fmod(1e300, 360)))
        #expect(Rotation(degrees: -90) == .clockwise270)
        #expect(Rotation(degrees: 450) == .clockwise90)
        #expect(Rotation(degrees: 359) == .none)
        #expect(Rotation.clockwise270 + .upsideDown == .clockwise90)
    }
}
