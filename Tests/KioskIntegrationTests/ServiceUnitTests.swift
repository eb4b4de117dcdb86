import Foundation
import Testing
import TestSupport
@testable import KioskTests

/// deploy/marquee.service as systemd reads it: `systemd-analyze verify` must accept it without a word.
/// The installed unit runs /usr/local/bin/marquee, which only exists once installed, so the check
/// verifies a copy whose ExecStart names the marquee built next to this test bundle; any other
/// complaint fails the test. (deploy/vm/boot-test runs the unit for real under systemd in a VM.)
enum ServiceUnit {
    static let installedBinary = "/usr/local/bin/marquee"

    static var analyzer: String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/systemd-analyze" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
    static var analyzerMissing: Bool { analyzer == nil }

    /// The marquee built next to this test bundle.
    static var marquee: String? {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.isExecutableFile(atPath: dir.path + "/marquee") { return dir.path + "/marquee" }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// Writes `text` as marquee.service into a fresh folder and runs `systemd-analyze verify` on it.
    static func verify(_ text: String) throws -> (status: Int32, output: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unit-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let unit = folder.appendingPathComponent("marquee.service")
        try text.write(to: unit, atomically: true, encoding: .utf8)
        let result = try Command.run(try #require(analyzer), ["verify", unit.path], directory: folder.path, mergeErrors: true)
        return (result.status, result.text)
    }

    /// `systemd-analyze security --offline=true` on `text` written as marquee.service: the overall
    /// exposure level it prints (0 = locked down, 10 = exposed), and its whole output.
    static func exposure(_ text: String) throws -> (level: Double?, output: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unit-security-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let unit = folder.appendingPathComponent("marquee.service")
        try text.write(to: unit, atomically: true, encoding: .utf8)
        let result = try Command.run(try #require(analyzer), ["security", "--offline=true", "--no-pager", unit.path],
                                     directory: folder.path, mergeErrors: true)
        // "→ Overall exposure level for marquee.service: 1.5 OK 🙂"
        let line = result.text.split(separator: "\n").first { $0.contains("Overall exposure level for marquee.service:") }
        let level = line.flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        return (level, result.text)
    }

    /// deploy/marquee.service with its ExecStart binary replaced by `binary`.
    static func unit(runningBinary binary: String) throws -> String {
        let text = try String(contentsOfFile: Command.repository + "/deploy/marquee.service", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let execStarts = lines.filter { $0.hasPrefix("ExecStart=") }
        #expect(execStarts.count == 1, "expected one ExecStart line, found \(execStarts)")
        #expect(execStarts.first?.hasPrefix("ExecStart=\(installedBinary) ") == true,
                "ExecStart should run the installed \(installedBinary) (install.sh puts it there): \(execStarts)")
        return lines.map { $0.hasPrefix("ExecStart=\(installedBinary)") ? "ExecStart=\(binary)" + $0.dropFirst("ExecStart=\(installedBinary)".count) : String($0) }
            .joined(separator: "\n")
    }
}

@Suite("systemd unit", .disabled(if: ServiceUnit.analyzerMissing, "systemd-analyze is not installed (make test installs systemd)"))
struct ServiceUnitTests {
    @Test("systemd-analyze verify accepts deploy/marquee.service with nothing to say")
    func verifyAccepts() throws {
        let marquee = try #require(ServiceUnit.marquee, "no marquee binary next to the test bundle (swift build)")
        let result = try ServiceUnit.verify(try ServiceUnit.unit(runningBinary: marquee))
        #expect(result.status == 0, "systemd-analyze verify exited with \(result.status): \(result.output)")
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                "systemd-analyze verify complained: \(result.output)")
    }

    @Test("systemd-analyze security rates deploy/marquee.service at an exposure of 3.0 or less")
    func exposureIsLow() throws {
        let marquee = try #require(ServiceUnit.marquee, "no marquee binary next to the test bundle (swift build)")
        let result = try ServiceUnit.exposure(try ServiceUnit.unit(runningBinary: marquee))
        let level = try #require(result.level, "no exposure level in: \(result.output)")
        #expect(level <= 3.0, "exposure \(level):\n\(result.output)")
    }

    @Test("the exposure check can fail: the unit without its sandbox rates over 3.0")
    func exposureOfAnUnhardenedUnitIsHigh() throws {
        let marquee = try #require(ServiceUnit.marquee, "no marquee binary next to the test bundle (swift build)")
        let text = try ServiceUnit.unit(runningBinary: marquee)
        let sandbox = try #require(text.range(of: "# Sandbox."), "the unit has no '# Sandbox.' section")
        let install = try #require(text.range(of: "[Install]"))
        let level = try #require(try ServiceUnit.exposure(String(text[..<sandbox.lowerBound] + text[install.lowerBound...])).level)
        #expect(level > 3.0, "exposure \(level) without the sandbox")
    }

    @Test("the check can fail: a unit with a bad setting is refused")
    func verifyRefusesBrokenUnit() throws {
        let marquee = try #require(ServiceUnit.marquee, "no marquee binary next to the test bundle (swift build)")
        let broken = try ServiceUnit.unit(runningBinary: marquee).replacingOccurrences(of: "Type=notify", with: "Type=notifi")
        let result = try ServiceUnit.verify(broken)
        #expect(result.output.contains("notifi"), "systemd-analyze verify said nothing about Type=notifi: \(result.output)")
    }
}
