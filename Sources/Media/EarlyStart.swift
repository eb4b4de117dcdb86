import Foundation
import Playback
import Synchronization

/// The first item's file opened, its streams probed and its first pictures decoded on a thread of
/// their own while the output opens (loading the GL driver takes tens of milliseconds), so that
/// the first picture is ready sooner. The session's first open of that file takes the demuxer
/// (`FFmpegSource`), and its first reader takes the decoder with its frames (`openReader`) when it
/// asks for the same hardware setting; what nobody takes within `unclaimedLimit` is closed.
/// Software decoding on one thread only: a frame-threaded decoder starts its threads as it opens,
/// and each thread start waits for the dynamic loader's lock, which the GL driver's load holds for
/// tens of milliseconds. A decoder that comes up on hardware is closed at once (the session's own
/// opens it knowing the output's DMA-BUF import).
public enum EarlyStart {
    /// How long an open nobody takes is kept (seconds).
    static let unclaimedLimit = 10.0

    fileprivate struct Opened: @unchecked Sendable {
        // @unchecked: handed from the opening thread to the one reader that takes it, through the slot's lock.
        let demuxer: Demuxer
        var decoder: VideoDecoder?
        /// The first frames, in order.
        var frames: [VideoFrame] = []
        /// The stream ended within them.
        var ended = false
    }

    fileprivate final class Entry: Sendable {
        let path: String
        let open: Double
        let read: Double
        let hardware: HardwareDecoding
        /// nil inside: the open failed (the session's own open says why).
        let opened = Latch<Opened?>()
        /// Raised once the decoder was taken or refused: the opening thread may end.
        let settled = Latch<Bool>()

        init(path: String, limits: MediaIOLimits, hardware: HardwareDecoding) {
            self.path = path
            (open, read) = (limits.open, limits.read)
            self.hardware = hardware
        }

        func matches(path: String, limits: MediaIOLimits) -> Bool {
            self.path == path && open == limits.open && read == limits.read
        }
    }

    private struct Slot: @unchecked Sendable {
        // @unchecked: read and written under the mutex only.
        var entry: Entry?
        /// The demuxer taken by the session, waiting for its first reader to take the decoder.
        var demuxerTaken = false
    }

    private static let slot = Mutex(Slot())

    /// Opens `url` (a local file) on a thread of its own and decodes its first `frames` pictures (a
    /// session's preroll: what it waits for before it presents) in software, on that thread.
    /// The decoder opens early with `hardware` `none`, or `auto` on a machine with no decoding
    /// device (it would choose software); otherwise only the file opens: a hardware decoder is not opened twice.
    /// False when it did not start: not a file, or the one slot still holds another start's open.
    @discardableResult
    public static func start(_ url: URL, limits: MediaIOLimits, hardware: HardwareDecoding, frames: Int = 1, logger: Logger) -> Bool {
        guard url.isFileURL else { return false }
        let decodes = hardware == .none || hardware == .auto && !hasDecoderDevices()
        let entry = Entry(path: url.mediaLocation, limits: limits, hardware: hardware)
        let replaced = slot.withLock { slot -> Bool in
            guard slot.entry == nil else { return true }
            slot.entry = entry
            return false
        }
        guard !replaced else { return false }
        startThread(named: "marquee-early") {
            var opened: Opened?
            do {
                opened = Opened(demuxer: try Demuxer(path: entry.path, limits: limits))
                StartupMarks.mark("early-probed")
                guard decodes else { throw CancellationError() }
                // In software at once: with no decoding device `auto` comes to software too, and
                // its hardware attempts load libraries (CUDA's), which would take turns with the
                // output's GL driver load at the dynamic loader's lock.
                let decoder = try VideoDecoder(demuxer: opened!.demuxer, threads: 1, hardware: .none, interop: nil,
                                               sessions: FFmpegCodecSessions())
                // A still's one frame lasts its item's duration, which only the session knows.
                guard !decoder.info.isStillImage else { throw CancellationError() }
                var decoded: [VideoFrame] = []
                var ended = false
                while decoded.count < max(1, frames), !ended {
                    if let frame = try decoder.nextFrame() {
                        decoded.append(frame)
                        if decoded.count == 1 { StartupMarks.mark("early-decoded") }
                    } else {
                        ended = true
                    }
                }
                if hardware == .auto {
                    // What `auto` says of this machine's hardware (each attempt and why it failed),
                    // learnt once the driver has loaded, from a decoder that asks as the session's would.
                    if !DriverLoads.waitUntilNone(timeout: 0.5) {
                        logger.debug("GL driver still loading after 0.5 s; hardware decoding asked meanwhile", ["uri": entry.path])
                    }
                    let asked = try VideoDecoder(demuxer: opened!.demuxer, threads: 1, hardware: .auto, interop: nil,
                                                 sessions: FFmpegCodecSessions())
                    guard asked.decodingPath.hwdecCurrent == DecodingPath.software.hwdecCurrent else {
                        logger.debug("early decoder not used: hardware decoding came up", ["uri": entry.path])
                        throw CancellationError()
                    }
                    decoder.decodingPath = asked.decodingPath
                }
                opened!.decoder = decoder
                opened!.frames = decoded
                opened!.ended = ended
            } catch is CancellationError {
            } catch {
                // The session's own open fails the same way and reports it.
                logger.debug("early open failed", ["uri": entry.path, "error": "\(error)"])
            }
            entry.opened.set(opened)
            // Kept until taken, or closed (here, as this thread ends) after the limit.
            _ = entry.settled.wait(timeout: unclaimedLimit)
            slot.withLock { slot in
                if slot.entry === entry { slot = Slot() }
            }
        }
        return true
    }

    /// Whether the slot holds an open of `url` (for the tests: taking or letting go of it frees the slot).
    static func holds(_ url: URL) -> Bool {
        slot.withLock { $0.entry?.path == url.mediaLocation }
    }

    /// The demuxer opened early for `path`, if it was opened with these limits (waits for an
    /// open under way, within its own limit); nil: the caller opens the file itself.
    static func takeDemuxer(path: String, limits: MediaIOLimits) -> Demuxer? {
        let entry: Entry? = slot.withLock { slot in
            guard let entry = slot.entry, !slot.demuxerTaken, entry.matches(path: path, limits: limits) else { return nil }
            slot.demuxerTaken = true
            return entry
        }
        guard let entry else { return nil }
        guard let opened = entry.opened.wait(timeout: limits.open + 1) ?? nil else {
            release(entry)
            return nil
        }
        if opened.decoder == nil { release(entry) }
        return opened.demuxer
    }

    /// The decoder opened early on `demuxer` (one thread) and the frames it decoded first, in
    /// order (`ended`: the stream ended within them), if it decodes with `hardware`'s setting;
    /// taken once. A `preroll`'s reader, or one asking for other hardware, gets nothing and closes
    /// it (its cursor would lag, or hold packets for nobody once the preroll closes).
    static func takeDecoder(for demuxer: Demuxer, preroll: Bool = false,
                            hardware: HardwareDecoding) -> (decoder: VideoDecoder, frames: [VideoFrame], ended: Bool)? {
        // Claimed under the lock that found it: two readers opening at once cannot both get it.
        let claimed: (Entry, Opened)? = slot.withLock { slot in
            guard let entry = slot.entry, slot.demuxerTaken, let opened = entry.opened.value ?? nil,
                  opened.demuxer === demuxer, opened.decoder != nil else { return nil }
            slot = Slot()
            return (entry, opened)
        }
        guard let (entry, opened) = claimed, let decoder = opened.decoder else { return nil }
        entry.settled.set(true)
        guard !preroll, entry.hardware == hardware else { return nil }
        decodersTaken.add(1, ordering: .relaxed)
        StartupMarks.mark("early-taken")
        return (decoder, opened.frames, opened.ended)
    }

    /// Early decoders taken by a reader (for the tests: the start path uses what was decoded early).
    static let decodersTaken = Atomic(0)

    /// Whether the machine has a device a hardware decoder could use (DRM render nodes, V4L2, NVIDIA).
    static func hasDecoderDevices() -> Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: "/dev/dri") { return true }
        let dev = (try? fm.contentsOfDirectory(atPath: "/dev")) ?? []
        return dev.contains { $0.hasPrefix("video") || $0.hasPrefix("nvidia") }
    }

    private static func release(_ entry: Entry) {
        slot.withLock { slot in
            if slot.entry === entry { slot = Slot() }
        }
        entry.settled.set(true)
    }
}

/// GL driver loads under way (`eglInitialize` maps Mesa and LLVM, tens of milliseconds holding the
/// dynamic loader's lock): work that loads libraries of its own and can wait (`EarlyStart`'s
/// decoder) waits for them to end.
public enum DriverLoads {
    private static let underWay = Monitor(0)

    /// Runs `body`, a driver load, counted.
    public static func during<T>(_ body: () throws -> T) rethrows -> T {
        underWay.update { $0 += 1 }
        defer { underWay.update { $0 -= 1 } }
        return try body()
    }

    /// Waits until no driver load is under way, `timeout` seconds at most; false when one still is.
    static func waitUntilNone(timeout: Double) -> Bool {
        underWay.wait(until: { $0 == 0 }, timeout: timeout)
    }
}
