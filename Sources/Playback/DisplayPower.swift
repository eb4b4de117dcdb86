import Foundation

/// An output whose display can be put into standby and woken (a schedule's `display: off`,
/// `set_property display-power`): off, the screen sees no signal (KMS: the CRTC inactive; DPMS
/// off on the legacy API) and the output is not ready (`OutputDriver.isReady`), so the
/// presentation loop asks its players for nothing and decoding stops. On, the display is set up
/// again (a modeset) and presentation goes on. Called on the output's presentation thread.
public protocol DisplayPowerControl: AnyObject {
    /// False while the display is off.
    var isDisplayOn: Bool { get }
    /// Puts the display into standby (`false`) or wakes it (`true`); nothing when it is so already.
    func setDisplayPower(_ on: Bool) throws
}
