import Kiosk
import Testing

/// The JSON parser under hostile text: every problem is a syntax error with its line and column.
@Suite struct HostileJSONTests {
    func syntaxError(_ text: String) -> String? {
        do {
            _ = try JSONParser.parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func brokenSurrogatePairsAreSyntaxErrors() {
        // The high surrogate is followed by an escape that is not a low surrogate.
        #expect(syntaxError(#""\ud800\u0041""#) == #"line 1, column 2: invalid surrogate pair: \ud800 is not followed by a low surrogate"#)
        #expect(syntaxError(#""\udbff\udbff""#) == #"line 1, column 2: invalid surrogate pair: \udbff is not followed by a low surrogate"#)
        // Not followed by an escape at all.
        #expect(syntaxError(#""\ud800x""#) == #"line 1, column 2: invalid surrogate pair: \ud800 is not followed by a low surrogate"#)
        #expect(syntaxError(#""\ud800""#) == #"line 1, column 2: invalid surrogate pair: \ud800 is not followed by a low surrogate"#)
        #expect(syntaxError(#""\ud800\n""#) == #"line 1, column 2: invalid surrogate pair: \ud800 is not followed by a low surrogate"#)
        // A low surrogate alone.
        #expect(syntaxError("[1,\n\"ab\\udc00\"]") == #"line 2, column 4: invalid surrogate pair: \udc00 is a low surrogate without a high one"#)
        #expect(syntaxError(#""\u12""#) == #"line 1, column 4: invalid \u escape"#)
        #expect(syntaxError(#""\u+123""#) == #"line 1, column 4: invalid \u escape"#)
    }

    @Test func goodSurrogatePairsAndEscapesStillDecode() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSONParser.parse(#""\u0041\u00e9\u0000""#) == .string("Aé\u{0}"))
    }

    @Test func numbersBeyondDoubleAreSyntaxErrors() throws {
        #expect(syntaxError("[1e999]") == "line 1, column 2: number out of range: 1e999")
        #expect(syntaxError("-1e400") == "line 1, column 1: number out of range: -1e400")
        #expect(try JSONParser.parse("1e-999") == .number(0))
        #expect(try JSONParser.parse("1e308") == .number(1e308))
    }

    @Test func hostileNumbersEncodeAsJSON() throws {
        for n in [1e300, -1e300, 1e-300, 9.3e18, -9.3e18, 1.5, -0.0] {
            let text = JSONValue.number(n).encoded
            #expect(try JSONParser.parse(text) == .number(n), "\(n) -> \(text)")
        }
    }
}
