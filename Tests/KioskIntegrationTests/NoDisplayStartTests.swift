import Display
import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Issue 32: on a machine with no display controller (a server, a VM without a GPU), `auto` used to
/// wait `display.waitForCard` (10 s) for a card that could never come before playing headless.
@Suite struct NoDisplayStartTests {
    @Test func autoOnAMachineWithoutADisplayControllerPlaysHeadlessWithoutWaiting() throws {
        guard displayHardware() == .none else {
            print("skipped: this machine has display hardware (\(displayHardware())), so auto rightly waits for its card")
            return
        }
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let files = ConfigFileKindTests()
        let config = try files.config(#"{"playlist": [{"uri": "\#(clip)"}]}"#)
        let (status, output) = try files.marquee(["--config", config, "--exit-after", "1"], timeout: 9)
        #expect(status == 0, "marquee did not end within 9 s (the card wait is 10 s): \(output)")
        #expect(output.contains("headless without waiting") && !output.contains("msg=\"waiting for a display card\""), "\(output)")
    }
}
