import CALSA
import Playback

/// A failure of the sound output: names the device, the ALSA call (or the wait) that failed and
/// ALSA's reason (`snd_strerror`; `call`, `code` and `reason` come from `CallError`).
public struct AudioError: CallError, Equatable {
    /// The ALSA device name as given (`default`, `hdmi:CARD=PCH,DEV=0`, ...).
    public let device: String
    public let failure: CallFailure
    public var subject: String { "audio device \"\(device)\"" }

    public init(device: String, call: String, code: Int32 = 0, reason: String) {
        self.device = device
        failure = CallFailure(call: call, code: code, reason: reason)
    }

    init(device: String, call: String, alsa code: Int32) {
        self.init(device: device, call: call, code: code, reason: alsaErrorString(code))
    }
}

/// ALSA's message for a (negative) return code.
func alsaErrorString(_ code: Int32) -> String {
    guard let message = snd_strerror(code) else { return "error code \(code)" }
    return String(cString: message)
}
