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
        var presses: [(time: Double, cold: Bool)]
        var frames: [[String: Any]]
        var log: String
        var loop: String
        /// The prerolled target, and the one opened on the press (`preroll: false`).
        var film: String
        var coldFilm: String

        func isFilm(_ frame: [String: Any]) -> Bool { [film, coldFilm].contains(frame["uri"] as? String ?? "") }
        /// The index of each cut's first film frame (a film frame after a loop frame).
        var cuts: [Int] { frames.indices.dropFirst().filter { isFilm(frames[$0]) && frames[$0 - 1]["uri"] as? String == loop } }
    }

    /// Runs marquee on `clock` with a 7 s loop and two 0.5 s films (`filmHeight` high, 16:9) on OSC
    /// triggers, one prerolled and one not; sends `count` presses `spacing` seconds apart (every other one to the film that
    /// is not prerolled when `cold`), and returns the send times and the trace's frames.
    /// With `strict`, every press must be taken (a machine that cannot keep real time may still be
    /// playing a film when the next press comes, which is then locked out).
    func pressRun(clock: String, count: Int, spacing: Double, cold: Bool, filmHeight: Int, strict: Bool) throws -> PressRun {
        let loop = try TestMedia.clip(seconds: 7, fps: 30)
        let width = filmHeight * 16 / 9
        let film = try TestMedia.clip(seconds: 0.5, fps: 30, width: width, height: filmHeight)
        let coldFilm = try TestMedia.clip(seconds: 0.5, fps: 30, width: width, height: filmHeight + 8)
        let port = try freePort()
        let config = try TestConfig.write(#"""
            {"playlist": [{"uri": "\#(loop)"}], "loop": true,
             "triggers": [{"on": {"osc": "/museum/play"}, "do": {"play": "\#(film)", "then": "resume"}, "rearm": 0},
                          {"on": {"osc": "/museum/cold"}, "do": {"play": "\#(coldFilm)", "then": "resume"}, "rearm": 0, "preroll": false}],
             "inputs": {"osc": "127.0.0.1:\#(port)"}}
            """#, named: "triggers-\(UUID().uuidString.prefix(8)).json")
        let running = try MarqueeProcessTests.Running(config: config, clock: clock, exitAfter: 100_000)
        _ = try running.connect()
        Thread.sleep(forTimeInterval: 1.5)  // playing, and the film prerolled
        var presses: [(time: Double, cold: Bool)] = []
        for i in 0..<count {
            let isCold = cold && i % 2 == 1
            presses.append((Date().timeIntervalSince1970, isCold))
            sendOSC(isCold ? "/museum/cold" : "/museum/play", port: port)
            Thread.sleep(forTimeInterval: spacing)
        }
        kill(running.process.processIdentifier, SIGTERM)
        #expect(running.wait() == 0)
        let log = running.log
        let coldCount = presses.filter(\.cold).count
        if strict {
            #expect(log.components(separatedBy: "msg=trigger ").count - 1 == count, "\(log)")
            // Each film is prerolled again once it has played; under the full suite's load that
            // once missed the next press (18 of 20): at most 1 in 10 may find it not yet ready.
            let ready = log.components(separatedBy: "prerolled=yes").count - 1
            #expect(ready + log.components(separatedBy: "prerolled=no").count - 1 == count)
            #expect(ready >= (count - coldCount) - (count - coldCount) / 10,
                    "\(ready) of \(count - coldCount) presses of the prerolled target found its first frame decoded")
        }
        return PressRun(presses: presses, frames: try running.traceLines().filter { $0["type"] as? String == "frame" },
                        log: log, loop: loop, film: film, coldFilm: coldFilm)
    }

    /// Forty presses, with loop passes made and freed between them: a new pass may sit at a freed
    /// film's address, and must still be brought back where it was left.
    @Test func onTheVirtualClockEveryCutIsGaplessAndTheLoopResumesOnItsNextFrame() throws {
        let run = try pressRun(clock: "virtual", count: 40, spacing: 0.5, cold: true, filmHeight: 90, strict: true)
        let frames = run.frames
        let cuts = run.cuts
        #expect(cuts.count == run.presses.count)
        for at in cuts {
            let first = frames[at], before = frames[at - 1]
            #expect(first["pts"] as? Double == 0, "the film starts on its first frame")
            // Gapless in: the film's first frame at most 2 vsyncs after the loop's last (a frame lasts 2).
            #expect((first["vsync"] as! Int) - (before["vsync"] as! Int) <= 2)
            // Every film frame once, 2 vsyncs each; the loop back on the frame after the one it left.
            let filmFrames = frames[at...].prefix { run.isFilm($0) }
            #expect(filmFrames.map { Int((($0["pts"] as! Double) * 30).rounded()) } == Array(0..<15))
            guard let back = frames[(at + filmFrames.count)...].first else { continue }
            #expect(back["uri"] as? String == run.loop)
            // The frame after the one it left: frame 0 of the next pass when it left on its last.
            let left = before["pts"] as! Double, resumed = back["pts"] as! Double
            #expect(abs(resumed - (left + 1.0 / 30).truncatingRemainder(dividingBy: 7)) < 1e-3, "left the loop at \(left), came back at \(resumed); log:\n\(run.log)")
            #expect((back["vsync"] as! Int) - (filmFrames.last!["vsync"] as! Int) == 2)
        }
    }

    /// Real time: from the OSC datagram's send to the wall time of the vsync its film's first frame
    /// is on, for the prerolled film and for one opened on the press. On a shared 2-core machine
    /// frames may drop under load, so only the start is held exact here (the virtual-clock test
    /// holds every frame), and the latency bounds only on a machine that kept up.
    @Test func onTheRealClockThePressReachesThePictureWithinAFewVsyncs() throws {
        // Full HD, as exhibits are: a cold open probes, opens a decoder and decodes a 1080p frame.
        let run = try pressRun(clock: "real", count: 30, spacing: 1.1, cold: true, filmHeight: 1080, strict: false)
        var warm: [Double] = [], cold: [Double] = []
        var exactResumes = 0, filmDrops = 0
        let cuts = run.cuts
        #expect(cuts.count >= run.presses.count / 2, "\(cuts.count) of \(run.presses.count) presses cut in")
        // Each press's cut: the first after it, before the next press (none: it was locked out).
        var taken = 0
        for (i, press) in run.presses.enumerated() {
            let next = i + 1 < run.presses.count ? run.presses[i + 1].time : .infinity
            guard let at = cuts.first(where: { (run.frames[$0]["wall"] as! Double) >= press.time }),
                  (run.frames[at]["wall"] as! Double) < next else { continue }
            taken += 1
            let first = run.frames[at], before = run.frames[at - 1]
            #expect(first["pts"] as? Double == 0)
            #expect(first["uri"] as? String == (press.cold ? run.coldFilm : run.film))
            let latency = ((first["wall"] as! Double) - press.time) * 60
            if press.cold { cold.append(latency) } else { warm.append(latency) }
            let filmFrames = run.frames[at...].prefix { run.isFilm($0) }
            if !press.cold { filmDrops += 15 - filmFrames.count }
            if let back = run.frames[(at + filmFrames.count)...].first,
               abs((back["pts"] as! Double) - ((before["pts"] as! Double) + 1.0 / 30).truncatingRemainder(dividingBy: 7)) < 1e-3 { exactResumes += 1 }
        }
        func summary(_ values: [Double]) -> String {
            let sorted = values.sorted()
            guard let worst = sorted.last else { return "none" }
            return "median \(sorted[sorted.count / 2].formatted(decimals: 2)), worst \(worst.formatted(decimals: 2)) (\(sorted.count) presses)"
        }
        print("OSC press to the film's first frame (wall time, 60 Hz vsync periods): prerolled \(summary(warm)); opened on the press \(summary(cold)); \(taken) of \(run.presses.count) presses taken; exact resumes \(exactResumes)/\(taken), prerolled film frames dropped \(filmDrops)")
        // A machine that cannot keep real time says nothing of the press's path: frames dropped,
        // or more runnable threads than cores (other builds and tests) while it ran.
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)).flatMap { Double($0.split(separator: " ")[0]) } ?? 0
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        if filmDrops > 0 || load > cores || taken < run.presses.count {
            print("skipped the latency bounds: \(filmDrops) film frames dropped, \(run.presses.count - taken) presses locked out, load average \(load) on \(Int(cores)) cores; figures above for the record")
        } else {
            // A load average is a minute's mean: a burst inside it can still delay one press (8
            // vsyncs once, median 2), so 1 in 10 may take up to 12, none more.
            #expect(!warm.isEmpty && warm.filter { $0 > 6 }.count * 10 <= warm.count && warm.max()! <= 12, "\(warm.sorted())")
            #expect(warm.sorted()[warm.count / 2] < cold.sorted()[cold.count / 2], "prerolling makes the press reach the picture sooner")
        }
    }
}
