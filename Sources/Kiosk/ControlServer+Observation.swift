import Foundation
import Playback
import Synchronization

// Observed properties: read on one **marquee-control-observe** thread every 100 ms, and soon
// after the player says they may have changed; changes go to the clients that observe them.

extension ControlServer {
    /// Says that observed properties may have changed (the player shows a new picture, so
    /// `time-pos` moved): they are read again soon (at most every `fastestObservation`), not only
    /// at the next 100 ms tick. Cheap when nobody observes. Any thread.
    public func propertiesMayHaveChanged() {
        let wake = shared.withLock { shared -> Bool in
            guard shared.anyObserver, !shared.changeHinted else { return false }
            shared.changeHinted = true
            return true
        }
        if wake { wakeUp() }
    }

    /// Starts the **marquee-control-observe** thread, which runs the reads of observed properties in turn.
    func startObserving() {
        startThread(named: "marquee-control-observe") { [observations] in
            while true {
                switch observations.pop(timeout: 1) {  // an idle wait for work; 1 s to see a close
                case .element(let read): read()
                case .timedOut: continue
                case .closed: return
                }
            }
        }
    }

    /// Reads every observed property once, on the observe thread (a slow property holds up no client).
    func readObservedProperties() {
        let names = clients.values.reduce(into: Set<String>()) { $0.formUnion($1.session.observedNames) }
        shared.withLock { $0.anyObserver = !names.isEmpty }
        guard !names.isEmpty else { return }
        let handler = self.handler
        // One read at a time (observationRunning), so the queue always has room.
        observationRunning = observations.push({ [self] in
            // nil: unavailable or unknown (the change event then has no data, as mpv's).
            var values: [String: JSONValue?] = [:]
            for name in names { values.updateValue(try? handler.property(name), forKey: name) }
            finish(.observed(values))
        }, timeout: 0.5) == .pushed
    }

    func reportObservedChanges(_ values: [String: JSONValue?]) {
        for (fd, client) in clients {
            for event in client.session.propertyChanges(values) {
                send(event, to: client, fd: fd)
                if clients[fd] == nil { break }
            }
        }
    }
}
