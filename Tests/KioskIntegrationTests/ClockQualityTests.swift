import Foundation
import Testing
import TestSupport
@testable import Kiosk
@testable import KioskTests

/// The clock service's view of the system clock, as wall sync reports it.
@Suite struct ClockQualityTests {
    let unit = KioskTests.ClockQualityTests()   // its fixtures: chronySynced, chronyUnsynced, fakeCommand, pmcAnswer

    @Test func theProbeAsksChronyThenPTPAndSaysWhyNeitherAnswered() throws {
        let chrony = try unit.fakeCommand("chronyc", output: unit.chronySynced)
        let brokenChrony = try unit.fakeCommand("chronyc", output: "506 Cannot talk to daemon", status: 1)
        let pmc = try unit.fakeCommand("pmc", output: unit.pmcAnswer)
        let missing = TestMedia.folder + "/no-such-command"
        #expect(ClockQuality.probe(chronyc: chrony, pmc: missing).source == "chrony")
        #expect(ClockQuality.probe(chronyc: brokenChrony, pmc: pmc).source == "ptp")
        let neither = ClockQuality.probe(chronyc: brokenChrony, pmc: missing)
        #expect(neither.source == "none" && !neither.synchronized)
        #expect(neither.detail.contains("Cannot talk to daemon") && neither.detail.contains("pmc: not installed"), "\(neither.detail)")
        let hanging = try unit.fakeCommand("chronyc", output: "", script: "sleep 5")
        #expect(ClockQuality.probe(chronyc: hanging, pmc: missing, timeout: 0.2).detail.contains("no answer within 0.2 s"))
    }

    /// The clock service's command is answered when it exits, at most its timeout; also when a
    /// process it left behind holds its output and Foundation's socket (Foundation alone saw that
    /// end only at the timeout: the suite's parallel tests once caused it with `echo`).
    @Test func aCommandIsAnsweredWhenItExitsAndKilledAtItsTimeout() {
        var start = ContinuousClock.now
        let echo = ClockQuality.runCommand(["echo", "hi"], timeout: 30)
        #expect((try? echo.get()) == "hi\n")
        #expect(ContinuousClock.now - start < .seconds(10))
        start = ContinuousClock.now
        let leaving = ClockQuality.runCommand(["sh", "-c", "echo hi; sleep 30 &"], timeout: 25)
        #expect((try? leaving.get()) == "hi\n")
        #expect(ContinuousClock.now - start < .seconds(10))
        start = ContinuousClock.now
        let slow = ClockQuality.runCommand(["sleep", "20"], timeout: 0.3)
        let waited = ContinuousClock.now - start
        guard case .failure(let why) = slow else { Issue.record("sleep 20 answered within 0.3 s"); return }
        #expect(why.description == "no answer within 0.3 s")
        #expect(waited >= .milliseconds(300) && waited < .seconds(10))
    }
}
