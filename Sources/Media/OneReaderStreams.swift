import Foundation
import Network
import Playback

/// The streams one reader at a time can take (`NetworkURL.isOneReaderStream`: a UDP port is bound
/// by its reader, a camera serves few RTSP sessions) that this process holds now, by URL. A probe
/// of such a stream never opens it beside another open: it waits for a probe under way, and takes
/// the description a probe read while a reader holds the stream, or for `keptFor` seconds after
/// (an item's reader opens right after its probe; a looped item's next pass is probed meanwhile).
final class OneReaderStreams: Sendable {
    static let shared = OneReaderStreams()
    static let keptFor = 30.0

    struct Entry {
        var probing = false
        var readers = 0
        var described: (description: AssetDescription, at: Double)?
    }
    // Monitor is a final class whose state is only reached under its lock.
    nonisolated(unsafe) private let entries = Monitor([String: Entry]())

    private enum Step { case described(AssetDescription), open, busy }

    /// `open`'s description of `uri`, or the one read while it is held; waits up to `limit` seconds
    /// for another probe of it or, with no description, for its readers to go.
    func probe(_ uri: String, limit: Double, _ open: () throws -> AssetDescription) throws -> AssetDescription {
        let now = LiveReader.now()
        let step = entries.wait(until: { state in
            guard let entry = state[uri] else { return true }
            return !entry.probing && (entry.readers == 0 || entry.described != nil)
        }, timeout: limit) { state, timedOut -> Step in
            var entry = state[uri] ?? Entry()
            if timedOut { return .busy }
            if let described = entry.described, entry.readers > 0 || now - described.at < Self.keptFor {
                return .described(described.description)
            }
            entry.probing = true
            state[uri] = entry
            return .open
        }
        switch step {
        case .described(let description): return description
        case .busy:
            throw MediaError(uri: uri, call: "avformat_open_input",
                             reason: "the stream is still opened by another item after \(limit.formatted(decimals: 1)) s (one reader at a time)")
        case .open:
            do {
                let description = try open()
                entries.update { $0[uri, default: Entry()].probing = false; $0[uri]?.described = (description, LiveReader.now()) }
                return description
            } catch {
                entries.update { $0[uri, default: Entry()].probing = false }
                throw error
            }
        }
    }

    /// Marks `uri` held by a reader until the hold goes.
    func hold(_ uri: String) -> Hold {
        entries.update { $0[uri, default: Entry()].readers += 1 }
        return Hold(uri: uri, streams: self)
    }

    fileprivate func release(_ uri: String) {
        entries.update { state in
            guard var entry = state[uri] else { return }
            entry.readers = max(0, entry.readers - 1)
            state[uri] = entry
        }
    }

    /// A reader's hold on its stream: released when it goes.
    final class Hold: Sendable {
        let uri: String
        let streams: OneReaderStreams
        init(uri: String, streams: OneReaderStreams) {
            self.uri = uri
            self.streams = streams
        }
        deinit { streams.release(uri) }
    }
}
