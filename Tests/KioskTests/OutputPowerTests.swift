import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport

@Suite struct OutputPowerTests {
    /// A display's standby control that can refuse.
    final class FakeDisplay: DisplayPowerControl, @unchecked Sendable {
        var isDisplayOn = true
        var refuses = false
        struct Refused: Error {}
        func setDisplayPower(_ on: Bool) throws {
            if refuses { throw Refused() }
            isDisplayOn = on
        }
    }

    let status = KioskStatus()
    let lines = LogLines()
    /// What the output was told to play (true) or pause (false), in order.
    final class Played: Sendable {
        let calls = Mutex<[Bool]>([])
    }
    let played = Played()

    func power() -> OutputPower {
        OutputPower(status: status, logger: Logger(level: .info, sink: lines.append)) { [played] on in played.calls.withLock { $0.append(on) } }
    }

    @Test func offAndOnAgainSaysWhoAndPausesWhatPlays() {
        let power = power()
        let display = FakeDisplay()
        power.control = display
        #expect(power.state == .on)
        power.set(false, by: .schedule, vsync: 120)
        #expect(power.state == .off(.schedule) && !display.isDisplayOn)
        #expect(status.snapshot.displayOff == "off (scheduled)")
        power.set(true, by: .command)
        #expect(power.state == .on && display.isDisplayOn && status.snapshot.displayOff == nil)
        power.set(false, by: .command)
        #expect(power.state == .off(.command) && status.snapshot.displayOff == "off (by command)")
        #expect(played.calls.withLock { $0 } == [false, true, false])
        #expect(lines.all.filter { $0.contains("display power") }.count == 3)
        #expect(lines.all.contains { $0.contains("why=\"on (by command)\"") || $0.contains("why=on (by command)") })
    }

    @Test func aControlThatFailsLeavesTheStateAsItWas() {
        let power = power()
        let display = FakeDisplay()
        display.refuses = true
        power.control = display
        power.set(false, by: .command)
        #expect(power.state == .on && status.snapshot.displayOff == nil)
        #expect(played.calls.withLock { $0 }.isEmpty)
        #expect(lines.all.contains { $0.contains("display power cannot be changed") })
    }

    /// An output without a standby control still stops its pictures.
    @Test func withoutAControlOnlyThePicturesStop() {
        let power = power()
        power.set(false, by: .schedule)
        #expect(power.state == .off(.schedule) && played.calls.withLock { $0 } == [false])
    }
}
