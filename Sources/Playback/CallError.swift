import Foundation

/// What a failed call of a C library says of itself: the call, the library's return code and its
/// reason in words. Kept here, the lowest module both use, so that MediaError (FFmpeg) and
/// AudioError (ALSA) describe themselves one way.
public struct CallFailure: Sendable, Equatable {
    /// The call that failed, e.g. `avformat_open_input` or `snd_pcm_open`, or the wait that timed out.
    public let call: String
    /// The library's return code (a negative AVERROR or errno), or 0 when the failure is not a call's.
    public let code: Int32
    public let reason: String

    public init(call: String, code: Int32 = 0, reason: String) {
        self.call = call
        self.code = code
        self.reason = reason
    }
}

/// An error of a failed call on something (a file, a device): `SUBJECT: CALL failed: REASON`, which
/// is also its `localizedDescription`.
public protocol CallError: LocalizedError, CustomStringConvertible, Sendable {
    /// What the message names first: the file's URI, `audio device "hdmi"`.
    var subject: String { get }
    var failure: CallFailure { get }
}

extension CallError {
    public var call: String { failure.call }
    public var code: Int32 { failure.code }
    public var reason: String { failure.reason }
    public var description: String { "\(subject): \(call) failed: \(reason)" }
    public var errorDescription: String? { description }
}
