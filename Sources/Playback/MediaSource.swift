import Foundation
import Synchronization

/// One opened media file, as its backend gives it: its asset's probe describes it, and every
/// reader of the asset's items (pictures, sound, prerolls, a loop's primed start) reads from it,
/// so that an item opens its file once (the FFmpeg backend: one demuxer, `Media.Demuxer`).
/// Readers opened from it keep it open. Safe to use from any thread.
public protocol MediaSource: AnyObject, Sendable {
    /// What the file holds (`MediaBackend.probe`).
    func describe() throws -> AssetDescription
    /// A reader positioned at the start (`MediaBackend.openReader`).
    func openReader() throws -> any FrameReader
    /// A reader for an item's first frames only (`MediaBackend.openPrerollReader`).
    func openPrerollReader() throws -> any FrameReader
    /// The file's sound, positioned at the start; nil when it has none (`MediaBackend.openAudioReader`).
    func openAudioReader() throws -> (any AudioReader)?
    /// False once the file can no longer be read (a wait timed out): the next user opens it again.
    var isUsable: Bool { get }
    /// Whether holding it holds an open file (what `KeptSources` bounds); by default true.
    var holdsFile: Bool { get }
}

extension MediaSource {
    public var holdsFile: Bool { true }
}

/// A backend's per-call methods as a source, for backends that open nothing to share (a test's
/// scripted one): each call is the backend's own.
package final class BackendCalls: MediaSource {
    let backend: any MediaBackend
    let url: URL

    package init(backend: any MediaBackend, url: URL) {
        self.backend = backend
        self.url = url
    }

    package func describe() throws -> AssetDescription { try backend.probe(url) }
    package func openReader() throws -> any FrameReader { try backend.openReader(url) }
    package func openPrerollReader() throws -> any FrameReader { try backend.openPrerollReader(url) }
    package func openAudioReader() throws -> (any AudioReader)? { try backend.openAudioReader(url) }
    package var isUsable: Bool { true }
    package var holdsFile: Bool { false }
}

/// The assets that keep their probe's opened file for their first reader, most recent last: at
/// most `limit`, so that a long queue of probed assets that do not play yet holds few files open.
final class KeptSources: Sendable {
    static let shared = KeptSources()
    static let limit = 16

    private struct Entry: @unchecked Sendable {
        // @unchecked: a weak reference, read under the lock.
        weak var asset: Asset?
    }

    private let entries = Mutex<[Entry]>([])

    /// `asset` keeps its source; the oldest beyond `limit` let theirs go.
    func keep(_ asset: Asset) {
        let evicted: [Asset] = entries.withLock { entries in
            entries.removeAll { $0.asset == nil || $0.asset === asset }
            entries.append(Entry(asset: asset))
            let excess = max(0, entries.count - Self.limit)
            defer { entries.removeFirst(excess) }
            return entries.prefix(excess).compactMap(\.asset)
        }
        for asset in evicted { asset.dropKeptSource() }
    }
}
