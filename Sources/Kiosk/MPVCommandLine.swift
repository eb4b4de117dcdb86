import Foundation

/// mpv's plain-text command syntax (input.conf's, which its IPC also takes for a line not starting
/// with `{`): words separated by blanks; `"..."` with C-style escapes, `'...'` taken as written, and
/// `` `X...X` `` (any character X but a blank, closed by X and a backtick) quote a word; `;` separates commands; `#`
/// starts a comment; the prefixes mpv accepts before a command name (`no-osd`, `raw`, ...) are
/// dropped, since Marquee shows no OSD and expands no properties.
public enum MPVCommandLine {
    public struct SyntaxError: LocalizedError, Equatable, CustomStringConvertible {
        public var errorDescription: String? { description }
        public let description: String
    }

    /// The prefixes mpv allows before a command name.
    static let prefixes: Set<String> = ["no-osd", "osd-auto", "osd-bar", "osd-msg", "osd-msg-bar", "raw", "expand-properties",
                                        "repeatable", "async", "sync"]

    /// The commands on `line`, each its name then its arguments (never an empty list).
    public static func parse(_ line: String) throws(SyntaxError) -> [[String]] {
        var commands: [[String]] = []
        var words: [String] = []
        var chars = Array(line.unicodeScalars)[...]
        func endCommand() {
            while let first = words.first, prefixes.contains(first), words.count > 1 { words.removeFirst() }
            if !words.isEmpty { commands.append(words) }
            words = []
        }
        while let c = chars.first {
            switch c {
            case " ", "\t", "\r", "\n":
                chars.removeFirst()
            case "#":
                chars.removeAll()
            case ";":
                chars.removeFirst()
                endCommand()
            default:
                words.append(try word(&chars))
            }
        }
        endCommand()
        return commands
    }

    /// One word (quoted or not), from its first character up to a blank, `;` or the end.
    private static func word(_ chars: inout ArraySlice<Unicode.Scalar>) throws(SyntaxError) -> String {
        var out = String.UnicodeScalarView()
        switch chars.first {
        case "\"":
            chars.removeFirst()
            while true {
                guard let c = chars.popFirst() else { throw SyntaxError(description: "unterminated double quote") }
                if c == "\"" { break }
                if c == "\\" { out.append(try escape(&chars)) } else { out.append(c) }
            }
        case "'":
            chars.removeFirst()
            guard let end = chars.firstIndex(of: "'") else { throw SyntaxError(description: "unterminated single quote") }
            out.append(contentsOf: chars[..<end])
            chars = chars[(end + 1)...]
        case "`":
            chars.removeFirst()
            guard let mark = chars.popFirst(), mark != " " else { throw SyntaxError(description: "custom quote without its mark") }
            // Ends at the mark followed by a backtick.
            var end = chars.startIndex
            while true {
                guard let at = chars[end...].firstIndex(of: mark) else { throw SyntaxError(description: "unterminated custom quote `\(mark)") }
                if chars.index(after: at) < chars.endIndex && chars[chars.index(after: at)] == "`" {
                    end = at
                    break
                }
                end = chars.index(after: at)
            }
            out.append(contentsOf: chars[..<end])
            chars = chars[(end + 2)...]
        default:
            while let c = chars.first, !" \t\r\n;".unicodeScalars.contains(c) {
                out.append(c)
                chars.removeFirst()
            }
        }
        return String(out)
    }

    /// The character a backslash escape in double quotes stands for (after the backslash).
    private static func escape(_ chars: inout ArraySlice<Unicode.Scalar>) throws(SyntaxError) -> Unicode.Scalar {
        guard let c = chars.popFirst() else { throw SyntaxError(description: "backslash at the end of the line") }
        switch c {
        case "\"", "\\", "'": return c
        case "n": return "\n"
        case "t": return "\t"
        case "r": return "\r"
        case "e": return "\u{1B}"
        case "x", "u":
            let length = c == "x" ? 2 : 4
            let digits = chars.prefix(length)
            guard digits.count == length, let code = hexValue(digits.map(\.value)), let scalar = Unicode.Scalar(code) else {
                throw SyntaxError(description: "bad \\\(c) escape")
            }
            chars.removeFirst(length)
            return scalar
        default:
            throw SyntaxError(description: "unknown escape \\\(c)")
        }
    }
}
