import CFFmpeg
import CShim
import Playback

/// A failure to open or decode a file: names the file, what was being done and FFmpeg's own reason
/// (`call`, `code` and `reason` come from `CallError`).
public struct MediaError: CallError {
    public let uri: String
    public let failure: CallFailure

    public init(uri: String, call: String, code: Int32 = 0, reason: String) {
        self.uri = uri
        failure = CallFailure(call: call, code: code, reason: reason)
    }

    init(uri: String, call: String, averror code: Int32) {
        self.init(uri: uri, call: call, code: code, reason: ffmpegErrorString(code))
    }

    public var subject: String { uri }
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
