import Foundation
import Kiosk
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// A headless marquee process triggered over OSC on loopback: the film cuts in on the next vsyncs,
/// the attract loop comes back on the frame after the one it left, and nothing is shown twice or
/// skipped either side. Latency is read from the trace's wall times of the shown frames.
@Suite(.serialized) struct TriggerProcessTests {
    /// A UDP port free on loopback now (bound and let go).
    func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return UInt16(bigEndian: address.sin_port)
    }

    /// Sends one OSC message with no arguments (`address` padded to 4 bytes, then `,` padded).
    func sendOSC(_ address: String, port: UInt16) {
        var packet = Array(address.utf8) + [0]
        while packet.count % 4 != 0 { packet.append(0) }
        packet += [UInt8(ascii: ","), 0, 0, 0]
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = port.bigEndian
        to.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    struct PressRun {
        var presses: [Double]
        var frames: [[String: Any]]
        var log: String
        var loop: String
        var film: String
    }

    /// Runs marquee on `clock` with a 7 s loop and a 0.5 s film on an OSC trigger, sends `count`
    /// presses `spacing` seconds apart, and returns the send times and the trace's frames.
    func pressRun(clock: String, count: Int, spacing: Double) throws -> PressRun {
        let loop = try TestMedia.clip(seconds: 7, fps: 30)
        let film = try TestMedia.clip(seconds: 0.5, fps: 30, width: 160, height: 120)
        let port = try freePort()
        let config = try TestConfig.write(#"""
            {"playlist": [{"uri": "\#(loop)"}], "loop": true,
             "triggers": [{"on": {"osc": "/museum/play"}, "do": {"play": "\#(film)", "then": "resume"}, "rearm": 0}],
             "inputs": {"osc": "127.0.0.1:\#(port)"}}
            """#, named: "triggers-\(UUID().uuidString.prefix(8)).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: clock, exitAfter: 100_000)
        _ = try running.connect()
        Thread.sleep(forTimeInterval: 1.5)  // playing, and the film prerolled
        var presses: [Double] = []
        for _ in 0..<count {
            presses.append(Date().timeIntervalSince1970)
            sendOSC("/museum/play", port: port)
            Thread.sleep(forTimeInterval: spacing)
        }
        kill(running.process.processIdentifier, SIGTERM)
        #expect(running.wait() == 0)
        let log = running.log
        #expect(log.components(separatedBy: "msg=trigger ").count - 1 == count, "\(log)")
        #expect(log.components(separatedBy: "prerolled=yes").count - 1 == count, "every press found its film prerolled")
        return PressRun(presses: presses, frames: try running.traceLines().filter { $0["type"] as? String == "frame" },
                        log: log, loop: loop, film: film)
    }

    /// The index of each press's first film frame (the film's frames after a loop frame).
    func cuts(_ run: PressRun) -> [Int] {
        run.frames.indices.dropFirst().filter { run.frames[$0]["uri"] as? String == run.film && run.frames[$0 - 1]["uri"] as? String == run.loop }
    }

    @Test func onTheVirtualClockEveryCutIsGaplessAndTheLoopResumesOnItsNextFrame() throws {
        let run = try pressRun(clock: "virtual", count: 10, spacing: 0.3)
        let frames = run.frames
        let cuts = cuts(run)
        #expect(cuts.count == 10)
        for at in cuts {
            let first = frames[at], before = frames[at - 1]
            #expect(first["pts"] as? Double == 0, "the film starts on its first frame")
            // Gapless in: the film's first frame at most 2 vsyncs after the loop's last (a frame lasts 2).
            #expect((first["vsync"] as! Int) - (before["vsync"] as! Int) <= 2)
            // Every film frame once, 2 vsyncs each; the loop back on the frame after the one it left.
            let filmFrames = frames[at...].prefix { $0["uri"] as? String == run.film }
            #expect(filmFrames.map { Int((($0["pts"] as! Double) * 30).rounded()) } == Array(0..<15))
            guard let back = frames[(at + filmFrames.count)...].first else { continue }
            #expect(back["uri"] as? String == run.loop)
            let left = before["pts"] as! Double, resumed = back["pts"] as! Double
            #expect(abs(resumed - (left + 1.0 / 30)) < 1e-3, "left the loop at \(left), came back at \(resumed)")
            #expect((back["vsync"] as! Int) - (filmFrames.last!["vsync"] as! Int) == 2)
        }
    }

    /// Real time: from the OSC datagram's send to the wall time of the vsync its film's first frame
    /// is on. On a shared 2-core machine frames may drop under load, so only the start is held
    /// exact here (the virtual-clock test holds every frame), and the latency bound only when no
    /// film frame was dropped.
    @Test func onTheRealClockThePressReachesThePictureWithinAFewVsyncs() throws {
        let run = try pressRun(clock: "real", count: 20, spacing: 1.1)
        var latencies: [Double] = []
        var exactResumes = 0, filmDrops = 0
        for (press, at) in zip(run.presses, cuts(run)) {
            let first = run.frames[at], before = run.frames[at - 1]
            #expect(first["pts"] as? Double == 0)
            latencies.append(((first["wall"] as! Double) - press) * 60)
            let filmFrames = run.frames[at...].prefix { $0["uri"] as? String == run.film }
            filmDrops += 15 - filmFrames.count
            if let back = run.frames[(at + filmFrames.count)...].first,
               abs((back["pts"] as! Double) - ((before["pts"] as! Double) + 1.0 / 30)) < 1e-3 { exactResumes += 1 }
        }
        #expect(latencies.count == 20)
        let sorted = latencies.sorted()
        print("OSC press to the film's first frame (wall time, 60 Hz vsync periods), \(sorted.count) presses: median \(sorted[sorted.count / 2].formatted(decimals: 2)), worst \(sorted.last!.formatted(decimals: 2)); exact resumes \(exactResumes)/\(sorted.count), film frames dropped \(filmDrops)")
        // A machine that cannot keep real time (frames dropped) says nothing of the press's path.
        if filmDrops > 0 {
            print("skipped the latency bound: this machine dropped \(filmDrops) film frames (overloaded); figures above for the record")
        } else {
            #expect(sorted.last! <= 6)
        }
    }
}
