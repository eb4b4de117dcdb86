import Foundation
import Testing
import TestSupport
@testable import Kiosk
@testable import KioskTests

/// The clock service's view of the system clock, as wall sync reports it.
@Suite struct ClockQualityTests {
    // What `chronyc -c tracking` prints, synchronised (the clock 12 µs fast) and not.
    let chronySynced = "C0A80001,ntp1.example,3,1796020000.123456789,-0.000012000,0.000003000,0.000020000,-12.345,0.001,0.050,0.001234,0.000567,64.4,Normal\n"
    let chronyUnsynced = "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,1.000000000,1.000000000,0.0,Not synchronised\n"
    let pmcAnswer = """
        sending: GET TIME_STATUS_NP
        \t90e2ba.fffe.0d3a40-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP
        \t\tmaster_offset              -37
        \t\tingress_time               1796020000123456789
        \t\tgmPresent                  true
        \t\tgmIdentity                 001122.fffe.334455
        """

    /// A stand-in for a clock service's command: prints `output`, exits `status`.
    func fakeCommand(_ name: String, output: String, status: Int32 = 0, script: String? = nil) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString.prefix(8))"
        let body = script ?? "cat <<'END' >&\(status == 0 ? 1 : 2)\n\(output)\nEND\nexit \(status)"
        try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    @Test func theProbeAsksChronyThenPTPAndSaysWhyNeitherAnswered() throws {
        let chrony = try fakeCommand("chronyc", output: chronySynced)
        let brokenChrony = try fakeCommand("chronyc", output: "506 Cannot talk to daemon", status: 1)
        let pmc = try fakeCommand("pmc", output: pmcAnswer)
        let missing = TestMedia.folder + "/no-such-command"
        #expect(ClockQuality.probe(chronyc: chrony, pmc: missing).source == "chrony")
        #expect(ClockQuality.probe(chronyc: brokenChrony, pmc: pmc).source == "ptp")
        let neither = ClockQuality.probe(chronyc: brokenChrony, pmc: missing)
        #expect(neither.source == "none" && !neither.synchronized)
        #expect(neither.detail.contains("Cannot talk to daemon") && neither.detail.contains("pmc: not installed"), "\(neither.detail)")
        let hanging = try fakeCommand("chronyc", output: "", script: "sleep 5")
        #expect(ClockQuality.probe(chronyc: hanging, pmc: missing, timeout: 0.2).detail.contains("no answer within 0.2 s"))
    }

    /// The clock service's command is waited for on its exit (not polled), at most its timeout.
    @Test func aCommandIsAnsweredWhenItExitsAndKilledAtItsTimeout() {
        var start = ContinuousClock.now
        let echo = ClockQuality.runCommand(["echo", "hi"], timeout: 30)
        #expect((try? echo.get()) == "hi\n")
        #expect(ContinuousClock.now - start < .seconds(10))
        start = ContinuousClock.now
        let slow = ClockQuality.runCommand(["sleep", "20"], timeout: 0.3)
        let waited = ContinuousClock.now - start
        guard case .failure(let why) = slow else { Issue.record("sleep 20 answered within 0.3 s"); return }
        #expect(why.description == "no answer within 0.3 s")
        #expect(waited >= .milliseconds(300) && waited < .seconds(10))
    }
}
