import Foundation
import Inputs
@testable import Kiosk
import Playback
import Synchronization
import Testing
import Triggers
import TestSupport
@testable import KioskTests

/// Issue 29's wall figure: two marquee processes (two nodes of one wall, headless outputs, clock
/// sync, cue sockets on loopback) run the same config; OSC presses reach the first node only, and
/// both show the triggered film's first frame on the same vsync of the wall's timeline: each on
/// its own first vsync at or after the cue's wall time, so both inside [at, at + one vsync).
@Suite(.serialized) struct WallCueProcessTests {
    /// The kernel's count of time in which some runnable thread waited for a CPU
    /// (`/proc/pressure/cpu`, `some total=` in µs) and when it was read; nil without PSI.
    struct CPUPressure {
        let stalled: Double, at: Date
        init?() {
            guard let text = try? String(contentsOfFile: "/proc/pressure/cpu", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("some ") }),
                  let total = line.split(separator: " ").first(where: { $0.hasPrefix("total=") }).flatMap({ Double($0.dropFirst(6)) })
            else { return nil }
            (stalled, at) = (total / 1e6, Date())
        }
        /// The share of the time since `start` in which a thread waited for a CPU.
        func share(since start: CPUPressure) -> Double {
            let wall = at.timeIntervalSince(start.at)
            return wall > 0 ? (stalled - start.stalled) / wall : 0
        }
    }

    @Test func aPressOnOneNodeStartsTheFilmOnBothOnTheSameVsync() throws {
        let presses = 10, interval = 1.0 / 60
        let loop = try TestMedia.clip(seconds: 7, fps: 30)
        let film = try TestMedia.clip(seconds: 0.5, fps: 30, width: 160, height: 90)
        let helper = TriggerProcessTests()
        let (oscPort, leftPort, rightPort) = (try helper.freePort(), try helper.freePort(), try helper.freePort())
        let config = try TestConfig.write(#"""
            {"playlist": [{"uri": "\#(loop)"}], "loop": true,
             "wall": {"canvas": {"width": 640, "height": 180},
                      "outputs": [{"name": "left", "node": "left", "x": 0, "y": 0, "width": 320, "height": 180},
                                  {"name": "right", "node": "right", "x": 320, "y": 0, "width": 320, "height": 180}],
                      "sync": {"mode": "clock", "epoch": "2026-01-01T00:00:00Z",
                               "cue": {"nodes": {"left": "127.0.0.1:\#(leftPort)", "right": "127.0.0.1:\#(rightPort)"}, "lead": 0.1}}},
             "triggers": [{"on": {"osc": "/wall/play"}, "do": {"play": "\#(film)", "then": "resume"}, "rearm": 0}],
             "inputs": {"osc": "127.0.0.1:\#(oscPort)"}}
            """#, named: "wall-cue-\(UUID().uuidString.prefix(8)).json")
        // The same config on both; the left node starts first and so holds the OSC port (the
        // right one cannot bind it, says so, and plays on): presses reach the left node only.
        let pressureAtStart = CPUPressure()
        let left = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 100_000, extra: ["--node", "left"])
        _ = try left.connect()
        let right = try MarqueeProcessTests.Running(config: config, clock: "real", exitAfter: 100_000, extra: ["--node", "right"])
        _ = try right.connect()
        Thread.sleep(forTimeInterval: 2)  // both on the clock's timeline, the film prerolled
        for _ in 0..<presses {
            helper.sendOSC("/wall/play", port: oscPort)
            Thread.sleep(forTimeInterval: 1.6)  // the film (0.5 s), then the loop rejoining the clock
        }
        for running in [left, right] { kill(running.process.processIdentifier, SIGTERM) }
        #expect(left.wait() == 0)
        #expect(right.wait() == 0)
        #expect(right.log.contains("OSC triggers cannot listen"), "the presses reach the left node only")
        let stalled = pressureAtStart.flatMap { start in CPUPressure().map { $0.share(since: start) } }

        // The cue times the left node chose, and the right node took.
        func cueTimes(_ log: String, _ message: String) -> [Double] {
            log.split(separator: "\n").filter { $0.contains("msg=\"\(message)\"") || $0.contains("msg=\(message) ") }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("cue_at=") }.flatMap { Double($0.dropFirst(7)) }
            }
        }
        let sent = cueTimes(left.log, "wall cue sent"), taken = cueTimes(right.log, "wall cue")
        #expect(sent.count == presses, "\(left.log)")
        #expect(taken == sent, "the right node took every cue once: \(right.log)")

        // Where each node's gate cut each cue: the vsync whose picture the film's first frame was to be.
        struct Cut { let vsync: Int; let wall: Double }
        func cuts(_ log: String) -> [Double: Cut] {
            var found: [Double: Cut] = [:]
            for line in log.split(separator: "\n") where line.contains("msg=\"wall cue cut\"") {
                let fields = Dictionary(line.split(separator: " ").compactMap { part -> (String, String)? in
                    let kv = part.split(separator: "=", maxSplits: 1)
                    return kv.count == 2 ? (String(kv[0]), String(kv[1])) : nil
                }) { a, _ in a }
                if let at = fields["cue_at"].flatMap(Double.init), let vsync = fields["vsync"].flatMap(Int.init), let wall = fields["vsync_wall"].flatMap(Double.init) {
                    found[at] = Cut(vsync: vsync, wall: wall)
                }
            }
            return found
        }
        // Each node's film starts: the film's first frame after a loop frame.
        func starts(_ running: MarqueeProcessTests.Running) throws -> [[String: Any]] {
            let frames = try running.traceLines().filter { $0["type"] as? String == "frame" }
            return frames.indices.dropFirst().filter { frames[$0]["uri"] as? String == film && frames[$0 - 1]["uri"] as? String == loop }.map { frames[$0] }
        }
        let (leftCuts, rightCuts) = (cuts(left.log), cuts(right.log))
        let (leftStarts, rightStarts) = (try starts(left), try starts(right))
        #expect(leftStarts.count == presses && rightStarts.count == presses)
        // A trace line's wall time is worked out when it is written, from the output's monotonic
        // clock: allow 0.5 ms of reading jitter against the gate's.
        let slack = 0.0005
        var lines: [String] = [], sameVsync = 0, cutLate = 0, shownLate = 0
        for at in sent {
            guard let lc = leftCuts[at], let rc = rightCuts[at],
                  let l = leftStarts.first(where: { ($0["wall"] as! Double) >= at - 0.05 }),
                  let r = rightStarts.first(where: { ($0["wall"] as! Double) >= at - 0.05 }) else {
                Issue.record("cue at \(at): not cut, or no film start after it, on a node")
                continue
            }
            let (lw, rw) = (l["wall"] as! Double, r["wall"] as! Double)
            #expect(l["pts"] as? Double == 0 && r["pts"] as? Double == 0, "the film starts on its first frame")
            var line = "cue \(at.formatted(decimals: 3)): left +\(((lw - at) * 1000).formatted(decimals: 2)) ms, right +\(((rw - at) * 1000).formatted(decimals: 2)) ms, apart \((abs(lw - rw) * 1000).formatted(decimals: 2)) ms"
            // The gate: each node cut for its first vsync at or after the cue's time. A loop that
            // was asking for a later vsync by then (a busy machine) cuts late, and says so.
            let cutInWindow = [lc.wall, rc.wall].allSatisfy { $0 >= at && $0 < at + interval }
            if !cutInWindow {
                cutLate += 1
                lines.append(line + "; cut late (the loop was behind): left +\(((lc.wall - at) * 1000).formatted(decimals: 2)) ms, right +\(((rc.wall - at) * 1000).formatted(decimals: 2)) ms")
                #expect(left.log.contains("wall cue cut late") || right.log.contains("wall cue cut late"))
                continue
            }
            // The output: the film's first frame on the vsync it was cut for, unless the output missed that vsync.
            if l["vsync"] as? Int != lc.vsync || r["vsync"] as? Int != rc.vsync {
                shownLate += 1
                lines.append(line + "; shown after the vsync it was cut for (left \((l["vsync"] as? Int ?? 0) - lc.vsync), right \((r["vsync"] as? Int ?? 0) - rc.vsync) vsyncs): an output behind")
                continue
            }
            let inWindow = [lw, rw].allSatisfy { $0 >= at - slack && $0 < at + interval + slack }
            #expect(inWindow, "\(line)")
            #expect(abs(lw - rw) < interval + slack, "\(line)")
            if inWindow { sameVsync += 1 } else { line += " OUTSIDE the window" }
            lines.append(line)
        }
        print("wall cue, press on the left node, 60 Hz, lead 0.1 s: each film's first frame after the cue's time\n" + lines.joined(separator: "\n"))
        print("\(sameVsync) of \(presses) presses started on the same vsync of the wall's timeline on both nodes; \(cutLate) cut late, \(shownLate) shown late, by a busy machine")
        #expect(sameVsync + cutLate + shownLate == presses)
        // After each film both nodes rejoin the clock at the same position, and show the same
        // frames (film and loop alike) within one vsync throughout, as in the two-process test.
        func rejoins(_ log: String) -> [String] {
            log.split(separator: "\n").filter { $0.contains("starting on the clock's position") }.compactMap { line in
                line.range(of: "position=\"").map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
            }.dropFirst().map { $0 }  // the first is each node's own start
        }
        #expect(rejoins(left.log).count == presses && rejoins(left.log) == rejoins(right.log), "\(rejoins(left.log)) against \(rejoins(right.log))")
        let compare = MarqueeProcessTests()
        let (worst, compared, eligible, at, overOneVsync, missed) = compare.syncError(of: compare.frames(try right.traceLines()), against: compare.frames(try left.traceLines()))
        print("frames compared across the nodes: \(compared) of \(eligible), \(overOneVsync) over one vsync, worst \((worst * 1000).formatted(decimals: 2)) ms, \(missed) shown late; worst: \(at)")
        // A busy machine may miss a vsync now and then (the suite runs in parallel): bounds on how
        // often only where the machine kept up: no more runnable threads than cores, and threads
        // waiting for a CPU less than a tenth of the run (the load average lags a run this short).
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)).flatMap { Double($0.split(separator: " ")[0]) } ?? 0
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let busy = load > cores || (stalled ?? 0) > 0.1
        let busyness = "load average \(load) on \(Int(cores)) cores, a thread waiting for a CPU \(stalled.map { "\(Int(($0 * 100).rounded()))%" } ?? "(no PSI)") of the run"
        // Most frames are found on both nodes within 0.25 s (shown late or not); a real offset would
        // leave few. How many are compared exactly is bounded below only where the machine kept up.
        #expect(eligible > 100 && (compared + missed) * 2 > eligible, "\(compared) of \(eligible) frames compared, \(missed) shown late")
        let figures = "\(overOneVsync) of \(compared) frames over one vsync, \(missed) of \(eligible) shown late; worst \((worst * 1000).formatted(decimals: 2)) ms at \(at)"
        let kept = compared > 250 && overOneVsync * 50 <= compared && worst <= 2.0 / 60 + 0.001 && missed * 10 <= eligible
        if busy && !kept {
            print("skipped the bound on frames disturbed by load: \(busyness): \(figures)")
        } else {
            #expect(kept, "\(figures); \(busyness)")
        }
        if cutLate + shownLate > 2 && busy {
            print("skipped the bound on presses disturbed by load: \(busyness)")
        } else {
            #expect(cutLate + shownLate <= 2, "at most 2 in 10 presses disturbed by load")
        }
    }
}

/// A node's cue socket on loopback: cues from the other node are taken once (the second copy
/// ignored); datagrams from strangers, malformed ones, and cues whose time is far from the clock
/// are counted, logged once each, and never acted on.
@Suite(.serialized) struct WallCueSocketTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger(level: .debug, sink: { [self] line in lines.withLock { $0.append(line) } }) }
        func count(_ text: String) -> Int { lines.withLock { $0.filter { $0.contains(text) }.count } }
    }

    /// Sends `bytes` to 127.0.0.1:`port` from a socket bound to `from` (0: any port).
    func send(_ bytes: [UInt8], to port: UInt16, from: UInt16 = 0) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        address.sin_port = from.bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        address.sin_port = port.bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = Date(timeIntervalSinceNow: seconds)
        while Date() < end {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @Test func cuesFromThePeerAreTakenOnceAndEverythingElseIsCounted() throws {
        let helper = TriggerProcessTests()
        let (mine, theirs) = (try helper.freePort(), try helper.freePort())
        let settings = WallCueSettings(nodes: [.init(name: "a", address: UDPEndpoint(parsing: "127.0.0.1:\(mine)")!),
                                               .init(name: "b", address: UDPEndpoint(parsing: "127.0.0.1:\(theirs)")!)])
        let lines = Lines()
        let taken = Mutex<[WallCue]>([])
        let cues = try WallCues(settings: settings, node: "a", rules: 2, logger: lines.logger) { cue in taken.withLock { $0.append(cue) } }
        defer { cues.stop() }
        let at = WallTime.now() + 50_000_000
        let cue = WallCue(sequence: 7, rule: 1, at: at)
        // The peer sends it twice, as a pressed node does.
        send(cue.encoded, to: mine, from: theirs)
        send(cue.encoded, to: mine, from: theirs)
        #expect(within(5) { cues.counters.duplicates == 1 })
        #expect(taken.withLock { $0 } == [cue])
        // A stranger: 50 datagrams, one line in the log.
        for _ in 0..<50 { send(cue.encoded, to: mine) }
        #expect(within(5) { cues.socket.foreign == 50 })
        #expect(lines.count("not a peer") == 1)
        // The peer, but not cues: garbage, a rule that does not exist, a time an hour off.
        for i in 0..<20 { send([UInt8](repeating: UInt8(i), count: 1 + i * 7), to: mine, from: theirs) }
        send(WallCue(sequence: 8, rule: 2, at: at).encoded, to: mine, from: theirs)
        send(WallCue(sequence: 9, rule: 0, at: at + 3_600_000_000_000).encoded, to: mine, from: theirs)
        send(WallCue(sequence: 10, rule: 0, at: at + (-3_600_000_000_000)).encoded, to: mine, from: theirs)
        #expect(within(5) { cues.counters.malformed == 21 && cues.counters.refused == 2 })
        #expect(lines.count("not a cue") == 1 && lines.count("far from this node's clock") == 1)
        // And a good cue after all that is still taken.
        let next = WallCue(sequence: 11, rule: 0, at: WallTime.now() + 50_000_000)
        send(next.encoded, to: mine, from: theirs)
        #expect(within(5) { taken.withLock { $0.count } == 2 })
        #expect(cues.counters.received == 2)
        // A cue of this node's own goes to the peer, twice, stamped a lead ahead.
        let peer = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(peer) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        address.sin_port = theirs.bigEndian
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(peer, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0)
        let before = WallTime.now()
        let sentAt = cues.send(rule: 1)
        var received: [WallCue] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        for _ in 0..<2 {
            let count = recv(peer, &buffer, buffer.count, 0)
            if count > 0, let cue = WallCue.parse(Array(buffer[..<count]), rules: 2) { received.append(cue) }
        }
        #expect(received.count == 2 && received.allSatisfy { $0 == WallCue(sequence: 1, rule: 1, at: sentAt) })
        #expect(sentAt - before >= 100_000_000 && sentAt - before < 200_000_000, "the lead, 0.1 s, from the press")
    }
}
