import Foundation
@testable import Kiosk
import Testing
import TestSupport

/// Ten marquee processes on one Mosquitto broker (started here on 127.0.0.1): each reports itself
/// online with its status; one command to their group pauses all ten within a second; with the
/// broker gone for a while they play on, and all ten come back once it returns.
@Suite(.serialized) struct FleetTests {
    struct Missing: Error, CustomStringConvertible { let description: String }

    /// A mosquitto on 127.0.0.1:`port`, anonymous, no persistence.
    final class Broker {
        let port: UInt16
        let folder: String
        var process: Process?

        init(folder: String) throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto") else {
                throw Missing(description: "/usr/sbin/mosquitto is missing (make test installs mosquitto)")
            }
            self.folder = folder
            let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, length) } }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) } }
            port = UInt16(bigEndian: address.sin_port)
            close(s)
            try "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\n".write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
            try start()
        }

        func start() throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
            p.arguments = ["-c", folder + "/mosquitto.conf"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            process = p
            Thread.sleep(forTimeInterval: 0.3)
        }

        /// Killed (SIGKILL: a broker that dies, no goodbye; mosquitto run as root and turned into
        /// its own user does not always end on SIGTERM).
        func stop() {
            if let process, process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            process = nil
        }

        deinit { stop() }
    }

    /// The latest message of each topic under marquee/ (mosquitto_sub, one line per message).
    final class Watcher: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var latest: [String: String] = [:]
        private var buffer = Data()

        init(port: UInt16) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
            process.arguments = ["-p", "\(port)", "-v", "-t", "marquee/+/online", "-t", "marquee/+/status"]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self else { return }
                lock.withLock {
                    buffer.append(data)
                    while let newline = buffer.firstIndex(of: 0x0A) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        guard let space = line.firstIndex(of: " ") else { continue }
                        latest[String(line[..<space])] = String(line[line.index(after: space)...])
                    }
                }
            }
            try process.run()
        }

        subscript(topic: String) -> String? { lock.withLock { latest[topic] } }

        func status(_ id: String) -> JSONValue? { self["marquee/\(id)/status"].flatMap { try? JSONParser.parse($0) } }

        deinit {
            if process.isRunning { process.terminate() }
        }
    }

    func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    func publish(_ port: UInt16, _ topic: String, _ message: String) throws {
        let result = try Command.run("/usr/bin/mosquitto_pub", ["-p", "\(port)", "-q", "1", "-t", topic, "-m", message], timeout: 10)
        #expect(result.status == 0, "\(result.errorText)")
    }

    @Test func tenPlayersOnOneBroker() throws {
        let folder = TestMedia.folder + "/fleet-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let broker = try Broker(folder: folder)
        defer { broker.stop() }
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marquee")
        let ids = (0..<10).map { "player\($0)" }
        var players: [Process] = []
        defer { for p in players where p.isRunning { p.terminate() } }
        for id in ids {
            let config = folder + "/\(id).json"
            try #"""
                {"playlist": [{"uri": "\#(clip)"}], "mqtt": {"broker": "127.0.0.1:\#(broker.port)", "id": "\#(id)", "groups": ["lobby"], "statusInterval": 1}}
                """#.write(toFile: config, atomically: true, encoding: .utf8)
            let p = Process()
            p.executableURL = binary
            p.arguments = ["--config", config, "--output", "headless", "--mode", "160x90@30", "--clock", "real", "--exit-after", "120",
                           "--socket", "none", "--trace", folder + "/\(id).jsonl"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try p.run()
            players.append(p)
        }
        var watcher = try Watcher(port: broker.port)
        let allOnline = waitFor(60) { ids.allSatisfy { watcher["marquee/\($0)/online"] == "online" && watcher.status($0)?["pause"] == false } }
        #expect(allOnline, "online: \(ids.filter { watcher["marquee/\($0)/online"] == "online" })")

        // One command to the group: every status says paused within a second.
        let sent = Date()
        try publish(broker.port, "marquee/group/lobby/command", #"{"command":["set_property","pause",true]}"#)
        let paused = waitFor(5) { ids.allSatisfy { watcher.status($0)?["pause"] == true } }
        let pauseSeconds = Date().timeIntervalSince(sent)
        #expect(paused && pauseSeconds < 1, "all ten paused after \(pauseSeconds) s")
        try publish(broker.port, "marquee/all/command", #"{"command":["set_property","pause",false]}"#)
        #expect(waitFor(5) { ids.allSatisfy { watcher.status($0)?["pause"] == false } })

        // The broker gone for 10 s: every player plays on.
        Thread.sleep(forTimeInterval: 1)
        let outage = Date().timeIntervalSince1970
        broker.stop()
        Thread.sleep(forTimeInterval: 10)
        let back = Date().timeIntervalSince1970
        let running = players.filter { $0.isRunning }.count
        #expect(running == 10)
        try broker.start()
        watcher = try Watcher(port: broker.port)
        let reconnected = waitFor(30) { ids.allSatisfy { watcher["marquee/\($0)/online"] == "online" && watcher.status($0) != nil } }
        #expect(reconnected, "back online: \(ids.filter { watcher["marquee/\($0)/online"] == "online" })")

        // Each trace: a frame every vsync all through the outage (30 a second). (Ten players
        // starting at once on a 2-core machine drop frames in their first second: not counted.)
        for p in players { p.interrupt() }
        for p in players { p.waitUntilExit() }
        for id in ids {
            let lines = try String(contentsOfFile: folder + "/\(id).jsonl", encoding: .utf8).split(separator: "\n")
            let walls = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["type"] as? String == "frame" }.compactMap { $0["wall"] as? Double }
            let during = walls.filter { $0 > outage + 0.5 && $0 < back - 0.5 }
            let expected = 30 * (back - outage - 1)
            let longest = zip(during, during.dropFirst()).map { $1 - $0 }.max() ?? .infinity
            #expect(Double(during.count) >= 0.95 * expected && longest < 0.25,
                    "\(id): \(during.count) frames of \(Int(expected)) in the outage, longest step \(longest) s")
        }
    }
}
