import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One of tools/netfixture.py's loopback servers, run for a test: its port, and the lines it
/// printed (one per connection or request). Stopped (SIGKILL) when the test lets it go.
public final class LoopbackServer: @unchecked Sendable {
    let process = Process()
    public let port: Int
    public let address: String
    private let lines = LogLines()

    /// `port` 0: an ephemeral one (a restarted server passes the port it had).
    public convenience init(_ mode: String, _ arguments: [String], address: String = "127.0.0.1", port requested: Int = 0) throws {
        try self.init(command: ["/usr/bin/env", "python3", Command.repository + "/tools/netfixture.py", mode] + arguments + [address, String(requested)],
                      address: address, name: "netfixture.py \(mode)")
    }

    /// GStreamer's RTSP server (tools/rtspfixture.py) serving a live picture at `/live`; `only`
    /// ("tcp", "udp"): the one lower transport it offers.
    public static func rtsp(port requested: Int = 0, only: String? = nil) throws -> LoopbackServer {
        try LoopbackServer(command: ["/usr/bin/python3", Command.repository + "/tools/rtspfixture.py", "127.0.0.1", String(requested)] + (only.map { [$0] } ?? []),
                           address: "127.0.0.1", name: "rtspfixture.py")
    }

    /// ffmpeg sending a live MPEG-TS picture over UDP to `port` on loopback, in real time (its
    /// "port" is the receiver's).
    public static func udpSender(port: Int) throws -> LoopbackServer {
        let send = "ffmpeg -nostdin -v error -re -f lavfi -i testsrc2=size=160x90:rate=25 -t 120 -c:v libx264 -preset ultrafast "
            + "-tune zerolatency -g 25 -pix_fmt yuv420p -f mpegts 'udp://127.0.0.1:\(port)?pkt_size=1316'"
        return try LoopbackServer(command: ["/bin/sh", "-c", "echo port \(port); exec \(send)"], address: "127.0.0.1", name: "ffmpeg udp")
    }

    /// A UDP port on loopback that nothing is bound to now.
    public static func freeUDPPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestFailure("bind failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw TestFailure("getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Why the RTSP server cannot run here (Debian's python3-gi and gir1.2-gst-rtsp-server-1.0
    /// missing), or nil.
    public static var rtspMissing: String? {
        let probe = "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer"
        guard let result = try? Command.run("/usr/bin/python3", ["-c", probe], timeout: 20), result.status == 0 else {
            return "GStreamer's RTSP server is not installed (python3-gi, gir1.2-gst-rtsp-server-1.0, gstreamer1.0-plugins-good)"
        }
        return nil
    }

    init(command: [String], address: String, name: String) throws {
        self.address = address
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        let lines = self.lines
        let partial = Partial()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else { handle.readabilityHandler = nil; return }
            for line in partial.complete(data) { lines.append(line) }
        }
        try process.run()
        // Its first line is the port; python starts in well under a second, allow 10.
        let end = Date().addingTimeInterval(10)
        var found: Int?
        while found == nil && Date() < end {
            found = lines.all.first.flatMap { $0.hasPrefix("port ") ? Int($0.dropFirst(5)) : nil }
            if found == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard let found else {
            process.terminate()
            throw TestFailure("\(name) on \(address) printed no port within 10 s")
        }
        port = found
    }

    public var url: String { "http://\(address):\(port)" }
    /// Sends `signal` to the server (the proxy holds or lets bytes flow on SIGUSR1).
    public func signal(_ signal: Int32) {
        Glibc.kill(process.processIdentifier, signal)
    }

    /// Stops the server now (a restart test's outage).
    public func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = process.waitForEnd(timeout: 10)
    }

    /// Lines after the port line: "conn" or "GET /path".
    public var events: [String] { Array(lines.all.dropFirst()) }

    /// `events` once no new line has come for `quiet` seconds (at most `within`): a server's line
    /// comes through a pipe, and may arrive after the client already has its answer.
    public func settledEvents(quiet: Double = 0.2, within: Double = 5) -> [String] {
        let end = Date().addingTimeInterval(within)
        var seen = events.count
        while Date() < end {
            Thread.sleep(forTimeInterval: quiet)
            let now = events.count
            if now == seen { break }
            seen = now
        }
        return events
    }

    deinit {
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = process.waitForEnd(timeout: 10)
    }
}

/// Bytes read from a pipe, cut into whole lines (a line may come in two reads).
final class Partial: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = Data()

    func complete(_ data: Data) -> [String] {
        lock.withLock {
            pending.append(data)
            guard let last = pending.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
            let whole = pending[..<last]
            pending = Data(pending[(last + 1)...])
            return String(decoding: whole, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}


/// ffmpeg writing a live HLS stream (1 s segments, a sliding window of 4) into a folder in real
/// time, for a test to serve; killed when the test lets it go.
public final class LiveHLS: @unchecked Sendable {
    let process = Process()

    /// Starts it, and waits (up to 10 s) for its playlist to appear.
    public init(folder: String, seconds: Int) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-t", "\(seconds)",
                             "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "25", "-pix_fmt", "yuv420p",
                             "-f", "hls", "-hls_time", "1", "-hls_list_size", "4", "-hls_flags", "delete_segments",
                             "-hls_segment_filename", folder + "/s%d.ts", folder + "/index.m3u8"]
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let ready = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: folder + "/index.m3u8") && Date() < ready { Thread.sleep(forTimeInterval: 0.1) }
    }

    deinit {
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = process.waitForEnd(timeout: 10)
    }
}
