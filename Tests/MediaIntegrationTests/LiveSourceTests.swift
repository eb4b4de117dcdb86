import Foundation
import Media
import Network
import Playback
import Synchronization
import Testing
import TestSupport
@testable import MediaTests

/// A live HLS stream (ffmpeg writing a sliding window in real time, served by Python on
/// loopback) read through the backend's live reader while its server is killed and restarted.
@Suite(.serialized) struct LiveSourceTests {
    /// What the reader's thread saw: when each frame came, and the source's reports.
    final class Seen: Sendable {
        let frames = Mutex<[Double]>([])
        let changes = Mutex<[(Double, String?)]>([])
        let pts = Mutex<[Double]>([])
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The name of the thread that reads; threads started from it (FFmpeg's, the reader's) take it
    /// too, so they are counted apart from other tests' threads running in the same process.
    static let readerThreadName = "live-test-read"

    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) == name
        }.count
    }

    /// This process's TCP connections to `port` on loopback (its descriptors whose socket's remote
    /// port it is): other tests in the process do not talk to this test's server.
    static func connections(toPort port: Int) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                  link.hasPrefix("socket:[") else { return nil }
            return String(link.dropFirst(8).dropLast())
        })
        var count = 0
        for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
            let lines = ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
            for line in lines {
                let fields = line.split(separator: " ")
                guard fields.count > 9, let colon = fields[2].lastIndex(of: ":"),
                      Int(fields[2][fields[2].index(after: colon)...], radix: 16) == port, inodes.contains(String(fields[9])) else { continue }
                count += 1
            }
        }
        return count
    }

    @Test func aLiveHLSSourceComesBackAfterEachServerRestart() throws {
        let folder = TestMedia.folder + "/live-\(UUID().uuidString)"
        let encoder = try LiveHLS(folder: folder, seconds: 90)
        defer { withExtendedLifetime(encoder) {} }  // writing until the test ends
        #expect(FileManager.default.fileExists(atPath: folder + "/index.m3u8"))
        let first = try LoopbackServer("serve", [folder])
        try restartTest(label: "live HLS", url: "http://127.0.0.1:\(first.port)/index.m3u8", allow: "http://127.0.0.1", first: first) {
            try LoopbackServer("serve", [folder], port: first.port)
        }
    }

    /// The same with GStreamer's RTSP server (MJPEG over RTP) killed and restarted.
    @Test func anRTSPSourceComesBackAfterEachServerRestart() throws {
        if let missing = LoopbackServer.rtspMissing {
            print("skipped: \(missing)")
            return
        }
        let first = try LoopbackServer.rtsp()
        try restartTest(label: "RTSP", url: "rtsp://127.0.0.1:\(first.port)/live", allow: "rtsp://127.0.0.1", first: first) {
            try LoopbackServer.rtsp(port: first.port)
        }
    }

    /// The same with an MPEG-TS stream sent over UDP to the reader's port (IPTV as a head end sends
    /// it, unicast on loopback): the sender killed and started again.
    @Test func aUDPStreamComesBackAfterEachSenderRestart() throws {
        let port = try LoopbackServer.freeUDPPort()
        let first = try LoopbackServer.udpSender(port: port)
        try restartTest(label: "UDP MPEG-TS", url: "udp://127.0.0.1:\(port)", allow: "udp://127.0.0.1", first: first) {
            try LoopbackServer.udpSender(port: port)
        }
    }

    /// Reads `url` through the backend's live reader while its server (`first`, then what
    /// `restart` starts on the same port) is killed for 2.5 s and restarted 10 times: the picture
    /// is back within 3 s of each return, each outage is reported down then up, descriptors and
    /// threads do not grow, and frame times never go back.
    func restartTest(label: String, url: String, allow: String, first: LoopbackServer, restart: () throws -> LoopbackServer) throws {
        var server: LoopbackServer? = first
        var backend = FFmpegBackend(threads: 1)
        backend.limits.network = try NetworkAllowList(entries: [allow])
        let seen = Seen()
        backend.onLiveChange = { _, change in
            switch change {
            case .down(let reason): seen.changes.withLock { $0.append((Self.now(), reason)) }
            case .back: seen.changes.withLock { $0.append((Self.now(), nil)) }
            case .closedWhileDown, .lag: break
            }
        }
        let reader = try backend.openReader(URL(string: url)!)
        let stop = Atomic(false)
        let done = DispatchSemaphore(value: 0)
        let cancel = reader.canceller
        let owned = ReaderBox(reader)
        Thread.detachNewThread {
            nameThisThread(Self.readerThreadName)
            // The reader is used by this thread alone from here on (its canceller is Sendable).
            while !stop.load(ordering: .relaxed), let frame = try? owned.reader.nextFrame() {
                seen.frames.withLock { $0.append(Self.now()) }
                seen.pts.withLock { $0.append(frame.pts.seconds) }
            }
            done.signal()
        }
        func waitForFrame(after t: Double, within: Double) -> Double? {
            let end = Self.now() + within
            while Self.now() < end {
                if let first = seen.frames.withLock({ $0.first { $0 > t } }) { return first - t }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return nil
        }
        #expect(waitForFrame(after: 0, within: 10) != nil, "no first frame")
        Thread.sleep(forTimeInterval: 2)
        let fds = Self.connections(toPort: first.port)
        // Counted from the first reopen on: that one is made by the reader's thread, whose name
        // FFmpeg's own threads (UDP's receiver) take, the first open by the test's.
        var threads = 0
        var recoveries: [Double] = []
        let restarts = 10
        for round in 0..<restarts {
            server?.kill()
            server = nil
            Thread.sleep(forTimeInterval: 2.5)
            let back = Self.now()
            server = try restart()
            let recovery = waitForFrame(after: back, within: 10)
            #expect(recovery != nil, "no picture within 10 s of the server's return")
            recoveries.append(recovery ?? 10)
            Thread.sleep(forTimeInterval: 1.5)
            if round == 0 { threads = Self.threads(named: Self.readerThreadName) }
        }
        let fdsAfter = Self.connections(toPort: first.port)
        let threadsAfter = Self.threads(named: Self.readerThreadName)
        stop.store(true, ordering: .relaxed)
        cancel?()
        #expect(done.wait(timeout: .now() + 10) == .success, "the reader did not end within 10 s of its cancel")
        print("\(label): picture back after each of \(restarts) restarts in \(recoveries.map { ($0 * 100).rounded() / 100 }) s; connections to the server \(fds) -> \(fdsAfter), reader threads \(threads) -> \(threadsAfter)")
        #expect(recoveries.allSatisfy { $0 < 3 }, "picture back after \(recoveries) s")
        let changes = seen.changes.withLock { $0 }
        #expect(changes.filter { $0.1 == nil }.count == restarts, "came back \(changes.filter { $0.1 == nil }.count) times: \(changes.map { $0.1 ?? "up" })")
        // Each outage is noticed (reported down) before its server returns.
        #expect(changes.filter { $0.1 != nil }.count >= restarts)
        // Counted for this reader alone (the suite shares its process with tests running meanwhile).
        #expect(fdsAfter <= max(fds, 1) + 1, "connections to the server \(fds) -> \(fdsAfter) over \(restarts) reconnects")
        #expect(threads >= 1 && threadsAfter <= threads, "reader threads \(threads) -> \(threadsAfter) over \(restarts) reconnects")
        // The item's timeline runs on across reopens: it never goes back.
        let times = seen.pts.withLock { $0 }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 }, "frame times went back across a reopen")
    }

    /// A proxy between reader and server that holds the bytes (connections stay open): each stall
    /// is noticed by the 2 s stall limit after the bytes stop, and pictures come back once they flow again.
    @Test func aStalledConnectionIsNoticedWithinTwoSeconds() throws {
        let folder = TestMedia.folder + "/live-proxy-\(UUID().uuidString)"
        let encoder = try LiveHLS(folder: folder, seconds: 60)
        defer { withExtendedLifetime(encoder) {} }  // writing until the test ends
        let server = try LoopbackServer("serve", [folder])
        let proxy = try LoopbackServer("proxy", [String(server.port)])
        var backend = FFmpegBackend(threads: 1)
        backend.limits.network = try NetworkAllowList(entries: ["http://127.0.0.1"])
        let seen = Seen()
        backend.onLiveChange = { _, change in
            switch change {
            case .down(let reason): seen.changes.withLock { $0.append((Self.now(), reason)) }
            case .back: seen.changes.withLock { $0.append((Self.now(), nil)) }
            case .closedWhileDown, .lag: break
            }
        }
        let owned = ReaderBox(try backend.openReader(URL(string: "\(proxy.url)/index.m3u8")!))
        let cancel = owned.reader.canceller
        let stop = Atomic(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed), (try? owned.reader.nextFrame()) != nil {
                seen.frames.withLock { $0.append(Self.now()) }
            }
            done.signal()
        }
        func wait(within seconds: Double, _ test: () -> Bool) -> Bool {
            let end = Self.now() + seconds
            while Self.now() < end {
                if test() { return true }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return false
        }
        #expect(wait(within: 10) { !seen.frames.withLock { $0.isEmpty } }, "no first frame")
        var noticed: [Double] = [], recoveries: [Double] = []
        for _ in 0..<3 {
            Thread.sleep(forTimeInterval: 2)
            let downsBefore = seen.changes.withLock { $0.filter { $0.1 != nil }.count }
            proxy.signal(SIGUSR1)  // hold
            let held = Self.now()
            #expect(wait(within: 10) { seen.changes.withLock { $0.filter { $0.1 != nil }.count } > downsBefore },
                    "the stall was not noticed: proxy \(proxy.events.suffix(6)), frames after the hold \(seen.frames.withLock { $0.filter { $0 > held }.count })")
            // From the hold: the frames FFmpeg had buffered come out at once (this reader is not
            // paced by a display), then the read waits its 2 s stall limit.
            let down = seen.changes.withLock { $0.last { $0.1 != nil }?.0 ?? held + 10 }
            noticed.append(down - held)
            Thread.sleep(forTimeInterval: 1)
            let released = Self.now()
            proxy.signal(SIGUSR1)  // flow
            #expect(wait(within: 10) { seen.frames.withLock { $0.contains { $0 > released } } }, "no picture after the bytes flowed again")
            recoveries.append((seen.frames.withLock { $0.first { $0 > released } } ?? released + 10) - released)
        }
        stop.store(true, ordering: .relaxed)
        cancel?()
        #expect(done.wait(timeout: .now() + 10) == .success)
        print("proxy stall: reasons \(seen.changes.withLock { $0.compactMap(\.1) }); noticed \(noticed.map { ($0 * 100).rounded() / 100 }) s after the bytes stopped; back \(recoveries.map { ($0 * 100).rounded() / 100 }) s after bytes flowed")
        // Within the 2 s stall limit (and not at once: the stream did play on its buffer first).
        #expect(noticed.allSatisfy { $0 > 0.2 && $0 <= 2.5 }, "noticed after \(noticed) s")
        #expect(recoveries.allSatisfy { $0 < 3 }, "back after \(recoveries) s")
    }
}

/// Hands a reader to the one thread that reads it.
final class ReaderBox: @unchecked Sendable {
    let reader: any FrameReader
    init(_ reader: any FrameReader) { self.reader = reader }
}
