import Foundation
import Playback
import Synchronization

// Requests: a client's lines answered in order, the player's part of each on a
// **marquee-control-request** worker.

extension ControlServer {
    /// Runs the client's waiting lines until one goes to a worker; ends a client that is done.
    func process(_ fd: Int32, _ client: Client) {
        guard clients[fd] === client else { return }  // disconnected meanwhile
        while !client.busy && client.output.unsentReplyBytes < maxPendingBytes {
            if client.peerGone && client.runsAfterGone == 0 {
                // Its queued requests die with it: a burst it left behind must not go on running.
                if client.unhandledBytes > 0 {
                    logger.info("control client gone; its queued requests are dropped",
                                ["client": client.label, "bytes": "\(client.unhandledBytes)"])
                }
                client.discardInput()
                break
            }
            guard let newline = client.input[client.scanned...].firstIndex(of: 0x0A) else {
                client.scanned = client.input.count
                break
            }
            let start = client.inputStart
            let line = Array(client.input[start..<newline])
            client.inputStart = newline + 1
            client.scanned = client.inputStart
            guard line.count <= maxLineBytes else { return disconnect(fd, "line longer than \(maxLineBytes) bytes") }
            // A line whose setting a later waiting line of this client replaces is answered as done
            // without running (a burst of display-power toggles runs its last one, not all).
            client.lookAhead()
            if let setting = ControlSession.supersedingKey(line), let last = client.lastSetting[setting.key], last > start {
                let reply = ControlSession.supersededReply(requestID: setting.requestID, command: setting.command)
                if !reply.isEmpty && !client.peerGone {
                    client.output.append(reply, isReply: true)
                    flush(fd, client)
                }
                continue
            }
            if client.peerGone { client.runsAfterGone -= 1 }
            handle(line, from: client, fd: fd)
            guard clients[fd] === client else { return }
        }
        if client.inputStart > 0 && (client.inputStart == client.input.count || client.inputStart > 1 << 15) {
            client.input.removeSubrange(0..<client.inputStart)
            client.dropped(client.inputStart)
            client.inputStart = 0
        }
        if client.scanned == client.input.count && client.unhandledBytes > maxLineBytes {
            return disconnect(fd, "line longer than \(maxLineBytes) bytes")
        }
        // A client that has said all it will is closed once it is answered (one that has gone,
        // once its requests have run).
        if client.inputClosed && !client.busy && !client.hasCompleteLine && (client.peerGone || client.output.isEmpty) {
            disconnect(fd, nil)
        }
    }

    /// One request line: answered here, or its player's part started on a worker.
    func handle(_ bytes: [UInt8], from client: Client, fd: Int32) {
        switch client.session.request(bytes) {
        case nil:
            return
        case .answered(let line)?:
            guard !client.peerGone else { return }
            client.output.append(line, isReply: true)
            flush(fd, client)
        case .player(let work)?:
            // The player's part runs on a worker; the server thread goes on with the other clients.
            client.busy = true
            let id = client.id
            startThread(named: "marquee-control-request") { [self] in finish(.reply(clientID: id, line: work())) }
        }
    }

    /// Hands a worker's result to the server thread.
    func finish(_ result: Finished) {
        shared.withLock { $0.finished.append(result) }
        wakeUp()
    }
}
