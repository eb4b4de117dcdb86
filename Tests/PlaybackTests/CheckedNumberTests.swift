import Playback
import PlaybackTestSupport
import Testing

/// The one checked conversion that every number from outside goes through.
@Suite struct CheckedNumberTests {
    @Test func wholeNumbersInRangeConvert() throws {
        #expect(try checkedInteger(90.0, in: 0...359, field: "r") == 90)
        #expect(try checkedInteger(-0.0, in: 0...359, field: "r") == 0)
        #expect(try checkedInteger(9_223_372_036_854_774_784.0, in: Int64.min...Int64.max, field: "id") == 9_223_372_036_854_774_784)
        #expect(try checkedInteger(-9_223_372_036_854_775_808.0, in: Int64.min...Int64.max, field: "id") == Int64.min)
        #expect(try checkedInteger(4_294_967_295.0, in: UInt32.min...UInt32.max, field: "u") == UInt32.max)
    }

    @Test func hostileNumbersAreErrorsNamingTheField() {
        let cases: [(Double, String)] = [
            (1e300, "display.rotation: 1e+300 is out of range (0 to 359)"),
            (-1e300, "display.rotation: -1e+300 is out of range (0 to 359)"),
            (1e-300, "display.rotation: 1e-300 is not a whole number"),
            (1.5, "display.rotation: 1.5 is not a whole number"),
            (.nan, "display.rotation: NaN is not a whole number"),
            (.infinity, "display.rotation: infinity is not a whole number"),
            (-.infinity, "display.rotation: -infinity is not a whole number"),
            (360, "display.rotation: 360 is out of range (0 to 359)"),
            (-1, "display.rotation: -1 is out of range (0 to 359)"),
        ]
        for (value, expected) in cases {
            #expect(throws: NumberOutOfRange.self, "\(value)") { try checkedInteger(value, in: 0...359, field: "display.rotation") }
            do {
                _ = try checkedInteger(value, in: 0...359, field: "display.rotation")
            } catch {
                #expect(error.description == expected)
            }
        }
        // Past every integer type's edge, at the edge's own Double.
        #expect(throws: NumberOutOfRange.self) { try checkedInteger(9_223_372_036_854_775_808.0, in: Int64.min...Int64.max, field: "id") }
        #expect(throws: NumberOutOfRange.self) { try checkedInteger(18_446_744_073_709_551_616.0, in: UInt64.min...UInt64.max, field: "u") }
        #expect(throws: NumberOutOfRange.self) { try checkedInteger(-1.0, in: UInt64.min...UInt64.max, field: "u") }
        #expect(throws: NumberOutOfRange.self) { try checkedInteger(2_147_483_648.0, in: Int32.min...Int32.max, field: "i") }
    }

    @Test func parsedIntegersAreCheckedToo() throws {
        #expect(try checkedInteger(parsing: "42", in: 1...100, field: "--frames") == 42)
        #expect(throws: NumberOutOfRange(field: "--frames", reason: "99999999999999999999999 is out of range (1 to 100)")) {
            try checkedInteger(parsing: "99999999999999999999999", in: 1...100, field: "--frames")
        }
        #expect(throws: NumberOutOfRange(field: "--frames", reason: "0 is out of range (1 to 100)")) {
            try checkedInteger(parsing: "0", in: 1...100, field: "--frames")
        }
        #expect(throws: NumberOutOfRange(field: "--frames", reason: "\"1.5\" is not a whole number")) {
            try checkedInteger(parsing: "1.5", in: 1...100, field: "--frames")
        }
        #expect(throws: NumberOutOfRange.self) { try checkedInteger(parsing: "", in: 1...100, field: "--frames") }
    }

    @Test func finiteNumbersAreChecked() throws {
        #expect(try checkedNumber(1.5, in: 0...10, field: "t") == 1.5)
        #expect(throws: NumberOutOfRange(field: "t", reason: "infinity is not a finite number")) { try checkedNumber(.infinity, in: 0...10, field: "t") }
        #expect(throws: NumberOutOfRange(field: "t", reason: "NaN is not a finite number")) { try checkedNumber(.nan, in: 0...10, field: "t") }
        #expect(throws: NumberOutOfRange(field: "t", reason: "1e+300 is out of range (0 to 10)")) { try checkedNumber(1e300, in: 0...10, field: "t") }
    }

    @Test func saturatingConversionNeverTraps() {
        #expect(Int64(saturating: 1e300) == .max)
        #expect(Int64(saturating: -1e300) == .min)
        #expect(Int64(saturating: 9_223_372_036_854_775_808.0) == .max)
        #expect(Int64(saturating: -9_223_372_036_854_775_808.0) == .min)
        #expect(Int64(saturating: .nan) == 0)
        #expect(Int32(saturating: .infinity) == .max)
        #expect(Int64(saturating: -2.9) == -2)
    }
}
