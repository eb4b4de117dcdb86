import Foundation
@testable import Kiosk
import Playback
import Synchronization
import Testing
import TestSupport
@testable import KioskTests

@Suite struct ControlServerTests {
    let unit = KioskTests.ControlServerTests()   // its fixtures: connect, logger, withServer
    typealias Unit = KioskTests.ControlServerTests

    @Test func garbageGetsErrorRepliesAndTheServerGoesOn() throws {
        try unit.withServer { server, _ in
            let client = try unit.connect(server)
            // As in mpv, a line not starting with `{` is a text command: garbage there is not
            // answered (nor run); a JSON line that is garbage is.
            for garbage in ["not json", "[1,2,3]", "\u{1}\u{2}", "unterminated \"quote"] { client.send(garbage) }
            for i in 0..<1000 {
                let garbage = ["{not json", "{\"command\":", "{[1,2,3]", "{\"command\":[42]}", "{\u{1}\u{2}", "{}"][i % 6]
                client.send(garbage)
                #expect(client.readLine() == #"{"request_id":0,"error":"invalid parameter"}"#, "line \(i): \(garbage)")
            }
            client.send(#"{"command":["get_property","playlist-pos"],"request_id":1}"#)
            #expect(client.readLine() == #"{"data":0,"request_id":1,"error":"success"}"#)
        }
    }

    @Test func tooLongLinesAndTooManyClientsAreCutOff() throws {
        try unit.withServer(maxClients: 4, maxLineBytes: 1024) { server, _ in
            let long = try unit.connect(server)
            long.send(String(repeating: "x", count: 4096))
            #expect(long.readLine() == nil, "disconnected for a line over the limit")
            var clients = try (0..<4).map { _ in try unit.connect(server) }
            for (i, c) in clients.enumerated() {
                c.send(#"{"command":["get_property","playlist-pos"],"request_id":\#(i)}"#)
                #expect(c.readLine() == #"{"data":0,"request_id":\#(i),"error":"success"}"#)
            }
            let extra = try unit.connect(server)
            #expect(extra.readLine() == #"{"error":"too many clients","request_id":0}"#)
            #expect(extra.readLine() == nil)
            clients.removeAll()
            // Room again once they have gone.
            Thread.sleep(forTimeInterval: 0.2)
            let again = try unit.connect(server)
            again.send(#"{"command":["get_property","pause"],"request_id":5}"#)
            #expect(again.readLine() == #"{"data":false,"request_id":5,"error":"success"}"#)
        }
    }

    /// A reply larger than the unread limit (a screenshot) is delivered whole: the limit is for
    /// events the client did not ask for.
    @Test func aReplyLargerThanTheUnreadLimitReachesTheClient() throws {
        let handler = GatedHandler()
        let server = try ControlServer(path: Unit.socketPath(), handler: handler, logger: unit.logger, maxPendingBytes: 1 << 20)
        defer { server.stop() }
        let client = try #require(UnixSocketClient.connect(path: server.path, timeout: 15))
        for (i, size) in [3 << 20, 6 << 20].enumerated() {
            let reply = try #require(client.request(["big", .number(Double(size))], id: i + 1), "no reply to a \(size)-byte answer")
            #expect(reply["error"]?.stringValue == "success")
            #expect(reply["data"]?.stringValue?.utf8.count == size)
        }
        // Still connected, still answered.
        #expect(client.request(["get_property", "pause"], id: 9)?["data"]?.boolValue == false)
    }

    /// One client's slow request (here one that waits until the test lets it go) leaves the other
    /// clients answered at once; its own reply comes when it is done.
    @Test func aSlowRequestHoldsUpOnlyItsOwnClient() throws {
        let handler = GatedHandler()
        try unit.withServer(handler: handler) { server in
            let slow = try unit.connect(server), other = try unit.connect(server)
            #expect(other.request(["observe_property", 1, "slow-property"], id: 1)?["error"]?.stringValue == "success")
            slow.send(#"{"command":["wait-for-gate"],"request_id":1}"#)
            #expect(handler.waitUntilEntered(timeout: 5), "the slow command started")
            defer { handler.open() }
            var worst = 0.0
            for i in 0..<20 {
                let started = Date()
                let reply = other.request(["get_property", "pause"], id: 10 + i)
                worst = max(worst, Date().timeIntervalSince(started))
                #expect(reply?["data"]?.boolValue == false, "answered while the other client's command is pending")
            }
            print("get_property while another client's command is pending: worst of 20 took \((worst * 1000).formatted(decimals: 1)) ms")
            #expect(worst < 1, "worst latency \(worst) s")
            // Another client's slow property (read for its observers) holds up no one either.
            handler.slowProperty.withLock { $0 = true }
            Thread.sleep(forTimeInterval: 0.3)
            let started = Date()
            #expect(other.request(["get_property", "pause"], id: 40)?["data"]?.boolValue == false)
            #expect(Date().timeIntervalSince(started) < 1)
            handler.open()
            #expect(slow.readLine() == #"{"data":"done","request_id":1,"error":"success"}"#)
        }
    }

    /// A client that sends requests and does not read their replies holds at most about
    /// `maxPendingBytes` of them (and one running request): the server runs its next request once
    /// it has read. Reading then gets every reply, in order.
    @Test func unreadRepliesHoldUpTheClientsNextRequests() throws {
        let handler = GatedHandler()
        let server = try ControlServer(path: Unit.socketPath(), handler: handler, logger: unit.logger, maxPendingBytes: 1 << 20)
        defer { server.stop() }
        let client = try unit.connect(server)
        #expect(client.send((1...40).map { #"{"command":["big",524288],"request_id":\#($0)}"# }.joined(separator: "\n")))
        Thread.sleep(forTimeInterval: 1)
        let ran = handler.bigCalls.load(ordering: .relaxed)
        print("requests run for a client that read none of their replies: \(ran) of 40 (512 KiB each)")
        // 1 MiB of replies unread stops it; the socket's buffers hold a few more.
        #expect(ran <= 8, "\(ran) of 40 requests of half a megabyte ran while the client read nothing")
        for i in 1...40 {
            let reply = try #require(client.readLine().flatMap { try? JSONParser.parse($0) })
            #expect(reply["request_id"]?.numberValue == Double(i) && reply["data"]?.stringValue?.utf8.count == 524288)
        }
        #expect(handler.bigCalls.load(ordering: .relaxed) == 40)
    }

}

@Suite struct KioskControllerTests {

    @Test func commandsThatNeverAnswerTimeOut() {
        let controller = KioskController(status: KioskStatus(), commandTimeout: 0.1) { _ in
            Thread.sleep(forTimeInterval: 1)
            return .done
        }
        #expect(throws: ControlError.commandFailed("no answer from the player within 0.1 s")) {
            try controller.run("reload", [])
        }
    }

    /// A burst of steps and seeks reaches the player as one or two commands that add up to the
    /// same place (mpv's play loop merges them the same way), each request answered at once.
    @Test func seekAndStepBurstsAreCoalesced() throws {
        final class Recorder: @unchecked Sendable {
            let lock = NSLock()
            var commands: [KioskCommand] = []
            func record(_ command: KioskCommand) -> KioskCommandResult {
                Thread.sleep(forTimeInterval: 0.02)  // a player that takes a moment for each
                lock.withLock { commands.append(command) }
                return .done
            }
            var all: [KioskCommand] { lock.withLock { commands } }
        }
        let recorder = Recorder()
        let controller = KioskController(status: KioskStatus(), navigationInterval: 0.3) { recorder.record($0) }
        func settle() { Thread.sleep(forTimeInterval: 0.8) }

        for _ in 0..<200 { #expect(try controller.run("playlist-next", []) == nil) }
        settle()
        var steps = recorder.all.compactMap { if case .skip(let n) = $0 { n } else { nil } }
        #expect(steps.reduce(0, +) == 200 && steps.count <= 2, "\(recorder.all)")

        recorder.lock.withLock { recorder.commands.removeAll() }
        for _ in 0..<150 { _ = try controller.run("seek", [1]) }
        for _ in 0..<50 { _ = try controller.run("playlist-prev", []) }
        settle()
        steps = recorder.all.compactMap { if case .skip(let n) = $0 { n } else { nil } }
        #expect(steps.reduce(0, +) == -50 && recorder.all.count <= 3, "\(recorder.all)")

        // Relative seeks add up; an absolute one replaces what came before it; a step drops the
        // seek queued before it.
        var queue = NavigationQueue()
        for command: KioskCommand in [.seek(seconds: 5, relative: true), .seek(seconds: 2, relative: true)] { queue.add(command) }
        #expect(queue.commands == [.seek(seconds: 7, relative: true)])
        queue.add(.seek(seconds: 30, relative: false))
        queue.add(.seek(seconds: -4, relative: true))
        #expect(queue.commands == [.seek(seconds: 26, relative: false)])
        queue.add(.skip(steps: 1))
        queue.add(.next)
        #expect(queue.commands == [.skip(steps: 2)])
        queue.add(.seek(seconds: 3, relative: false))
        #expect(queue.commands == [.skip(steps: 2), .seek(seconds: 3, relative: false)])
        for _ in 0..<3_000 { queue.add(.seek(seconds: 1e9, relative: true)) }
        #expect(queue.commands == [.skip(steps: 2), .seek(seconds: longestTimeInSeconds, relative: false)], "a burst of seeks is clamped too")
        for _ in 0..<3_000 { queue.add(.skip(steps: 1_000)) }
        #expect(queue.commands == [.skip(steps: 1_000_000)], "the sum is clamped, never overflows")
    }

}
