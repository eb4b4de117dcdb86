import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport
@testable import KioskTests

/// The `marqueectl` binary built next to this test binary, against a control server in this
/// process: its options and its documented exit statuses (0 ok, 1 degraded, 2 failed or usage,
/// 3 unreachable, 4 request refused).
@Suite struct MarqueectlTests {
    final class Health: ControlHandler, @unchecked Sendable {
        let status = Mutex("ok")
        let propertyNames = ["pause", "health"]
        func property(_ name: String) throws(ControlError) -> JSONValue {
            switch name {
            case "pause": return false
            case "health": return ["status": .string(status.withLock { $0 }), "reasons": []]
            default: throw .propertyNotFound
            }
        }
        func setProperty(_ name: String, to value: JSONValue) throws(ControlError) { throw .propertyError }
        func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue? { throw .invalidParameter }
    }

    static var binary: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marqueectl").path
    }

    func ctl(_ arguments: [String]) throws -> CommandResult {
        try Command.run(Self.binary, arguments)
    }

    @Test func optionsAndExitStatuses() throws {
        let handler = Health()
        let path = "/tmp/marqueectl-test-\(UUID().uuidString.prefix(8)).sock"
        let server = try ControlServer(path: path, handler: handler, logger: Logger(level: .error) { _ in })
        defer { server.stop() }

        let version = try ctl(["--version"])
        #expect(version.status == 0 && version.text.hasPrefix("marqueectl 0.1 "), "\(version.text)")
        #expect(try ctl(["--help"]).status == 0)

        // Both spellings of --socket reach the server.
        let spaced = try ctl(["--socket", path, "get", "pause"])
        #expect(spaced.status == 0 && spaced.text == "false\n", "\(spaced.text) \(spaced.errorText)")
        let joined = try ctl(["--socket=\(path)", "get", "pause"])
        #expect(joined.status == 0 && joined.text == "false\n", "\(joined.text) \(joined.errorText)")

        // 4: the request was refused (and the error is said).
        let refused = try ctl(["--socket=\(path)", "get", "no-such-property"])
        #expect(refused.status == 4 && refused.errorText.contains("property not found"), "\(refused.errorText)")
        #expect(try ctl(["--socket=\(path)", "set", "pause", "true"]).status == 4)

        // 0, 1, 2 from health.
        for (health, expected) in [("ok", Int32(0)), ("degraded", 1), ("stalled", 2), ("failed", 2)] {
            handler.status.withLock { $0 = health }
            let result = try ctl(["--socket=\(path)", "health"])
            #expect(result.status == expected, "\(health): \(result.status)")
        }

        // 2: usage errors, before any connection.
        for usage in [[], ["--socket"], ["--socket="], ["--bogus", "status"], ["frobnicate"], ["get"],
                      ["--socket=\(path)", "set", "pause", "not json"], ["--socket=\(path)", "seek", "soon"]] {
            let result = try ctl(usage)
            #expect(result.status == 2, "\(usage): \(result.status) \(result.errorText)")
        }

        // 3: nothing listens there.
        let unreachable = try ctl(["--socket=/tmp/marqueectl-nothing-\(UUID().uuidString.prefix(8)).sock", "status"])
        #expect(unreachable.status == 3 && unreachable.errorText.contains("cannot connect"), "\(unreachable.errorText)")
    }

    /// marqueectl is a client of the socket: it links none of the media, GL or display libraries
    /// (issue 14). `ldd` lists what the dynamic loader would load for it.
    @Test func linksNoMediaGLOrDisplayLibrary() throws {
        let ldd = ["/usr/bin/ldd", "/bin/ldd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let ldd else { try Test.cancel("no ldd on this machine to list marqueectl's libraries") }
        let result = try Command.run(ldd, [Self.binary])
        #expect(result.status == 0, "\(result.text) \(result.errorText)")
        // Something was listed (the C library at least), so an empty answer cannot pass.
        #expect(result.text.contains("libc.so"), "\(result.text)")
        let libraries = result.text.split(separator: "\n").compactMap {
            $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init)
        }
        for forbidden in ["libavcodec", "libavformat", "libavutil", "libswscale", "libEGL", "libGLES", "libdrm", "libgbm"] {
            #expect(!libraries.contains { $0.hasPrefix(forbidden) }, "marqueectl links \(forbidden): \(result.text)")
        }
    }
}
