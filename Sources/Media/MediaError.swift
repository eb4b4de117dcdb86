import CFFmpeg
import CShim
import Playback

/// A failure to open or decode a file: names the file, what was being done and FFmpeg's own reason.
public struct MediaError: Error, CustomStringConvertible, Sendable {
    public let uri: String
    /// The step that failed, e.g. `avformat_open_input`.
    public let call: String
    /// FFmpeg's return code (a negative AVERROR), or 0 when the failure is not an FFmpeg call's.
    public let code: Int32
    public let reason: String

    public init(uri: String, call: String, code: Int32 = 0, reason: String) {
        self.uri = uri
        self.call = call
        self.code = code
        self.reason = reason
    }

    init(uri: String, call: String, averror code: Int32) {
        self.init(uri: uri, call: call, code: code, reason: ffmpegErrorString(code))
    }

    public var description: String { "\(uri): \(call) failed: \(reason)" }
}

/// FFmpeg's message for an AVERROR code (what `av_err2str` gives in C).
func ffmpegErrorString(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    if av_strerror(code, &buffer, buffer.count) < 0 {
        return "error code \(code)"
    }
    return String(nullTerminated: buffer)
}

let averrorEOF = mq_averror_eof()
let averrorEAGAIN = mq_averror(EAGAIN)
let noPTS = mq_av_nopts_value()
