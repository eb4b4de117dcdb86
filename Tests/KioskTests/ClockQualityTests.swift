import Foundation
import Testing
import TestSupport
@testable import Kiosk

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

    @Test func chronyTrackingIsRead() throws {
        let q = try #require(ClockQuality.chrony(trackingCSV: chronySynced))
        #expect(q.source == "chrony" && q.synchronized)
        #expect(abs(q.offset! - 0.000012) < 1e-12, "a negative correction means the clock is fast")
        #expect(q.rmsOffset == 0.00002 && q.stratum == 3 && q.reference == "ntp1.example")
        let lost = try #require(ClockQuality.chrony(trackingCSV: chronyUnsynced))
        #expect(!lost.synchronized && lost.detail.contains("Not synchronised"))
        #expect(ClockQuality.chrony(trackingCSV: "506 Cannot talk to daemon\n") == nil)
    }

    @Test func ptpTimeStatusIsRead() throws {
        let q = try #require(ClockQuality.ptp(timeStatus: pmcAnswer))
        #expect(q.source == "ptp" && q.synchronized && q.reference == "001122.fffe.334455")
        #expect(abs(q.offset! + 37e-9) < 1e-15)
        #expect(ClockQuality.ptp(timeStatus: "sending: GET TIME_STATUS_NP\n") == nil)
    }

    /// A stand-in for a clock service's command: prints `output`, exits `status`.
    func fakeCommand(_ name: String, output: String, status: Int32 = 0, script: String? = nil) throws -> String {
        let path = TestMedia.folder + "/\(name)-\(UUID().uuidString.prefix(8))"
        let body = script ?? "cat <<'END' >&\(status == 0 ? 1 : 2)\n\(output)\nEND\nexit \(status)"
        try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    @Test func healthIsDegradedWhenTheClockIsUnsynchronisedOrOverAVsyncOff() throws {
        let status = KioskStatus()
        status.update { $0.wallSync = "clock"; $0.displayFPS = 60 }
        status.update { $0.clockQuality = ClockQuality.chrony(trackingCSV: chronySynced) }
        #expect(status.health().status == "ok")
        status.update { $0.clockQuality?.offset = 0.025 }
        #expect(status.health().reasons.contains { $0.contains("25.0 ms off its reference (chrony)") }, "\(status.health())")
        status.update { $0.clockQuality = ClockQuality.chrony(trackingCSV: chronyUnsynced) }
        #expect(status.health().reasons.contains { $0.contains("not synchronised (chrony: leap status Not synchronised)") })
        // No clock service: reported by `wall-sync`, not a fault of the node.
        status.update { $0.clockQuality = .none("chronyc: not installed; pmc: not installed") }
        #expect(status.health().status == "ok")
        let controller = KioskController(status: status) { _ in .done }
        let report = try controller.property("wall-sync")
        #expect(report["mode"]?.stringValue == "clock")
        #expect(report["clock"]?["source"]?.stringValue == "none")
        #expect(report["clock"]?["detail"]?.stringValue?.contains("not installed") == true)
    }

}
