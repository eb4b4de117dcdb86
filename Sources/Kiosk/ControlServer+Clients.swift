import Foundation
import Playback
import SystemCalls

// Client bookkeeping: what the server keeps per connection, and connections coming and going.

extension ControlServer {
    final class Client {
        /// The connection: closed when the client is dropped.
        let socket: FileDescriptor
        /// The protocol: parsing, the protocol's own commands, observed properties.
        let session: ControlSession
        var id: Int { session.clientID }
        /// The connecting process (SO_PEERCRED), for the log.
        let pid: Int32?
        /// Bytes read; `input[..<inputStart]` is handled, `input[inputStart..<scanned]` holds no newline.
        var input = [UInt8]()
        var inputStart = 0
        var scanned = 0
        var output = OutputQueue()
        /// A request of this client runs on a worker.
        var busy = false
        /// The client will send no more (end of stream): what it sent is still answered.
        var inputClosed = false
        /// The client has gone (hung up, or a write to it failed): what it queued dies with it, as
        /// mpv drops a client whose reply cannot be written.
        var peerGone = false
        /// Lines that may still start once the client has gone: 1 when it went while none of its
        /// requests ran (a command sent just before closing runs, as mpv runs it before its reply
        /// fails), else 0.
        var runsAfterGone = 0
        /// Look-ahead over the lines waiting (`ControlSession.supersedingKey`): `input[..<lookahead]`
        /// is classified; `lastSetting[key]` is the offset of the last waiting line setting `key`.
        var lookahead = 0
        var lastSetting: [String: Int] = [:]
        init(_ socket: consuming FileDescriptor, _ session: ControlSession, pid: Int32?) {
            self.socket = socket
            self.session = session
            self.pid = pid
        }
        var label: String { session.label }

        /// Classifies the complete lines not yet looked at, noting the last one setting each key.
        func lookAhead() {
            var start = max(lookahead, inputStart)
            while let newline = input[start...].firstIndex(of: 0x0A) {
                if let setting = ControlSession.supersedingKey(Array(input[start..<newline])) { lastSetting[setting.key] = start }
                start = newline + 1
            }
            lookahead = start
        }

        /// Forgets every line waiting (the client has gone).
        func discardInput() {
            input.removeAll()
            inputStart = 0
            scanned = 0
            lookahead = 0
            lastSetting = [:]
        }

        /// The first `count` bytes of `input` are gone: offsets move down.
        func dropped(_ count: Int) {
            scanned -= count
            lookahead = max(0, lookahead - count)
            lastSetting = lastSetting.filter { $0.value >= count }.mapValues { $0 - count }
        }
        var unhandledBytes: Int { input.count - inputStart }
        var hasCompleteLine: Bool { input[scanned...].contains(0x0A) }
    }

    /// A client's unsent output: one byte stream, knowing which of its bytes are replies (asked for)
    /// and which are events (unsolicited).
    struct OutputQueue {
        private var bytes = [UInt8]()
        private var start = 0
        /// How many bytes of the stream have been sent (the stream offset of `bytes[start]`).
        private var sent = 0
        /// The stream ranges of replies not yet sent completely, from `replyHead` on.
        private var replies: [(from: Int, to: Int)] = []
        private var replyHead = 0
        private(set) var unsentReplyBytes = 0

        var isEmpty: Bool { start == bytes.count }
        var unsentBytes: Int { bytes.count - start }
        var unsentEventBytes: Int { unsentBytes - unsentReplyBytes }

        mutating func append(_ line: [UInt8], isReply: Bool) {
            if isReply {
                let from = sent + unsentBytes
                replies.append((from, from + line.count))
                unsentReplyBytes += line.count
            }
            bytes.append(contentsOf: line)
        }

        /// Sends what the socket takes now; the error of a failed send, nil otherwise.
        mutating func send(to fd: Int32) -> SystemCallError? {
            defer { compact() }
            while start < bytes.count {
                do {
                    let n = try systemCall("send(control client)") {
                        bytes[start...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                    consumed(n)
                } catch {
                    return error.wouldBlock ? nil : error
                }
            }
            return nil
        }

        private mutating func consumed(_ n: Int) {
            let before = sent
            sent += n
            start += n
            while replyHead < replies.count {
                let range = replies[replyHead]
                let overlap = min(range.to, sent) - max(range.from, before)
                if overlap > 0 { unsentReplyBytes -= overlap }
                guard range.to <= sent else { break }
                replyHead += 1
            }
        }

        private mutating func compact() {
            if start == bytes.count {
                // A big reply's buffer is given back; a small one is kept for the next lines.
                bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 16)
                start = 0
            } else if start > 1 << 16 && start * 2 > bytes.count {
                bytes.removeSubrange(0..<start)
                start = 0
            }
            if replyHead == replies.count {
                replies.removeAll(keepingCapacity: true)
                replyHead = 0
            } else if replyHead > 64 && replyHead * 2 > replies.count {
                replies.removeSubrange(0..<replyHead)
                replyHead = 0
            }
        }
    }

    func acceptClients() {
        guard let listening = listener.rawValue else { return }
        while true {
            // Until the queue is empty (EAGAIN); another failure (out of descriptors) is logged and
            // the next poll tries again.
            let socket: FileDescriptor
            do {
                socket = try acceptClient(on: listening)
            } catch {
                if !error.wouldBlock { logger.warning("control client not accepted", ["error": "\(error)"]) }
                return
            }
            let fd = socket.rawValue
            let pid = peerProcess(fd)
            guard clients.count < maxClients else {
                let reply = #"{"error":"too many clients","request_id":0}"# + "\n"
                _ = reply.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                logger.warning("control client refused: too many clients", ["limit": "\(maxClients)", "pid": pid.map { "\($0)" } ?? "-"])
                continue
            }
            clients[fd] = Client(socket, ControlSession(clientID: nextClientID, handler: handler, maxObserved: maxObservedPerClient), pid: pid)
            nextClientID += 1
        }
    }

    /// The client has gone: its queued requests are dropped (a request running finishes, its reply
    /// is dropped). `replyFailed`: found by a failed write, so no further line runs at all.
    func peerLeft(_ client: Client, replyFailed: Bool) {
        guard !client.peerGone else { return }
        client.peerGone = true
        client.inputClosed = true
        client.runsAfterGone = client.busy || replyFailed ? 0 : 1
    }

    func disconnect(_ fd: Int32, _ why: String?) {
        if let why, let client = clients[fd] {
            logger.warning("control client disconnected", ["client": client.label, "pid": client.pid.map { "\($0)" } ?? "-", "why": why])
        }
        clients[fd] = nil  // its socket closes with it
    }
}

/// The next connection waiting on `listener`, non-blocking and closed on exec.
private func acceptClient(on listener: Int32) throws(SystemCallError) -> FileDescriptor {
    let socket = FileDescriptor(adopting: try systemCall("accept(control socket)") { accept(listener, nil, nil) })
    let fd = socket.rawValue
    try systemCall("fcntl(control client, F_SETFD)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    try socket.setNonBlocking()
    return socket
}

/// The process at the other end of a Unix socket, when the kernel says.
private func peerProcess(_ fd: Int32) -> Int32? {
    // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc shows the type only with _GNU_SOURCE).
    var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
    var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else { return nil }
    return credentials.pid
}
