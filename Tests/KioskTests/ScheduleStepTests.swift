import Foundation
@testable import Kiosk
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
import TestSupport

@Suite struct ScheduleStepTests {
    /// A display-off entry from 06:00 UTC on a virtual clock that starts at 05:59:50 (vsync 600
    /// is 06:00:00 at 60 Hz).
    func setUp() throws -> (ScheduleStep, FakePlayback, OutputPower, SessionState, KioskStatus) {
        var config = try KioskConfig.parse("""
            {"playlist": [{"uri": "loop.mp4"}], "timezone": "UTC",
             "schedule": [{"name": "dark", "from": "06:00", "to": "07:00", "switch": "exact", "display": "off"}]}
            """, baseDirectory: "/media")
        config.virtualClockStart = utc("2026-03-23T05:59:50Z")
        let schedule = try #require(config.schedule)
        let status = KioskStatus()
        let state = SessionState(.init(config: config, unselectedConfig: config))
        let power = OutputPower(status: status, logger: quiet) { _ in }
        let fake = FakePlayback(lengths: [nil: 97, 0: 97], playing: nil)
        let step = ScheduleStep(schedule: schedule, active: nil, config: config,
                                clock: VirtualVsyncClock(refresh: RefreshRate(numerator: 60)), playback: fake, state: state,
                                power: power, trace: nil, outputName: "headless-0", logger: quiet,
                                onStatus: { schedule in status.update { $0.schedule = schedule } })
        return (step, fake, power, state, status)
    }

    @Test func aDisplayOffEntryDarkensTheOutputOnTheVsyncOfItsChange() throws {
        let (step, fake, power, state, status) = try setUp()
        for n in Int64(0)...700 {
            fake.advance(to: n)
            step.vsync(n)
            #expect(power.state == (n < 600 ? .on : .off(.schedule)), "vsync \(n)")
            if power.state != .on { break }
        }
        #expect(fake.starts.last?.vsync == 600 && fake.starts.last?.entry == 0)
        #expect(status.snapshot.schedule?.name == "dark" && status.snapshot.schedule?.display == "off")
        #expect(status.snapshot.displayOff == "off (scheduled)")
        #expect(state.withLock { $0.scheduleWallTime } == utc("2026-03-23T06:00:00Z"))
        #expect(power.vsync == 600)
    }

    /// A reload without a schedule: the step stops switching.
    @Test func aReloadWithoutAScheduleStopsIt() throws {
        let (step, fake, power, state, _) = try setUp()
        state.withLock { s in
            s.unselectedConfig.schedule = nil
            s.scheduleReloaded = true
        }
        for n in Int64(0)...700 {
            fake.advance(to: n)
            step.vsync(n)
        }
        #expect(power.state == .on && fake.starts.count == 1)
        #expect(state.withLock { $0.scheduleReloaded } == false)
    }
}
