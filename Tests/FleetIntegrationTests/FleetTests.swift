import Foundation
@testable import Kiosk
import Testing
import TestSupport

/// Ten marquee processes on one Mosquitto broker (started here on 127.0.0.1): each reports itself
/// online with its status; one command to their group pauses all ten within a second; with the
/// broker gone for a minute they play on, and all ten come back once it returns and obey the group.
@Suite(.serialized) struct FleetTests {
    struct Missing: Error, CustomStringConvertible { let description: String }

    /// A mosquitto on 127.0.0.1:`port`, anonymous, no persistence.
    final class Broker {
        let port: UInt16
        let folder: String
        var process: Process?

        /// `settings`: the listener's lines after its `listener` line (default: anonymous clients).
        init(folder: String, settings: String = "allow_anonymous true\n") throws {
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
            try "listener \(port) 127.0.0.1\n\(settings)persistence false\n".write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
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
            if let process, process.end == nil {
                kill(process.processIdentifier, SIGKILL)
                _ = process.waitForEnd(timeout: 10)
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
        private var firstArrival: [String: Date] = [:]
        private var buffer = Data()

        /// `login`: mosquitto_sub's options for the broker's TLS and password, if it has them.
        init(port: UInt16, login: [String] = []) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
            process.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-v", "-t", "marquee/+/online", "-t", "marquee/+/status"] + login
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
                        let topic = String(line[..<space])
                        latest[topic] = String(line[line.index(after: space)...])
                        if firstArrival[topic] == nil { firstArrival[topic] = Date() }
                    }
                }
            }
            try process.run()
        }

        subscript(topic: String) -> String? { lock.withLock { latest[topic] } }

        /// When this watcher first heard of `topic`.
        func arrival(_ topic: String) -> Date? { lock.withLock { firstArrival[topic] } }

        func status(_ id: String) -> JSONValue? { self["marquee/\(id)/status"].flatMap { try? JSONParser.parse($0) } }

        /// Killed, not asked to stop: it inherits the test thread's blocked signals, SIGTERM among
        /// them, and so outlived every run, reconnecting to a broker long gone.
        deinit { _ = process.waitForEnd(timeout: 0) }
    }

    func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    func publish(_ port: UInt16, _ topic: String, _ message: String, login: [String] = []) throws {
        let result = try Command.run("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", topic, "-m", message] + login, timeout: 10)
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
        defer { for p in players where p.end == nil { p.terminate() } }
        // An eleventh player with no MQTT at all: its trace shows what the machine itself did to
        // playback meanwhile (a 2-core machine shared with builds stalls every process at times).
        for id in ids + ["alone"] {
            let config = folder + "/\(id).json"
            let mqtt = id == "alone" ? "" : #", "mqtt": {"broker": "127.0.0.1:\#(broker.port)", "id": "\#(id)", "groups": ["lobby"], "statusInterval": 1}"#
            try #"""
                {"playlist": [{"uri": "\#(clip)"}]\#(mqtt)}
                """#.write(toFile: config, atomically: true, encoding: .utf8)
            let p = Process()
            p.executableURL = binary
            p.arguments = ["--config", config, "--output", "headless", "--mode", "160x90@30", "--clock", "real", "--exit-after", "240",
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

        // The broker gone for a minute: every player plays on.
        Thread.sleep(forTimeInterval: 1)
        let outage = Date().timeIntervalSince1970
        broker.stop()
        Thread.sleep(forTimeInterval: 60)
        let running = players.filter { $0.end == nil }.count
        #expect(running == ids.count + 1, "\(ids.count + 1 - running) players ended while the broker was gone")
        let restarted = Date()
        try broker.start()
        watcher = try Watcher(port: broker.port)
        let reconnected = waitFor(30) { ids.allSatisfy { watcher["marquee/\($0)/online"] == "online" && watcher.status($0) != nil } }
        #expect(reconnected, "back online: \(ids.filter { watcher["marquee/\($0)/online"] == "online" })")
        // (The broker keeps nothing: each player's first `online` after the restart is its
        // reconnection; one back before the watcher subscribed, 0.3 s after the start, counts then.)
        let reconnects = ids.map { id in watcher.arrival("marquee/\(id)/online").map { $0.timeIntervalSince(restarted) } ?? .infinity }
        print("fleet: reconnected after a 60 s broker outage in \(reconnects.map { ($0 * 100).rounded() / 100 }) s (from the broker's start)")
        #expect(reconnects.allSatisfy { $0 < 10 }, "reconnect times \(reconnects)")

        // And they obey the group again.
        let resent = Date()
        try publish(broker.port, "marquee/group/lobby/command", #"{"command":["set_property","pause",true]}"#)
        let pausedAgain = waitFor(5) { ids.allSatisfy { watcher.status($0)?["pause"] == true } }
        let pauseAgainSeconds = Date().timeIntervalSince(resent)
        print("fleet: group pause after the outage took \(pauseAgainSeconds) s for all ten")
        #expect(pausedAgain && pauseAgainSeconds < 1, "all ten paused after \(pauseAgainSeconds) s")

        // Each trace, from the broker's death until the group command after its return: a frame
        // every vsync (30 a second), and no step over 0.25 s that the player without MQTT did not
        // have at the same moment (the machine's stall, not the broker's). (Ten players starting
        // at once on a 2-core machine drop frames in their first second: not counted.)
        let end = resent.timeIntervalSince1970 - 0.1
        for p in players { p.interrupt() }
        for p in players { _ = p.waitForEnd(timeout: 30) }
        func frames(_ id: String) throws -> [Double] {
            let lines = try String(contentsOfFile: folder + "/\(id).jsonl", encoding: .utf8).split(separator: "\n")
            return lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["type"] as? String == "frame" }.compactMap { $0["wall"] as? Double }
                .filter { $0 > outage + 0.5 && $0 < end }
        }
        let alone = try frames("alone")
        let machineStalls = zip(alone, alone.dropFirst()).filter { $1 - $0 > 0.1 }
        // Ten players reconnecting in the same instant on one 2-core machine (their backoffs began
        // together) load it for a moment as a fleet's machines never are: a step under a second
        // then is the machine's, as the control player's are. Anywhere else it is the player's.
        let back = restarted.timeIntervalSince1970
        let arrivals = reconnects.filter(\.isFinite)
        let burst = (from: back + (arrivals.min() ?? 0) - 1, to: back + (arrivals.max() ?? 0) + 1.5)
        func inReconnectBurst(_ step: (at: Double, length: Double)) -> Bool {
            step.length < 1 && step.at < burst.to && step.at + step.length > burst.from
        }
        let expected = 30 * (end - outage - 0.5)
        print("fleet: the player without MQTT showed \(alone.count) frames of \(Int(expected)) while the broker was gone and back; "
              + "its stalls over 0.1 s: \(machineStalls.map { (($1 - $0) * 100).rounded() / 100 })")
        for id in ids {
            let during = try frames(id)
            let steps = zip(during, during.dropFirst()).map { (at: $0, length: $1 - $0) }
            let own = steps.filter { step in
                step.length >= 0.25 && !inReconnectBurst(step)
                    && !machineStalls.contains { $0.0 < step.at + step.length + 0.5 && $0.1 > step.at - 0.5 }
            }
            let longest = steps.map(\.length).max() ?? .infinity
            let holds = steps.filter { $0.length >= 0.25 }.map { "\((($0.length) * 100).rounded() / 100) s at \((($0.at - back) * 100).rounded() / 100)" }
            print("fleet: \(id) held a picture 0.25 s or more: \(holds.isEmpty ? "never" : holds.joined(separator: ", ")) (seconds from the broker's return; the window around its players' reconnects: \(((burst.from - back) * 100).rounded() / 100) to \(((burst.to - back) * 100).rounded() / 100))")
            #expect(Double(during.count) >= 0.95 * expected && own.isEmpty && longest < 2,
                    "\(id): \(during.count) frames of \(Int(expected)), longest step \(longest) s, steps over 0.25 s the player without MQTT did not have: \(own) (the broker came back at \(back))")
        }
    }
    /// A broker that wants a password, over TLS with a certificate made here: the player with the
    /// right password (from its file) and the broker's certificate authority comes online and takes
    /// a command; one with a wrong password is refused, says so in its log, and plays on.
    @Test func passwordAndTLS() throws {
        let folder = TestMedia.folder + "/fleet-login-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = try Command.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder + "/key.pem",
                                                        "-out", folder + "/ca.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
                                                        "-addext", "subjectAltName=IP:127.0.0.1"], mergeErrors: true, timeout: 60)
        try #require(made.status == 0, "openssl: \(made.text)")
        let secret = "pw-" + UUID().uuidString
        let passwd = try Command.run("/usr/bin/mosquitto_passwd", ["-b", "-c", folder + "/passwords", "lobby-1", secret], mergeErrors: true, timeout: 10)
        try #require(passwd.status == 0, "mosquitto_passwd: \(passwd.text)")
        // (`user root`: mosquitto started as root would become its own user, who cannot read here.)
        let settings = "certfile \(folder)/ca.pem\nkeyfile \(folder)/key.pem\nallow_anonymous false\npassword_file \(folder)/passwords\n"
            + (getuid() == 0 ? "user root\n" : "")
        let broker = try Broker(folder: folder, settings: settings)
        defer { broker.stop() }
        try "\(secret)\n".write(toFile: folder + "/right", atomically: true, encoding: .utf8)
        try "not-\(secret)\n".write(toFile: folder + "/wrong", atomically: true, encoding: .utf8)
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 160, height: 90)
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("marquee")
        var players: [Process] = []
        defer { for p in players where p.end == nil { p.terminate() } }
        for id in ["right", "wrong"] {
            try #"""
                {"playlist": [{"uri": "\#(clip)"}], "mqtt": {"broker": "127.0.0.1:\#(broker.port)", "id": "\#(id)", "username": "lobby-1",
                 "passwordFile": "\#(id)", "tls": {"ca": "ca.pem"}, "statusInterval": 1}}
                """#.write(toFile: folder + "/\(id).json", atomically: true, encoding: .utf8)
            let p = Process()
            p.executableURL = binary
            p.arguments = ["--config", folder + "/\(id).json", "--output", "headless", "--mode", "160x90@30", "--clock", "real",
                           "--exit-after", "60", "--socket", "none"]
            p.standardOutput = FileHandle.nullDevice
            _ = FileManager.default.createFile(atPath: folder + "/\(id).log", contents: nil)
            p.standardError = FileHandle(forWritingAtPath: folder + "/\(id).log")
            try p.run()
            players.append(p)
        }
        let login = ["--cafile", folder + "/ca.pem", "-u", "lobby-1", "-P", secret]
        let watcher = try Watcher(port: broker.port, login: login)
        #expect(waitFor(30) { watcher["marquee/right/online"] == "online" && watcher.status("right")?["pause"] == false },
                "the player with the right password did not come online over TLS")
        try publish(broker.port, "marquee/right/command", #"{"command":["set_property","pause",true]}"#, login: login)
        #expect(waitFor(5) { watcher.status("right")?["pause"] == true }, "the command over TLS was not obeyed")
        // The wrong one has tried a few times by now (every 1 to 5 s).
        let refused = waitFor(15) { ((try? String(contentsOfFile: folder + "/wrong.log", encoding: .utf8)) ?? "").contains("not authori") }
        #expect(refused, "wrong.log: \((try? String(contentsOfFile: folder + "/wrong.log", encoding: .utf8)) ?? "")")
        #expect(watcher["marquee/wrong/online"] == nil && watcher.status("wrong") == nil)
        #expect(players.allSatisfy { $0.end == nil }, "a player ended")
        for p in players { p.interrupt() }
        for p in players { _ = p.waitForEnd(timeout: 30) }
        let logs = try ["right", "wrong"].map { try String(contentsOfFile: folder + "/\($0).log", encoding: .utf8) }
        #expect(!logs.contains { $0.contains(secret) }, "a log holds the password")
    }
}
