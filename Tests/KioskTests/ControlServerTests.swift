import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport

/// A player stand-in: a counter property that commands change.
final class FakeHandler: ControlHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var _position = 0
    private var _paused = false
    var position: Int { lock.withLock { _position } }
    let propertyNames = ["playlist-pos", "pause"]

    func property(_ name: String) throws(ControlError) -> JSONValue {
        switch name {
        case "playlist-pos": return .number(Double(position))
        case "pause": return .bool(lock.withLock { _paused })
        default: throw .propertyNotFound
        }
    }

    func setProperty(_ name: String, to value: JSONValue) throws(ControlError) {
        guard name == "pause" else { throw .propertyNotFound }
        guard let b = value.boolValue else { throw .invalidParameter }
        lock.withLock { _paused = b }
    }

    func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue? {
        switch command {
        case "playlist-next":
            lock.withLock { _position += 1 }
            return nil
        case "fail": throw .commandFailed("asked to fail")
        default: throw .invalidParameter
        }
    }
}

/// A player stand-in with a command that blocks until the test opens its gate, a property that
/// blocks while `slowProperty` is set, and a command answering with `n` bytes.
final class GatedHandler: ControlHandler, @unchecked Sendable {
    private let gate = NSCondition()
    private var isOpen = false
    private var entered = false
    let slowProperty = Mutex(false)
    let bigCalls = Atomic(0)
    let propertyNames = ["pause", "slow-property"]

    func open() { gate.withLock { isOpen = true; gate.broadcast() } }

    func waitUntilEntered(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return gate.withLock {
            while !entered && gate.wait(until: deadline) {}
            return entered
        }
    }

    private func waitForGate() {
        gate.withLock {
            entered = true
            gate.broadcast()
            let deadline = Date(timeIntervalSinceNow: 30)
            while !isOpen && gate.wait(until: deadline) {}
        }
    }

    func property(_ name: String) throws(ControlError) -> JSONValue {
        switch name {
        case "pause": return false
        case "slow-property":
            if slowProperty.withLock({ $0 }) { waitForGate() }
            return 1
        default: throw .propertyNotFound
        }
    }

    func setProperty(_ name: String, to value: JSONValue) throws(ControlError) { throw .invalidParameter }

    func run(_ command: String, _ arguments: [JSONValue]) throws(ControlError) -> JSONValue? {
        switch command {
        case "wait-for-gate":
            waitForGate()
            return "done"
        case "big":
            bigCalls.add(1, ordering: .relaxed)
            guard let size = arguments.first?.numberValue, size >= 0, size < 1e8 else { throw .invalidParameter }
            return .string(String(repeating: "b", count: Int(size)))
        default: throw .invalidParameter
        }
    }
}

@Suite struct ControlServerTests {
    let logger = Logger(level: .error, sink: { _ in })

    static func socketPath() -> String { "/tmp/marquee-test-\(getpid())-\(UUID().uuidString.prefix(8)).sock" }

    func withServer(maxClients: Int = 32, maxLineBytes: Int = 64 * 1024, _ body: (ControlServer, FakeHandler) throws -> Void) throws {
        let handler = FakeHandler()
        let server = try ControlServer(path: Self.socketPath(), handler: handler, logger: logger, maxClients: maxClients, maxLineBytes: maxLineBytes)
        defer { server.stop() }
        try body(server, handler)
    }

    func withServer(handler: any ControlHandler, _ body: (ControlServer) throws -> Void) throws {
        let server = try ControlServer(path: Self.socketPath(), handler: handler, logger: logger)
        defer { server.stop() }
        try body(server)
    }

    func connect(_ server: ControlServer) throws -> UnixSocketClient {
        try #require(UnixSocketClient.connect(path: server.path, timeout: 2))
    }

    @Test func mpvStyleConversation() throws {
        try withServer { server, handler in
            var info = stat()
            #expect(stat(server.path, &info) == 0 && info.st_mode & 0o777 == 0o660, "the socket is mode 0660")
            let client = try connect(server)
            client.send(#"{"command":["get_property","playlist-pos"],"request_id":100}"#)
            #expect(client.readLine() == #"{"data":0,"request_id":100,"error":"success"}"#)
            client.send(#"{"command":["get_property","nonsense"],"request_id":7}"#)
            #expect(client.readLine() == #"{"request_id":7,"error":"property not found"}"#)
            client.send(#"{"command":["set_property","pause",true]}"#)
            #expect(client.readLine() == #"{"request_id":0,"error":"success"}"#)
            client.send(#"{"command":["get_property","pause"],"request_id":8}"#)
            #expect(client.readLine() == #"{"data":true,"request_id":8,"error":"success"}"#)
            client.send(#"{"command":["observe_property",1,"playlist-pos"],"request_id":9}"#)
            #expect(client.readLine() == #"{"request_id":9,"error":"success"}"#)
            #expect(client.readLine() == #"{"event":"property-change","id":1,"name":"playlist-pos","data":0}"#)
            client.send(#"{"command":{"name":"playlist-next"},"request_id":10}"#)
            var lines = [client.readLine(), client.readLine()].compactMap { $0 }
            lines.sort()
            #expect(lines == [#"{"data":null,"request_id":10,"error":"success"}"#,
                              #"{"event":"property-change","id":1,"name":"playlist-pos","data":1}"#])
            #expect(handler.position == 1)
            client.send(#"{"command":["unobserve_property",1],"request_id":11}"#)
            #expect(client.readLine() == #"{"request_id":11,"error":"success"}"#)
            client.send(#"{"command":["fail"],"request_id":12}"#)
            #expect(client.readLine() == #"{"request_id":12,"error":"error running command","detail":"asked to fail"}"#)
            client.send(#"{"command":["no-such-command"],"request_id":13}"#)
            #expect(client.readLine() == #"{"request_id":13,"error":"invalid parameter"}"#)
            client.send(#"{"command":["client_name"],"request_id":14}"#)
            #expect(client.readLine()?.contains(#""data":"client"#) == true)
            server.broadcast(["event": "end-file", "reason": "eof"])
            #expect(client.readLine() == #"{"event":"end-file","reason":"eof"}"#)
        }
    }

    @Test func sixtyFourClientsAtOnceAllGetAnswers() throws {
        try withServer(maxClients: 64) { server, _ in
            let clients = try (0..<64).map { _ in try connect(server) }
            for (i, c) in clients.enumerated() { c.send(#"{"command":["get_property","playlist-pos"],"request_id":\#(i)}"#) }
            for (i, c) in clients.enumerated() {
                #expect(c.readLine() == #"{"data":0,"request_id":\#(i),"error":"success"}"#)
            }
        }
    }

    /// Replies come in the order a client asked, one request of it running at a time.
    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withServer { server, _ in
            let client = try connect(server)
            let lines = (0..<500).map { i in
                i % 2 == 0 ? #"{"command":["get_property","playlist-pos"],"request_id":\#(i)}"# : #"{"command":["client_name"],"request_id":\#(i)}"#
            }
            #expect(client.send(lines.joined(separator: "\n")))
            for i in 0..<500 {
                let reply = try #require(client.readLine().flatMap { try? JSONParser.parse($0) })
                #expect(reply["request_id"]?.numberValue == Double(i))
            }
        }
    }

    /// A stop that comes while the server thread handles another wake-up (an event broadcast, as
    /// at the end of a run) ends the thread at once: its wake-up is not taken for the one before.
    /// The thread's idle sleep is 10 s here: a lost wake-up would hold `stop` for its 5 s limit.
    @Test func aStopDuringAnotherWakeUpEndsTheThreadAtOnce() throws {
        let server = try ControlServer(path: Self.socketPath(), handler: FakeHandler(), logger: logger, idleWake: .seconds(10))
        let reached = Latch<Void>(), stopped = Latch<Double>()
        // The broadcast's wake-up: once the thread has read the state, the stop comes.
        server.afterStateRead.withLock { hook in
            hook = { [server] in
                guard reached.set(()) else { return }
                for _ in 0..<500 where !server.shared.withLock({ $0.stopping }) { Thread.sleep(forTimeInterval: 0.01) }
                Thread.sleep(forTimeInterval: 0.05)  // for `stop` to write its wake-up too
            }
        }
        server.broadcast(["event": "end-file"])
        #expect(reached.wait(timeout: 5) != nil, "the broadcast woke no thread")
        startThread(named: "test-stop") {
            let started = ContinuousClock.now
            server.stop()
            _ = stopped.set((ContinuousClock.now - started).seconds)
        }
        let took = try #require(stopped.wait(timeout: 10))
        #expect(took < 2.5, "the stop took \(took) s")
    }

    @Test func observedPropertiesAreCappedPerClient() throws {
        try withServer { server, _ in
            let client = try connect(server), other = try connect(server)
            for id in 0..<64 {
                #expect(client.request(["observe_property", .number(Double(id)), "pause"], id: id)?["error"]?.stringValue == "success")
            }
            let refused = client.request(["observe_property", 64, "pause"], id: 64)
            #expect(refused?["error"]?.stringValue == "error running command")
            #expect(refused?["detail"]?.stringValue == "at most 64 observed properties per client")
            #expect(client.request(["observe_property", 5, "playlist-pos"], id: 65)?["error"]?.stringValue == "success",
                    "an id already observed can be changed")
            #expect(client.request(["unobserve_property", 0], id: 66)?["error"]?.stringValue == "success")
            #expect(client.request(["observe_property", 64, "pause"], id: 67)?["error"]?.stringValue == "success",
                    "room again once one is unobserved")
            #expect(other.request(["observe_property", 1, "pause"], id: 1)?["error"]?.stringValue == "success", "the cap is per client")
        }
    }

    /// A client that never reads while events flow is dropped once the unread limit is passed,
    /// and the log names it; one that reads keeps getting them.
    @Test func aClientThatNeverReadsIsDroppedAndNamed() throws {
        let lines = LogLines()
        let server = try ControlServer(path: Self.socketPath(), handler: FakeHandler(), logger: Logger(level: .info, sink: lines.append),
                                       maxPendingBytes: 256 << 10)
        defer { server.stop() }
        let deaf = try connect(server), reader = try connect(server)
        #expect(deaf.request(["client_name"], id: 1)?["data"]?.stringValue == "client1")
        #expect(reader.request(["client_name"], id: 1)?["data"]?.stringValue == "client2")
        let padding = String(repeating: "x", count: 1000)
        var received = 0
        for i in 0..<3000 {
            server.broadcast(["event": "test", "n": .number(Double(i)), "padding": .string(padding)])
            if i % 100 == 99 {
                while received <= i - 50, reader.readLine() != nil { received += 1 }
            }
        }
        while received < 3000, reader.readLine() != nil { received += 1 }
        #expect(received == 3000, "the reading client got every event")
        let dropped = lines.all.filter { $0.contains("control client disconnected") }
        #expect(dropped.count == 1 && dropped.first?.contains("client1") == true && dropped.first?.contains("pid=\(getpid())") == true
                && dropped.first?.contains("unread") == true, "\(dropped)")
        var drained = 0
        while deaf.readLine() != nil { drained += 1 }
        print("a client that never read was dropped with \(drained) event lines of 1 KB left for it")
        #expect(drained < 600, "what the deaf client finds waiting is bounded (\(drained) lines)")
    }

    /// A line that never ends is cut off at the line limit: what the server holds stays bounded.
    @Test func aLineThatNeverEndsIsCutOff() throws {
        try withServer(maxLineBytes: 16 << 10) { server, _ in
            let client = try connect(server)
            let chunk = String(repeating: "a", count: 4096)
            var sent = 0
            while sent < 64 << 20 && client.send(chunk, newline: false) { sent += 4096 }
            #expect(sent < 8 << 20, "the server stopped taking the line after \(sent) bytes")
            #expect(client.readLine() == nil)
            let again = try connect(server)
            #expect(again.request(["get_property", "pause"], id: 1)?["data"]?.boolValue == false)
        }
    }

    @Test func theSocketsFolderIsMadeWhenMissing() throws {
        let folder = "/tmp/marquee-test-dir-\(getpid())-\(UUID().uuidString.prefix(6))"
        let server = try ControlServer(path: folder + "/marquee.sock", handler: FakeHandler(), logger: logger)
        defer { server.stop() }
        #expect(UnixSocketClient.connect(path: server.path, timeout: 1) != nil)
    }

    @Test func staleSocketFileIsReplaced() throws {
        let path = "/tmp/marquee-test-stale-\(getpid()).sock"
        // A socket file left behind by a process that is gone.
        let first = try ControlServer(path: path, handler: FakeHandler(), logger: logger)
        first.stop()
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(fd)
        #expect(FileManager.default.fileExists(atPath: path))
        let server = try ControlServer(path: path, handler: FakeHandler(), logger: logger)
        defer { server.stop() }
        #expect(UnixSocketClient.connect(path: server.path, timeout: 1) != nil)
    }
}

@Suite struct KioskControllerTests {
    @Test func healthSaysWhy() {
        let status = KioskStatus()
        status.update {
            $0.items = [.init(uri: "a.mp4"), .init(uri: "b.mp4")]
            $0.loopPass = 3
        }
        #expect(status.health().status == "ok")
        status.update {
            $0.items[1].state = .failed
            $0.items[1].error = "b.mp4: avformat_open_input failed: No such file or directory"
            $0.items[1].failedInLoop = 3
        }
        #expect(status.health().status == "degraded")
        #expect(status.health().reasons == ["item 2 (b.mp4) failed: b.mp4: avformat_open_input failed: No such file or directory"])
        status.update {
            $0.items[0].state = .failed
            $0.items[0].error = "bad"
        }
        #expect(status.health().status == "failed")
        status.update {
            $0.items[0].state = .played
            $0.items[1].failedInLoop = 1
            $0.hwdecDegraded = true
            $0.hwdecRequested = "vaapi"
            $0.hwdecFallback = "vaapi: av_hwdevice_ctx_create(vaapi) failed"
            $0.recentDrops = [.now - .seconds(120), .now - .seconds(5)]
        }
        #expect(status.health().reasons == ["hardware decode vaapi not in use: vaapi: av_hwdevice_ctx_create(vaapi) failed",
                                             "1 frames dropped in the last minute"])
    }

    /// A hardware frame shown as background (neither imported nor copied) is never silent.
    @Test func framesThatCouldNotBeDrawnDegradeHealthAndShowInOutputs() throws {
        let status = KioskStatus()
        status.update { $0.outputs = [.init(name: "kms-HDMI-A-1", mode: "1920x1080@60")] }
        #expect(status.health().status == "ok")
        status.update { $0.outputs[0].framesNotDrawn = 2 }
        #expect(status.health().reasons == ["output kms-HDMI-A-1: 2 hardware frames could be neither imported nor copied (shown as background)"])
        let outputs = try KioskController(status: status) { _ in .done }.property("outputs")
        #expect(outputs.arrayValue?.first?["framesNotDrawn"]?.numberValue == 2)
    }

    @Test func seekAndScreenshotArgumentsAreChecked() {
        let controller = KioskController(status: KioskStatus()) { _ in .done }
        #expect(throws: ControlError.invalidParameter) { try controller.run("seek", []) }
        #expect(throws: ControlError.invalidParameter) { try controller.run("seek", [5, "sideways"]) }
        #expect(throws: ControlError.invalidParameter) { try controller.run("screenshot", [5]) }
        #expect(throws: ControlError.propertyNotFound) { try controller.property("nope") }
        #expect(throws: ControlError.propertyError) { try controller.setProperty("pid", to: 1) }
    }
}

@Suite struct ServiceNotifierTests {
    @Test func sendsReadyAndWatchdogDatagrams() throws {
        let path = "/tmp/marquee-notify-\(getpid()).sock"
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0)
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"])
        #expect(notifier.watchdogInterval == .seconds(1))
        notifier.ready(status: "playing 1 item")
        let start = ContinuousClock.now
        notifier.watchdogPing(now: start)
        notifier.watchdogPing(now: start + .milliseconds(100))  // too soon: not sent
        notifier.watchdogPing(now: start + .milliseconds(600))
        var received: [String] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        for _ in 0..<3 {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { received.append(String(decoding: buffer[0..<n], as: UTF8.self)) }
        }
        #expect(received == ["READY=1\nSTATUS=playing 1 item", "WATCHDOG=1", "WATCHDOG=1"])
        #expect(!ServiceNotifier(environment: [:]).isActive)
    }
}
