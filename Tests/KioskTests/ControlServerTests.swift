import Foundation
@testable import Kiosk
import Playback
import Testing

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

@Suite struct ControlServerTests {
    let logger = Logger(level: .error, sink: { _ in })

    func withServer(maxClients: Int = 32, maxLineBytes: Int = 64 * 1024, _ body: (ControlServer, FakeHandler) throws -> Void) throws {
        let path = "/tmp/marquee-test-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
        let handler = FakeHandler()
        let server = try ControlServer(path: path, handler: handler, logger: logger, maxClients: maxClients, maxLineBytes: maxLineBytes)
        defer { server.stop() }
        try body(server, handler)
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
            #expect(lines == [#"{"event":"property-change","id":1,"name":"playlist-pos","data":1}"#,
                              #"{"request_id":10,"error":"success"}"#])
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

    @Test func garbageGetsErrorRepliesAndTheServerGoesOn() throws {
        try withServer { server, _ in
            let client = try connect(server)
            for i in 0..<1000 {
                let garbage = ["not json", "{\"command\":", "[1,2,3]", "{\"command\":[42]}", "\u{1}\u{2}", "{}"][i % 6]
                client.send(garbage)
                #expect(client.readLine() == #"{"request_id":0,"error":"invalid parameter"}"#, "line \(i): \(garbage)")
            }
            client.send(#"{"command":["get_property","playlist-pos"],"request_id":1}"#)
            #expect(client.readLine() == #"{"data":0,"request_id":1,"error":"success"}"#)
        }
    }

    @Test func tooLongLinesAndTooManyClientsAreCutOff() throws {
        try withServer(maxClients: 4, maxLineBytes: 1024) { server, _ in
            let long = try connect(server)
            long.send(String(repeating: "x", count: 4096))
            #expect(long.readLine() == nil, "disconnected for a line over the limit")
            var clients = try (0..<4).map { _ in try connect(server) }
            for (i, c) in clients.enumerated() {
                c.send(#"{"command":["get_property","playlist-pos"],"request_id":\#(i)}"#)
                #expect(c.readLine() == #"{"data":0,"request_id":\#(i),"error":"success"}"#)
            }
            let extra = try connect(server)
            #expect(extra.readLine() == #"{"error":"too many clients","request_id":0}"#)
            #expect(extra.readLine() == nil)
            clients.removeAll()
            // Room again once they have gone.
            Thread.sleep(forTimeInterval: 0.2)
            let again = try connect(server)
            again.send(#"{"command":["get_property","pause"],"request_id":5}"#)
            #expect(again.readLine() == #"{"data":false,"request_id":5,"error":"success"}"#)
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
        #expect(status.health().reasons == ["item 1 (b.mp4) failed: b.mp4: avformat_open_input failed: No such file or directory"])
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

    @Test func commandsThatNeverAnswerTimeOut() {
        let controller = KioskController(status: KioskStatus(), commandTimeout: 0.1) { _ in
            Thread.sleep(forTimeInterval: 1)
            return .done
        }
        #expect(throws: ControlError.commandFailed("no answer from the player within 0.1 s")) {
            try controller.run("playlist-next", [])
        }
    }

    @Test func seekAndScreenshotArgumentsAreChecked() {
        let controller = KioskController(status: KioskStatus()) { _ in .done }
        #expect(throws: ControlError.invalidParameter) { try controller.run("seek", []) }
        #expect(throws: ControlError.invalidParameter) { try controller.run("seek", [5, "sideways"]) }
        #expect(throws: ControlError.invalidParameter) { try controller.run("screenshot", [5]) }
        #expect(throws: ControlError.propertyNotFound) { try controller.property("nope") }
        #expect(throws: ControlError.invalidParameter) { try controller.setProperty("pid", to: 1) }
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
