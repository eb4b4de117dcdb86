import Foundation
import Playback
import Synchronization
import SystemCalls

// The socket I/O loop of the **marquee-control** thread: `poll` over the listener, the wake pipe
// and the clients; reads, writes, and sends events.

extension ControlServer {
    func serve() {
        defer {
            clients.removeAll()  // each client's socket closes with it
            listener = nil
            wakePipe.withLock { $0 = nil }
            unlink(path)
            ended.set(())
        }
        var lastObservation = ContinuousClock.now
        while true {
            var fds = [pollfd(fd: listener.rawValue ?? -1, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            for (fd, client) in clients where !client.peerGone {
                // Input is read while what waits unhandled is under a line's limit; POLLHUP and
                // POLLERR are reported whatever is asked.
                let readable = !client.inputClosed && client.unhandledBytes <= maxLineBytes
                fds.append(pollfd(fd: fd, events: (readable ? Int16(POLLIN) : 0) | (client.output.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
            }
            // Wake at least every `idleWake` to report observed property changes (sooner when a change
            // was hinted while a read ran).
            // An interrupted poll (EINTR) is a wake-up like any other: the loop polls again.
            _ = poll(&fds, nfds_t(fds.count), shared.withLock { $0.changeHinted } ? 10 : idleWake)
            // Drained before the shared state is read: a wake-up written after that read stays in
            // the pipe for the next poll (drained after it, a stop could wait out `idleWake`).
            if fds[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wake.read, &sink, sink.count) > 0 {}
            }
            let (stop, events, results) = shared.withLock { shared -> (Bool, [JSONValue], [Finished]) in
                defer {
                    shared.pendingEvents.removeAll()
                    shared.finished.removeAll()
                }
                return (shared.stopping, shared.pendingEvents, shared.finished)
            }
            afterStateRead.withLock { $0 }?()
            if stop { return }
            if fds[0].revents & Int16(POLLIN) != 0 { acceptClients() }
            for entry in fds.dropFirst(2) where entry.revents != 0 {
                guard let client = clients[entry.fd] else { continue }
                if entry.revents & Int16(POLLHUP | POLLERR) != 0 {
                    // Gone. With nothing of its own waiting or running, the line it sent just
                    // before closing is read (and runs); anything more it queued dies with it.
                    if entry.revents & Int16(POLLIN) != 0 && !client.busy && client.unhandledBytes == 0 { readFrom(entry.fd, client) }
                    if clients[entry.fd] != nil { peerLeft(client, replyFailed: false) }
                } else if entry.revents & Int16(POLLIN) != 0 {
                    readFrom(entry.fd, client)
                }
                if clients[entry.fd] != nil && entry.revents & Int16(POLLOUT) != 0 { flush(entry.fd, client) }
            }
            for result in results {
                switch result {
                case .reply(let id, let line):
                    guard let (fd, client) = clients.first(where: { $0.value.id == id }) else { continue }  // gone meanwhile
                    client.busy = false
                    if !client.peerGone {
                        client.output.append(line, isReply: true)
                        flush(fd, client)
                    }
                case .observed(let values):
                    observationRunning = false
                    reportObservedChanges(values)
                }
            }
            for event in events {
                for (fd, client) in clients { send(event, to: client, fd: fd) }
            }
            let sinceObservation = ContinuousClock.now - lastObservation
            if !observationRunning
                && (sinceObservation >= .milliseconds(100) || (sinceObservation >= Self.fastestObservation && shared.withLock({ $0.changeHinted }))) {
                lastObservation = .now
                shared.withLock { $0.changeHinted = false }
                readObservedProperties()
            }
            for (fd, client) in clients { process(fd, client) }
        }
    }

    /// Reads one chunk (poll comes back for the rest): a client cannot hold the thread.
    func readFrom(_ fd: Int32, _ client: Client) {
        do {
            let n = try scratch.withUnsafeMutableBytes { buffer throws(SystemCallError) in
                try client.socket.read(into: buffer, call: "read(control client)")
            }
            if n == 0 {
                client.inputClosed = true
            } else {
                client.input.append(contentsOf: scratch[0..<n])
            }
        } catch {
            if (error as? SystemCallError)?.wouldBlock != true { disconnect(fd, "\(error)") }
        }
    }

    func flush(_ fd: Int32, _ client: Client) {
        if let error = client.output.send(to: fd) {
            if error.errno == EPIPE || error.errno == ECONNRESET {
                // Gone (mpv drops a client whose reply write fails): what it queued is dropped.
                peerLeft(client, replyFailed: true)
            } else {
                disconnect(fd, "\(error)")
            }
        }
    }

    /// An event: unsolicited, so it counts against the client's unread limit.
    func send(_ value: JSONValue, to client: Client, fd: Int32) {
        guard !client.peerGone else { return }
        let line = Array(value.encoded.utf8) + [0x0A]
        if client.output.unsentEventBytes + line.count > maxPendingBytes {
            disconnect(fd, "more than \(maxPendingBytes) bytes of events unread")
        } else {
            client.output.append(line, isReply: false)
            flush(fd, client)
        }
    }
}
