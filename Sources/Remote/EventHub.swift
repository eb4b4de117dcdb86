import Diagnostics
import Foundation
import HTTPServer
import Kiosk

/// The player's events (the control socket's, as JSON) to Server-Sent Events clients. Each client
/// has a queue of at most `maxQueued` events: one that falls that far behind is ended. At most
/// `maxClients` clients at once.
public final class EventHub: Sendable {
    public let maxClients: Int
    public let maxQueued: Int
    /// Sent while nothing else is, so a proxy keeps the stream open and a gone client is noticed.
    public let keepAliveSeconds: Double
    private let state = Monitor(State())

    struct State {
        var queues: [Int: [String]] = [:]
        var overflowed: Set<Int> = []
        var nextID = 1
    }

    public init(maxClients: Int = 16, maxQueued: Int = 1024, keepAliveSeconds: Double = 15) {
        self.maxClients = maxClients
        self.maxQueued = maxQueued
        self.keepAliveSeconds = keepAliveSeconds
    }

    public func broadcast(_ event: JSONValue) {
        let line = "data: \(event.encoded)\n\n"
        state.update { s in
            for id in Array(s.queues.keys) {
                if s.queues[id]!.count >= maxQueued { s.overflowed.insert(id) } else { s.queues[id]!.append(line) }
            }
        }
    }

    /// A new client's stream; nil when `maxClients` are connected.
    public func subscribe() -> (any HTTPStream)? {
        let id = state.withLock { s -> Int? in
            guard s.queues.count < maxClients else { return nil }
            defer { s.nextID += 1 }
            s.queues[s.nextID] = []
            return s.nextID
        }
        return id.map { Subscription(hub: self, id: $0) }
    }

    public var clientCount: Int { state.withLock { $0.queues.count } }

    final class Subscription: HTTPStream, @unchecked Sendable {
        // @unchecked: `lastSent` and `started` are used by the one connection thread that reads it.
        let hub: EventHub
        let id: Int
        var started = false
        var lastSent = ContinuousClock.now
        init(hub: EventHub, id: Int) {
            self.hub = hub
            self.id = id
        }

        func next() -> HTTPStreamChunk {
            if !started {
                started = true
                return .bytes(Array(": marquee events\n\n".utf8))
            }
            // Waits at most a second, so that a stopping server is not held up.
            let (lines, overflowed) = hub.state.wait(until: { !($0.queues[id]?.isEmpty ?? true) || $0.overflowed.contains(id) }, timeout: 1) { s, _ in
                defer { s.queues[id] = s.queues[id] == nil ? nil : [] }
                return (s.queues[id] ?? [], s.overflowed.contains(id))
            }
            if overflowed { return .end }
            if !lines.isEmpty {
                lastSent = .now
                return .bytes(Array(lines.joined().utf8))
            }
            if (ContinuousClock.now - lastSent).seconds >= hub.keepAliveSeconds {
                lastSent = .now
                return .bytes(Array(": keep-alive\n\n".utf8))
            }
            return .bytes([])
        }

        func close() {
            hub.state.update { s in
                s.queues[id] = nil
                s.overflowed.remove(id)
            }
        }
    }
}
