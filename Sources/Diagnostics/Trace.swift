import Foundation
import Timing
import Synchronization

/// The presentation trace: JSON Lines, one line each time the picture on an output changes.
/// `{"type":"frame","vsync":120,"t":2.0,"output":"headless-0","item":0,"uri":"a.mp4","pts":1.966667}`
/// and `{"type":"blank",...}` when an output shows no video. Readers ignore types they do not know.
public final class TraceWriter: Sendable {
    private let handle: FileHandle
    /// Lines not yet written, and when they were last written (monotonic nanoseconds). Written
    /// with the lock held, so lines reach the file in order; at least every second, so that a
    /// reader following the file (`tail -f`, a test) is never more than a second behind.
    private let buffer = Mutex((lines: [UInt8](), writtenAt: DispatchTime.now().uptimeNanoseconds))
    /// Whether the first frame line (and the start's marks after it) is written.
    private let firstFrameWritten = Atomic(false)

    public struct OpenError: LocalizedError, CustomStringConvertible {
        public var errorDescription: String? { description }
        public let path: String
        public let reason: String
        public var description: String { "cannot write trace file \(path): \(reason)" }
    }

    public init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw OpenError(path: path, reason: String(cString: strerror(errno)))
        }
        self.handle = handle
        buffer.withLock { $0.lines.reserveCapacity(1 << 16) }
    }

    deinit {
        flush()
        try? handle.close()
    }

    /// A frame line; `wall` is the Unix time (seconds) at which it was shown; `late` (only when
    /// above 0) the vsyncs it came after the one it was due on (decoded or drawn too late);
    /// `extraFields`: more of the object's members, each `,"key":value` (Playback adds a transition's mix).
    public func frame(vsync: Int64, t: MediaTime, output: String, item: Int, uri: String, pts: MediaTime,
                      wall: Double = Date().timeIntervalSince1970, late: Int64 = 0, extraFields: String) {
        let extra = (late > 0 ? ",\"late\":\(late)" : "") + extraFields
        append("{\"type\":\"frame\",\"vsync\":\(vsync),\"t\":\(t.seconds.formatted(decimals: 6)),\"output\":\(jsonStringLiteral(output)),\"item\":\(item),\"uri\":\(jsonStringLiteral(uri)),\"pts\":\(pts.seconds.formatted(decimals: 6)),\"wall\":\(wall.formatted(decimals: 6))\(extra)}")
        if !firstFrameWritten.exchange(true, ordering: .relaxed) {
            StartupMarks.mark("first-present")
            append(StartupMarks.traceLine())
        }
    }

    public func blank(vsync: Int64, t: MediaTime, output: String) {
        append("{\"type\":\"blank\",\"vsync\":\(vsync),\"t\":\(t.seconds.formatted(decimals: 6)),\"output\":\(jsonStringLiteral(output))}")
    }

    /// Any other line, already encoded as one JSON object.
    public func event(_ jsonObject: String) { append(jsonObject) }

    private func append(_ line: String) {
        let due = buffer.withLock { buffer in
            buffer.lines.append(contentsOf: line.utf8)
            buffer.lines.append(0x0A)
            return buffer.lines.count > 60_000 || DispatchTime.now().uptimeNanoseconds &- buffer.writtenAt > 1_000_000_000
        }
        if due { flush() }
    }

    public func flush() {
        buffer.withLock { buffer in
            buffer.writtenAt = DispatchTime.now().uptimeNanoseconds
            guard !buffer.lines.isEmpty else { return }
            handle.write(Data(buffer.lines))
            buffer.lines.removeAll(keepingCapacity: true)
        }
    }
}

/// `s` as a JSON string literal, quotes included.
public func jsonStringLiteral(_ s: String) -> String {
    // Most text needs no escape: one pass over the bytes finds out (a screenshot's base64 is megabytes).
    // 0xC2 and 0xE2 lead the UTF-8 of the C1 controls and of U+2028/U+2029.
    if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }) {
        return "\"" + s + "\""
    }
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case let c where c.isControlCharacter: out += c.unicodeEscape  // C1 and DEL too: never raw on a terminal
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
