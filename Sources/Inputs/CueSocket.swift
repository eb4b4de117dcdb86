import Foundation
import Playback
import SystemCalls
import Synchronization

/// A wall's cue socket (`wall.sync.cue`): one UDP socket bound to `listen`, which sends to the
/// wall's other nodes and receives from them, on a thread of its own (**marquee-cues**). Only
/// datagrams from the listed peers (address and port: peers send from their own cue socket) are
/// handed on; others are counted and the first is logged. One datagram is read at a time into one
/// buffer, so a flood fills the kernel's socket buffer, never a queue here.
public final class CueSocket: @unchecked Sendable {
    // @unchecked: the descriptor is written by `send` (sendto is thread-safe) and read by the
    // thread; it is closed only once the thread has finished; the rest are atomics or immutable.
    public let listen: UDPEndpoint
    public let peers: [UDPEndpoint]
    /// The port bound (the one asked for, or the system's choice for port 0).
    public let boundPort: UInt16
    private let fd: Int32
    private let thread = InputThreadState()
    /// Datagrams from peers handed on.
    public var received: Int { thread.count.load(ordering: .relaxed) }
    /// Datagrams from addresses that are not peers.
    public var foreign: Int { thread.refused.load(ordering: .relaxed) }

    /// Binds `listen` and starts reading; `onDatagram` (the bytes, the peer's index in `peers`)
    /// runs on the receiving thread. The largest datagram read is `largest` bytes (longer ones
    /// are cut by the socket; the parser refuses them).
    public init(listen: UDPEndpoint, peers: [UDPEndpoint], largest: Int, logger: Logger,
                onDatagram: @escaping @Sendable ([UInt8], Int) -> Void) throws(InputError) {
        self.listen = listen
        self.peers = peers
        let (fd, port) = try listen.bound(subject: "wall cues on \(listen)")
        boundPort = port
        self.fd = fd
        let thread = thread
        let allowed = peers.map { ($0.socketAddress().sin_addr.s_addr, $0.port.bigEndian) }
        startThread(named: "marquee-cues") {
            defer { _ = thread.finished.set(true) }
            var buffer = [UInt8](repeating: 0, count: max(1, largest) + 1)
            var loggedForeign = false
            while !thread.isStopping {
                guard (try? FileDescriptor.poll(fd, timeout: 0.25)) == true else { continue }
                var from = sockaddr_in()
                var fromLength = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &fromLength) }
                    }
                }
                guard count > 0 else { continue }
                guard let peer = allowed.firstIndex(where: { $0.0 == from.sin_addr.s_addr && $0.1 == from.sin_port }) else {
                    thread.refused.add(1, ordering: .relaxed)
                    if !loggedForeign {
                        loggedForeign = true
                        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                        inet_ntop(AF_INET, &from.sin_addr, &text, socklen_t(text.count))
                        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        logger.warning("wall cue from an address that is not a peer ignored (further ones are counted, not logged)",
                                       ["from": "\(host):\(UInt16(bigEndian: from.sin_port))", "bytes": "\(count)"])
                    }
                    continue
                }
                thread.count.add(1, ordering: .relaxed)
                onDatagram(Array(buffer[..<count]), peer)
            }
        }
    }

    /// Sends `bytes` to every peer without waiting (a full socket buffer drops it, as UDP
    /// would); returns the peers it could not be sent to, with the error.
    @discardableResult
    public func sendToPeers(_ bytes: [UInt8]) -> [(UDPEndpoint, InputError)] {
        var failures: [(UDPEndpoint, InputError)] = []
        for peer in peers {
            let sent = peer.withSocketAddress { address, length in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), address, length) }
            }
            if sent != bytes.count { failures.append((peer, InputError.errno("wall cue to \(peer)", "sendto", errno))) }
        }
        return failures
    }

    /// Stops reading (waits up to a second for the thread) and closes the socket.
    public func stop() {
        guard !thread.isStopping else { return }
        thread.stop()
    }

    deinit {
        thread.stopping.store(true, ordering: .relaxed)
        // Closed once the thread is out of its poll (it looks every quarter second).
        _ = thread.finished.wait(timeout: 1)
        close(fd)
    }
}
