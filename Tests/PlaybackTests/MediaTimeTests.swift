import Testing
import Playback
import PlaybackTestSupport

/// Shorthand for a numeric time.
private func t(_ value: Int64, _ timescale: Int32) -> MediaTime {
    MediaTime(value: value, timescale: timescale)
}

@Suite("MediaTime: representation")
struct MediaTimeRepresentationTests {
    @Test func valueOverTimescale() {
        let time = t(3, 2)
        #expect(time.value == 3)
        #expect(time.timescale == 2)
        #expect(time.flags == .valid)
        #expect(time.isValid && time.isNumeric)
        #expect(time.seconds == 1.5)
    }

    @Test func defaultInitIsAllZeroAndInvalid() {
        let time = MediaTime()
        #expect(time.value == 0 && time.timescale == 0 && time.flags.isEmpty)
        #expect(!time.isValid && !time.isNumeric)
        #expect(time == .invalid)
        #expect(MediaTime.invalid.flags.isEmpty)
    }

    @Test(arguments: [Int32(0), -1, .min])
    func nonPositiveTimescaleIsInvalid(timescale: Int32) {
        let time = t(5, timescale)
        #expect(!time.isValid)
        #expect(time == .invalid)
    }

    @Test func constants() {
        #expect(MediaTime.zero.isNumeric && MediaTime.zero.value == 0 && MediaTime.zero.seconds == 0)
        #expect(MediaTime.indefinite.isValid && MediaTime.indefinite.isIndefinite && !MediaTime.indefinite.isNumeric)
        #expect(MediaTime.positiveInfinity.isValid && MediaTime.positiveInfinity.isPositiveInfinity)
        #expect(MediaTime.negativeInfinity.isValid && MediaTime.negativeInfinity.isNegativeInfinity)
        #expect(!MediaTime.positiveInfinity.isNumeric && !MediaTime.negativeInfinity.isNumeric)
        #expect(!MediaTime.positiveInfinity.isNegativeInfinity && !MediaTime.negativeInfinity.isPositiveInfinity)
        #expect(!MediaTime.zero.hasBeenRounded)
    }

    @Test func isNumericNeedsValidAndNoSpecialFlag() {
        var time = t(1, 1)
        #expect(time.isNumeric)
        for flag in [MediaTime.Flags.positiveInfinity, .negativeInfinity, .indefinite] {
            time.flags = [.valid, flag]
            #expect(time.isValid && !time.isNumeric)
        }
        time.flags = [.valid, .hasBeenRounded]
        #expect(time.isNumeric && time.hasBeenRounded)
        time.flags = []
        #expect(!time.isValid && !time.isNumeric)
    }

    @Test func specialTimesIgnoreValueAndTimescale() {
        var infinity = MediaTime.positiveInfinity
        infinity.value = 42
        infinity.timescale = 7
        #expect(infinity == .positiveInfinity)
        #expect(infinity.hashValue == MediaTime.positiveInfinity.hashValue)
        #expect(infinity.seconds == .infinity)
        var indefinite = MediaTime.indefinite
        indefinite.value = -9
        indefinite.timescale = -3
        #expect(indefinite.isValid && indefinite == .indefinite)
    }

    @Test func contradictoryFlagsAreInvalid() {
        var time = MediaTime.positiveInfinity
        time.flags.insert(.negativeInfinity)
        #expect(!time.isValid)
        time.flags = [.valid, .indefinite, .positiveInfinity]
        #expect(!time.isValid)
    }

    @Test func validFlagWithZeroTimescaleIsInvalid() {
        var time = t(1, 1)
        time.timescale = 0
        #expect(!time.isValid)
        #expect(time.seconds.isNaN)
    }
}

@Suite("MediaTime: seconds")
struct MediaTimeSecondsTests {
    @Test func secondsOfSpecialTimes() {
        #expect(MediaTime.invalid.seconds.isNaN)
        #expect(MediaTime.indefinite.seconds.isNaN)
        #expect(MediaTime.positiveInfinity.seconds == .infinity)
        #expect(MediaTime.negativeInfinity.seconds == -.infinity)
        #expect(t(-1, 4).seconds == -0.25)
    }

    @Test func exactConversionIsNotRounded() {
        let time = MediaTime(seconds: 1.5, preferredTimescale: 600)
        #expect(time.value == 900 && time.timescale == 600)
        #expect(!time.hasBeenRounded)
        #expect(MediaTime(seconds: 0.1, preferredTimescale: 10) == t(1, 10))
        #expect(!MediaTime(seconds: 0.1, preferredTimescale: 10).hasBeenRounded)
        #expect(!MediaTime(seconds: -0.0, preferredTimescale: 1).hasBeenRounded)
    }

    @Test func inexactConversionIsRounded() {
        let time = MediaTime(seconds: 0.1234, preferredTimescale: 100)
        #expect(time.value == 12 && time.timescale == 100)
        #expect(time.hasBeenRounded)
        let tiny = MediaTime(seconds: 1e-9, preferredTimescale: 600)
        #expect(tiny.value == 0 && tiny.hasBeenRounded)
    }

    @Test(arguments: [
        (0.5, Int64(1)), (1.5, 2), (2.5, 3), (-0.5, -1), (-1.5, -2), (-2.5, -3),
        (0.49, 0), (-0.49, 0), (0.51, 1), (-0.51, -1),
    ])
    func roundsHalfAwayFromZero(seconds: Double, expected: Int64) {
        let time = MediaTime(seconds: seconds, preferredTimescale: 1)
        #expect(time.value == expected)
        #expect(time.timescale == 1)
        #expect(time.hasBeenRounded)
    }

    @Test(arguments: [Int32(0), -1, -600])
    func nonPositivePreferredTimescaleIsInvalid(timescale: Int32) {
        #expect(!MediaTime(seconds: 1, preferredTimescale: timescale).isValid)
    }

    @Test func nonFiniteSeconds() {
        #expect(!MediaTime(seconds: .nan, preferredTimescale: 600).isValid)
        #expect(MediaTime(seconds: .infinity, preferredTimescale: 600).isPositiveInfinity)
        #expect(MediaTime(seconds: -.infinity, preferredTimescale: 600).isNegativeInfinity)
    }

    @Test func overflowHalvesTimescale() {
        // 1e16 s * 1000 = 1e19 > Int64.max, 1e16 s * 500 = 5e18 fits.
        let time = MediaTime(seconds: 1e16, preferredTimescale: 1000)
        #expect(time.timescale == 500)
        #expect(time.value == 5_000_000_000_000_000_000)
        #expect(!time.hasBeenRounded)
        let negative = MediaTime(seconds: -1e16, preferredTimescale: 1000)
        #expect(negative.timescale == 500 && negative.value == -5_000_000_000_000_000_000)
    }

    @Test func overflowAtTimescaleOneGivesInfinity() {
        #expect(MediaTime(seconds: 1e19, preferredTimescale: 1).isPositiveInfinity)
        #expect(MediaTime(seconds: 1e300, preferredTimescale: 600).isPositiveInfinity)
        #expect(MediaTime(seconds: -1e300, preferredTimescale: .max).isNegativeInfinity)
    }

    @Test func roundTrip() {
        for seconds in [0.0, 1, -1, 0.25, 12.5, -3.75, 86_400] {
            let time = MediaTime(seconds: seconds, preferredTimescale: 90_000)
            #expect(time.seconds == seconds)
            #expect(!time.hasBeenRounded)
        }
    }
}

@Suite("MediaTime: convertScale")
struct MediaTimeConvertScaleTests {
    @Test func exactConversion() {
        let time = t(3, 2).convertScale(600)
        #expect(time.value == 900 && time.timescale == 600 && !time.hasBeenRounded)
        let down = t(900, 600).convertScale(2)
        #expect(down.value == 3 && down.timescale == 2 && !down.hasBeenRounded)
    }

    @Test func sameTimescaleIsUnchanged() {
        let time = t(7, 3).convertScale(3)
        #expect(time.value == 7 && time.timescale == 3 && time.flags == .valid)
    }

    @Test(arguments: [
        // (value, rounding, expected) for value/4 converted to timescale 2
        (Int64(1), MediaTime.RoundingMethod.roundHalfAwayFromZero, Int64(1)),   // 0.5 -> 1
        (-1, .roundHalfAwayFromZero, -1),                                        // -0.5 -> -1
        (1, .roundTowardZero, 0),
        (-1, .roundTowardZero, 0),
        (1, .roundAwayFromZero, 1),
        (-1, .roundAwayFromZero, -1),
        (1, .roundTowardNegativeInfinity, 0),
        (-1, .roundTowardNegativeInfinity, -1),
        (1, .roundTowardPositiveInfinity, 1),
        (-1, .roundTowardPositiveInfinity, 0),
        (5, .roundTowardZero, 2),                                                // 2.5
        (5, .roundTowardNegativeInfinity, 2),
        (-5, .roundTowardNegativeInfinity, -3),
        (-5, .roundTowardPositiveInfinity, -2),
    ])
    func roundingMethods(value: Int64, rounding: MediaTime.RoundingMethod, expected: Int64) {
        let time = t(value, 4).convertScale(2, rounding: rounding)
        #expect(time.value == expected)
        #expect(time.timescale == 2)
        #expect(time.hasBeenRounded)
    }

    @Test func roundHalfAwayFromZeroIsTheDefault() {
        #expect(t(2, 3).convertScale(1).value == 1)        // 0.667
        #expect(t(1, 3).convertScale(1).value == 0)        // 0.333
        #expect(t(-2, 3).convertScale(1).value == -1)
    }

    @Test func nonPositiveTimescaleIsInvalid() {
        #expect(!t(1, 1).convertScale(0).isValid)
        #expect(!t(1, 1).convertScale(-5).isValid)
    }

    @Test func nonNumericTimesAreUnchanged() {
        #expect(MediaTime.positiveInfinity.convertScale(600).isPositiveInfinity)
        #expect(MediaTime.negativeInfinity.convertScale(600).isNegativeInfinity)
        #expect(MediaTime.indefinite.convertScale(600).isIndefinite)
        #expect(!MediaTime.invalid.convertScale(600).isValid)
    }

    @Test func overflowGivesInfinityWithoutTrapping() {
        #expect(t(.max, 1).convertScale(2).isPositiveInfinity)
        #expect(t(.min, 1).convertScale(1000).isNegativeInfinity)
        let wide = t(.max, 1_000_000_000).convertScale(1)
        #expect(wide.value == 9_223_372_037 && wide.hasBeenRounded)
    }

    @Test func roundedFlagIsKept() {
        var time = t(1, 2)
        time.flags.insert(.hasBeenRounded)
        #expect(time.convertScale(4).hasBeenRounded)
    }
}

@Suite("MediaTime: arithmetic")
struct MediaTimeArithmeticTests {
    @Test func equalTimescalesAreKept() {
        let sum = t(1, 600) + t(2, 600)
        #expect(sum.value == 3 && sum.timescale == 600 && !sum.hasBeenRounded)
        let difference = t(1, 600) - t(2, 600)
        #expect(difference.value == -1 && difference.timescale == 600)
    }

    @Test func differentTimescalesUseTheLeastCommonMultiple() {
        let sum = t(1, 4) + t(1, 6)         // 3/12 + 2/12
        #expect(sum.value == 5 && sum.timescale == 12 && !sum.hasBeenRounded)
        let difference = t(1, 4) - t(1, 6)
        #expect(difference.value == 1 && difference.timescale == 12)
        let mixed = t(1, 30_000) + t(1, 48_000)
        #expect(mixed.timescale == 240_000 && mixed.value == 13)
    }

    @Test func leastCommonMultipleIsCappedAndRounded() {
        // Two large primes: their LCM is ~1e18, far above Int32.max.
        let a = t(1, 1_000_000_007), b = t(1, 1_000_000_009)
        let sum = a + b
        #expect(sum.timescale == MediaTime.maxTimescale)
        #expect(sum.hasBeenRounded)
        #expect(sum.value == 4)             // (2^31 - 1) * ~2e-9 = 4.29
        #expect(abs(sum.seconds - (a.seconds + b.seconds)) <= 1 / Double(Int32.max))
        // An exact result in the capped timescale is not rounded.
        let zero = t(0, 1_000_000_007) + t(0, 1_000_000_009)
        #expect(zero == .zero && zero.timescale == .max && !zero.hasBeenRounded)
    }

    @Test func valueOverflowRoundsIntoSmallerTimescale() {
        let sum = t(.max, 1000) + t(.max, 1000)
        #expect(sum.timescale == 500)
        #expect(sum.value == .max)
        #expect(!sum.hasBeenRounded)        // (2 * max) / 1000 == max / 500 exactly
        let odd = t(.max, 1000) + t(1, 1000)
        #expect(odd.timescale == 500 && odd.value == 4_611_686_018_427_387_904)
        #expect(odd.hasBeenRounded == false)
        let inexact = t(.max, 1000) + t(2, 1000)   // (2^63 + 1) / 1000 -> 2^62 + 0.5 in /500
        #expect(inexact.timescale == 500 && inexact.hasBeenRounded)
        let negative = t(.min, 3) - t(5, 3)
        #expect(negative.timescale == 1 && negative.hasBeenRounded)
        #expect(negative.value == -3_074_457_345_618_258_604)
    }

    @Test func valueOverflowAtTimescaleOneGivesInfinity() {
        #expect((t(.max, 1) + t(1, 1)).isPositiveInfinity)
        #expect((t(.min, 1) - t(1, 1)).isNegativeInfinity)
        #expect((t(.min, 1) + t(.min, 1)).isNegativeInfinity)
        #expect((t(.max, 1) - t(.min, 1)).isPositiveInfinity)
    }

    @Test func invalidOperandGivesInvalid() {
        let operands: [MediaTime] = [.zero, t(1, 3), .indefinite, .positiveInfinity, .negativeInfinity, .invalid]
        for other in operands {
            #expect(!(MediaTime.invalid + other).isValid)
            #expect(!(other + .invalid).isValid)
            #expect(!(MediaTime.invalid - other).isValid)
            #expect(!(other - .invalid).isValid)
        }
    }

    @Test func infinities() {
        let finite = t(5, 1)
        #expect((MediaTime.positiveInfinity + finite).isPositiveInfinity)
        #expect((finite + .negativeInfinity).isNegativeInfinity)
        #expect((finite - .positiveInfinity).isNegativeInfinity)
        #expect((finite - .negativeInfinity).isPositiveInfinity)
        #expect((MediaTime.positiveInfinity + .positiveInfinity).isPositiveInfinity)
        #expect((MediaTime.negativeInfinity + .negativeInfinity).isNegativeInfinity)
        #expect((MediaTime.positiveInfinity - .negativeInfinity).isPositiveInfinity)
        #expect((MediaTime.negativeInfinity - .positiveInfinity).isNegativeInfinity)
        #expect((MediaTime.positiveInfinity + .indefinite).isPositiveInfinity)
        #expect((MediaTime.indefinite - .positiveInfinity).isNegativeInfinity)
    }

    @Test func oppositeInfinitiesGiveInvalid() {
        #expect(!(MediaTime.positiveInfinity + .negativeInfinity).isValid)
        #expect(!(MediaTime.negativeInfinity + .positiveInfinity).isValid)
        #expect(!(MediaTime.positiveInfinity - .positiveInfinity).isValid)
        #expect(!(MediaTime.negativeInfinity - .negativeInfinity).isValid)
    }

    @Test func indefinite() {
        #expect((MediaTime.indefinite + t(1, 2)).isIndefinite)
        #expect((t(1, 2) + .indefinite).isIndefinite)
        #expect((MediaTime.indefinite - t(1, 2)).isIndefinite)
        #expect((t(1, 2) - .indefinite).isIndefinite)
        #expect((MediaTime.indefinite + .indefinite).isIndefinite)
    }

    @Test func roundedOperandGivesRoundedResult() {
        var rounded = t(1, 3)
        rounded.flags.insert(.hasBeenRounded)
        #expect((rounded + t(1, 3)).hasBeenRounded)
        #expect((t(1, 3) + rounded).hasBeenRounded)
        #expect((rounded - t(1, 6)).hasBeenRounded)
        #expect((rounded + .positiveInfinity).hasBeenRounded)
        #expect(!(t(1, 3) + t(1, 3)).hasBeenRounded)
        #expect((rounded * 2).hasBeenRounded)
        #expect((-rounded).hasBeenRounded)
    }

    @Test func compoundAssignment() {
        var time = MediaTime.zero
        for _ in 0..<3 { time += t(1, 3) }
        #expect(time == t(1, 1))
        time -= t(1, 2)
        #expect(time == t(1, 2))
        time *= 6
        #expect(time == t(3, 1))
    }

    @Test func negation() {
        #expect(-t(3, 4) == t(-3, 4))
        #expect((-t(3, 4)).timescale == 4)
        #expect((-MediaTime.positiveInfinity).isNegativeInfinity)
        #expect((-MediaTime.negativeInfinity).isPositiveInfinity)
        #expect((-MediaTime.indefinite).isIndefinite)
        #expect(!(-MediaTime.invalid).isValid)
        let minimum = -t(.min, 2)           // 2^63 / 2 does not fit in /2, does in /1
        #expect(minimum.value == 1 << 62 && minimum.timescale == 1 && !minimum.hasBeenRounded)
        #expect((-t(.min, 1)).isPositiveInfinity)
    }

    @Test func integerMultiplication() {
        let product = t(3, 10) * 7
        #expect(product.value == 21 && product.timescale == 10 && !product.hasBeenRounded)
        #expect(t(3, 10) * -2 == t(-6, 10))
        #expect(t(3, 10) * 0 == .zero)
        #expect(4 * t(1, 4) == t(1, 1))
    }

    @Test func integerMultiplicationOverflow() {
        let halved = t(1 << 62, 4) * 4      // 2^64 / 4 -> 2^62 / 1
        #expect(halved.value == 1 << 62 && halved.timescale == 1 && !halved.hasBeenRounded)
        let inexact = t(.max, 4) * 3        // 3 * (2^63 - 1) / 4 = 3 * 2^61 - 0.75
        #expect(inexact.timescale == 1 && inexact.hasBeenRounded)
        #expect(inexact.value == 3 << 61 - 1)
    }

    @Test func integerMultiplicationOverflowToInfinity() {
        #expect((t(.max, 1) * 2).isPositiveInfinity)
        #expect((t(.max, 1) * -2).isNegativeInfinity)
        #expect((t(.min, 1) * .min).isPositiveInfinity)
        #expect((t(1 << 40, 1000) * (1 << 40)).isPositiveInfinity)
    }

    @Test func multiplyingSpecialTimes() {
        #expect((MediaTime.positiveInfinity * 3).isPositiveInfinity)
        #expect((MediaTime.positiveInfinity * -3).isNegativeInfinity)
        #expect((MediaTime.negativeInfinity * -3).isPositiveInfinity)
        #expect(!(MediaTime.positiveInfinity * 0).isValid)
        #expect((MediaTime.indefinite * 5).isIndefinite)
        #expect(!(MediaTime.invalid * 5).isValid)
    }
}

@Suite("MediaTime: comparison and hashing")
struct MediaTimeComparisonTests {
    @Test func equivalentFractionsAreEqual() {
        #expect(t(1, 2) == t(2, 4))
        #expect(t(1, 2) == t(300, 600))
        #expect(t(0, 1) == t(0, 90_000))
        #expect(t(-1, 3) == t(-2, 6))
        #expect(t(1, 2) != t(1, 3))
    }

    @Test func hashAgreesWithEquality() {
        #expect(t(1, 2).hashValue == t(2, 4).hashValue)
        #expect(t(-7, 3).hashValue == t(-7_000, 3_000).hashValue)
        #expect(t(0, 1).hashValue == t(0, 48_000).hashValue)
        #expect(t(.min, 1).hashValue == t(.min, 1).hashValue)
        let set: Set<MediaTime> = [t(1, 2), t(2, 4), t(3, 6), t(1, 3)]
        #expect(set.count == 2)
    }

    @Test func roundedFlagIsIgnoredByEqualityAndHash() {
        var rounded = t(1, 2)
        rounded.flags.insert(.hasBeenRounded)
        #expect(rounded == t(1, 2))
        #expect(rounded.hashValue == t(2, 4).hashValue)
    }

    @Test func invalidTimesAreEqualToEachOther() {
        var other = MediaTime.invalid
        other.value = 5
        other.timescale = 3
        #expect(other == .invalid)
        #expect(other.hashValue == MediaTime.invalid.hashValue)
        #expect(MediaTime.invalid != .zero)
        #expect(!(MediaTime.invalid < .invalid))
    }

    @Test func order() {
        let ascending: [MediaTime] = [
            .negativeInfinity, t(.min, 1), t(-1, 1), t(-1, 3), .zero, t(1, 1_000_000), t(1, 3),
            t(1, 2), t(2, 1), t(.max - 1, .max), t(.max, .max), t(.max, 1), .indefinite, .positiveInfinity, .invalid,
        ]
        for (i, lhs) in ascending.enumerated() {
            for (j, rhs) in ascending.enumerated() {
                #expect((lhs < rhs) == (i < j), "\(lhs) < \(rhs)")
                #expect((lhs == rhs) == (i == j), "\(lhs) == \(rhs)")
            }
        }
        #expect(ascending.shuffled().sorted() == ascending)
    }

    @Test func comparisonIsExactForLargeValues() {
        // Cross products exceed Int64 and the two times differ by far less than
        // a Double can resolve.
        let a = t(.max, .max)                           // (2^63-1) / (2^31-1)
        let b = t(.max - 1, .max)
        #expect(b < a)
        #expect(a.seconds == b.seconds)
        let c = t(.max - 1, .max - 1), d = t(1 << 62 - 1, 1 << 30 - 1)   // the same fraction halved
        #expect(c == d && !(c < d) && !(d < c))
        #expect(c.hashValue == d.hashValue)
        #expect(t(.max, .max - 1) > t(.max, .max))
        #expect(t(.min, .max) < t(.min + 1, .max))
    }

    @Test func minAndMax() {
        #expect(min(t(1, 3), t(1, 4)) == t(1, 4))
        #expect(max(t(1, 3), .indefinite) == .indefinite)
        #expect(max(.negativeInfinity, t(-5, 1)) == t(-5, 1))
    }
}

@Suite("MediaTime: description")
struct MediaTimeDescriptionTests {
    @Test(arguments: [
        (t(1, 3), "{1/3 = 0.333}"),
        (t(2, 3), "{2/3 = 0.667}"),
        (t(600, 600), "{600/600 = 1.000}"),
        (t(-1, 3), "{-1/3 = -0.333}"),
        (t(-1, 4000), "{-1/4000 = -0.000}"),
        (t(1, 2000), "{1/2000 = 0.001}"),
        (t(12_345, 10), "{12345/10 = 1234.500}"),
        (.zero, "{0/1 = 0.000}"),
        (t(.max, 1), "{9223372036854775807/1 = 9223372036854775807.000}"),
        (.invalid, "{INVALID}"),
        (.indefinite, "{INDEFINITE}"),
        (.positiveInfinity, "{+INFINITY}"),
        (.negativeInfinity, "{-INFINITY}"),
    ])
    func description(time: MediaTime, expected: String) {
        #expect(time.description == expected)
        #expect("\(time)" == expected)
    }

    @Test func roundedTimesSayRounded() {
        #expect(MediaTime(seconds: 0.1234, preferredTimescale: 100).description == "{12/100 = 0.120, rounded}")
    }
}
