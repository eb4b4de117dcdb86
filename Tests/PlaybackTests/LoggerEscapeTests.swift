import Playback
import PlaybackTestSupport
import Testing
import TestSupport

/// Control characters from file names or any other outside string never reach a log line raw.
@Suite struct LoggerEscapeTests {
    func logged(_ message: String, _ value: String) -> String {
        let sink = LogLines()
        let logger = Logger(level: .debug, sink: sink.append).with(["uri": value])
        logger.info(message, ["other": value])
        return sink.all.joined(separator: "\n")
    }

    @Test func everyControlCharacterIsEscaped() {
        // Every C0 control, DEL and every C1 control, in a message and in field values.
        let controls = (0x00...0x1F).map { Unicode.Scalar(UInt8($0)) } + [Unicode.Scalar(UInt8(0x7F))]
            + (0x80...0x9F).map { Unicode.Scalar(UInt32($0))! } + [Unicode.Scalar(0x2028)!, Unicode.Scalar(0x2029)!]
        for scalar in controls {
            let text = "a\(Character(scalar))b"
            let line = logged(text, text)
            #expect(!line.unicodeScalars.contains { $0 == scalar }, "U+\(String(scalar.value, radix: 16)) reached the line raw")
            #expect(!line.contains("\n") && !line.contains("\r"))
        }
    }

    @Test func escapesAreReadable() {
        #expect(logged("esc", "clip\u{1B}[2J\r\n.mp4") == #"level=info msg=esc uri="clip\u001b[2J\r\n.mp4" other="clip\u001b[2J\r\n.mp4""#)
        #expect(logged("tab\there", "a\u{7F}\u{85}b") == #"level=info msg="tab\there" uri="a\u007f\u0085b" other="a\u007f\u0085b""#)
        #expect(logged("plain", "back\\slash \"q\"") == #"level=info msg=plain uri="back\\slash \"q\"" other="back\\slash \"q\"""#)
        #expect(logged("plain", "café.mp4") == "level=info msg=plain uri=café.mp4 other=café.mp4")
        #expect(logged("", "") == #"level=info msg="" uri="" other="""#)
    }

    @Test func terminalTextAndJSONEscapeTheSameCharacters() throws {
        #expect(escapingControlCharacters("clip\u{1B}[2J\u{9B}1m.mp4") == #"clip\u001b[2J\u009b1m.mp4"#)
        #expect(escapingControlCharacters("café.mp4") == "café.mp4")
        #expect(jsonStringLiteral("a\u{7F}\u{85}\u{2028}b\n") == #""a\u007f\u0085\u2028b\n""#)
    }
}
