import CALSA

/// A failure of the sound output: names the device, the ALSA call (or the wait) that failed and
/// ALSA's reason (`snd_strerror`).
public struct AudioError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The ALSA device name as given (`default`, `hdmi:CARD=PCH,DEV=0`, ...).
    public let device: String
    /// The call that failed, e.g. `snd_pcm_open`, or the wait that timed out.
    public let call: String
    /// ALSA's return code (a negative errno), or 0 when the failure is not an ALSA call's.
    public let code: Int32
    public let reason: String

    public init(device: String, call: String, code: Int32 = 0, reason: String) {
        self.device = device
        self.call = call
        self.code = code
        self.reason = reason
    }

    init(device: String, call: String, alsa code: Int32) {
        self.init(device: device, call: call, code: code, reason: alsaErrorString(code))
    }

    public var description: String { "audio device \"\(device)\": \(call) failed: \(reason)" }
}

/// ALSA's message for a (negative) return code.
func alsaErrorString(_ code: Int32) -> String {
    guard let message = snd_strerror(code) else { return "error code \(code)" }
    return String(cString: message)
}
