import Foundation
import Playback

// The scripted media backend and the hand-driven display of the Playback tests, shared by their unit
// target (PlaybackTests) and their integration target (PlaybackIntegrationTests).

/// A frame of a scripted clip: `index` counts from the clip's first frame.
public struct ScriptFrame: PresentableFrame {
    public let pts: MediaTime
    public let duration: MediaTime
    public let index: Int
    public var byteCount = 0
    public init(pts: MediaTime, duration: MediaTime, index: Int, byteCount: Int = 0) {
        self.pts = pts
        self.duration = duration
        self.index = index
        self.byteCount = byteCount
    }
}

/// A media backend of scripted clips: exact, fast, and able to hold decoding or fail on cue.
public final class FakeBackend: MediaBackend, @unchecked Sendable {
    public struct Clip {
        public var frames: Int
        public var fps: Int32
        public var size = VideoSize(width: 320, height: 180)
        public var rotation = 0
        /// Every `keyframeInterval`-th frame is a sync frame (seeks land on them).
        public var keyframeInterval = 1
        /// Decoding throws when it reaches this frame.
        public var failAt: Int?
        /// The memory each frame says it holds.
        public var frameBytes = 0
        /// Every `nonReferenceEvery`-th frame (counting from 1: odd frames for 2) is one no other
        /// frame refers to (a B-frame); nil: none is.
        public var nonReferenceEvery: Int?
        /// Whether readers skip frames when told to (`FrameReader.setFrameDrop`).
        public var honoursFrameDrop = true
        /// Frame index -> frames its time jumps ahead by (and every later frame's): a gap in the
        /// times, as a live source reopened gives (seeks do not know of it).
        public var gaps: [Int: Int] = [:]
        public var duration: MediaTime { MediaTime(value: Int64(frames), timescale: fps) }
        public init(frames: Int, fps: Int32, size: VideoSize = VideoSize(width: 320, height: 180), rotation: Int = 0,
                    keyframeInterval: Int = 1, failAt: Int? = nil, frameBytes: Int = 0, nonReferenceEvery: Int? = nil,
                    honoursFrameDrop: Bool = true, gaps: [Int: Int] = [:]) {
            self.frames = frames
            self.fps = fps
            self.size = size
            self.rotation = rotation
            self.keyframeInterval = keyframeInterval
            self.failAt = failAt
            self.frameBytes = frameBytes
            self.nonReferenceEvery = nonReferenceEvery
            self.honoursFrameDrop = honoursFrameDrop
            self.gaps = gaps
        }

        /// Where frame `index` starts, in frames (its index and the gaps before it).
        func place(_ index: Int) -> Int64 { Int64(index + gaps.filter { $0.key <= index }.values.reduce(0, +)) }
    }

    public init() {}

    public struct Missing: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "\(path): avformat_open_input failed: No such file or directory" }
    }
    public struct Corrupt: Error, CustomStringConvertible {
        public let path: String
        public let frame: Int
        public var description: String { "\(path): avcodec_receive_frame failed at frame \(frame): Invalid data found when processing input" }
    }

    private let lock = NSCondition()
    private var clips: [String: Clip] = [:]
    private var held = false
    private var probeHeld = false
    /// Paths whose probe waits until released (a source that accepts and never answers).
    private var hanging: Set<String> = []
    private var probesHanging = 0
    public private(set) var probes = 0
    private var decodedFrames = 0
    /// Paced decoding: readers decode a frame only while fewer than `budget` were decoded (a
    /// decoder that takes virtual time); nil: as fast as they are asked.
    private var budget: Int?
    private var spent = 0
    /// True while a reader waits for budget, with every frame it decoded handed over.
    private var parked = false
    private var finished = false
    private var skippedFrames = 0
    private var levels: [DecoderFrameDrop] = []
    /// Readers alive now and at most at once, for playback and for prerolls; readers opened.
    private var live = (playback: 0, preroll: 0)
    private var mostLive = (playback: 0, preroll: 0)
    private var opened = (playback: 0, preroll: 0)

    /// Frames handed out by every reader so far.
    public var decodedCount: Int { lock.withLock { decodedFrames } }
    /// Frames readers skipped because they were told to.
    public var skippedCount: Int { lock.withLock { skippedFrames } }
    /// Every frame drop level readers were told, in order.
    public var frameDropLevels: [DecoderFrameDrop] { lock.withLock { levels } }
    /// The most readers alive at once (`openReader`'s, `openPrerollReader`'s).
    public var mostReadersAlive: (playback: Int, preroll: Int) { lock.withLock { mostLive } }
    /// Readers opened so far (`openReader`'s, `openPrerollReader`'s).
    public var readersOpened: (playback: Int, preroll: Int) { lock.withLock { opened } }
    /// Readers alive now.
    public var readersAlive: (playback: Int, preroll: Int) { lock.withLock { live } }

    fileprivate func readerCame(preroll: Bool) {
        lock.withLock {
            if preroll {
                live.preroll += 1
                opened.preroll += 1
                mostLive.preroll = max(mostLive.preroll, live.preroll)
            } else {
                live.playback += 1
                opened.playback += 1
                mostLive.playback = max(mostLive.playback, live.playback)
            }
        }
    }

    fileprivate func readerWent(preroll: Bool) {
        lock.withLock { if preroll { live.preroll -= 1 } else { live.playback -= 1 } }
    }

    /// Lets readers decode `frames` frames in all (skipped frames cost nothing), then waits up to
    /// 5 s until the reader has handed over every frame it may decode and waits for more (or has
    /// reached the end): what a slow decoder has done by a given vsync, deterministically.
    /// `queueFull`: the reader is not asked for more while it is true (its frames wait for room
    /// in the player's queue), so it need not be waited for then.
    public func allowDecoding(upTo frames: Int, queueFull: () -> Bool = { false }) {
        lock.withLock {
            budget = frames
            lock.broadcast()
            let deadline = Date(timeIntervalSinceNow: 5)
            while !(finished || (parked && spent >= frames) || queueFull()) && Date() < deadline {
                _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
            }
        }
    }

    /// Paces decoding from now on: readers decode at most `frames` frames in all until
    /// `allowDecoding(upTo:)` allows more. Set it before the reader starts.
    public func limitDecoding(to frames: Int) {
        lock.withLock {
            budget = frames
            lock.broadcast()
        }
    }

    /// Waits for budget for one decode (paced decoding only).
    private func spend() {
        lock.withLock {
            guard budget != nil else { return }
            let deadline = Date(timeIntervalSinceNow: 10)
            while let b = budget, spent >= b, Date() < deadline {
                parked = true
                lock.broadcast()
                _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
            }
            parked = false
            spent += 1
        }
    }

    private func readerFinished() {
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }

    public func add(_ name: String, _ clip: Clip) -> URL {
        lock.withLock { clips["/fake/" + name] = clip }
        return URL(fileURLWithPath: "/fake/" + name)
    }

    /// While held, readers wait before each frame (decoding is slow).
    public func holdDecoding(_ hold: Bool) {
        lock.withLock {
            held = hold
            lock.broadcast()
        }
    }

    public func holdProbes(_ hold: Bool) {
        lock.withLock {
            probeHeld = hold
            lock.broadcast()
        }
    }

    public var probeCount: Int { lock.withLock { probes } }

    /// `url`'s probes wait (its source hangs on open) until it is released.
    public func hangProbes(of url: URL, _ hang: Bool) {
        lock.withLock {
            if hang { hanging.insert(url.path) } else { hanging.remove(url.path) }
            lock.broadcast()
        }
    }

    /// Waits up to `timeout` seconds for a probe to be hanging; false when none is by then.
    public func waitForHangingProbe(timeout: Double) -> Bool {
        lock.withLock {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while probesHanging == 0 && Date() < deadline { _ = lock.wait(until: deadline) }
            return probesHanging > 0
        }
    }

    public func probe(_ url: URL) throws -> AssetDescription {
        let clip: Clip? = lock.withLock {
            probes += 1
            while probeHeld { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05)) }
            if hanging.contains(url.path) {
                probesHanging += 1
                lock.broadcast()
                while hanging.contains(url.path) { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05)) }
                probesHanging -= 1
            }
            return clips[url.path]
        }
        guard let clip else { throw Missing(path: url.path) }
        let track = AssetTrack(trackID: 1, mediaType: .video, naturalSize: clip.size,
                               preferredTransform: Transform2D(rotationDegrees: clip.rotation),
                               nominalFrameRate: Double(clip.fps), minFrameDuration: MediaTime(value: 1, timescale: clip.fps),
                               codec: "h264", pixelFormat: "yuv420p", colorSpace: "bt709")
        return AssetDescription(duration: clip.duration, tracks: [track])
    }

    public func openReader(_ url: URL) throws -> any FrameReader {
        guard let clip = lock.withLock({ clips[url.path] }) else { throw Missing(path: url.path) }
        return Reader(clip: clip, path: url.path, backend: self)
    }

    public func openPrerollReader(_ url: URL) throws -> any FrameReader {
        guard let clip = lock.withLock({ clips[url.path] }) else { throw Missing(path: url.path) }
        return Reader(clip: clip, path: url.path, backend: self, preroll: true)
    }

    public func waitWhileHeld() {
        lock.withLock {
            let deadline = Date(timeIntervalSinceNow: 10)
            while held && Date() < deadline { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        }
    }

    public final class Reader: FrameReader {
        public let clip: Clip
        public let path: String
        public let backend: FakeBackend
        public var next = 0
        public var drop = DecoderFrameDrop.none
        private var told = DecoderFrameDrop.none
        public let preroll: Bool
        public init(clip: Clip, path: String, backend: FakeBackend, preroll: Bool = false) {
            self.clip = clip
            self.path = path
            self.backend = backend
            self.preroll = preroll
            backend.readerCame(preroll: preroll)
        }
        deinit { backend.readerWent(preroll: preroll) }
        public func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {
            guard drop != told else { return }
            told = drop
            backend.lock.withLock { backend.levels.append(drop) }
            if clip.honoursFrameDrop { self.drop = drop }
        }

        private func skips(_ index: Int) -> Bool {
            switch drop {
            case .none: false
            case .nonReference: clip.nonReferenceEvery.map { (index + 1) % $0 == 0 } ?? false
            case .nonKey: index % clip.keyframeInterval != 0
            }
        }

        public func nextFrame() throws -> (any PresentableFrame)? {
            backend.waitWhileHeld()
            while next < clip.frames && skips(next) {
                next += 1
                backend.lock.withLock { backend.skippedFrames += 1 }
            }
            guard next < clip.frames else {
                backend.readerFinished()
                return nil
            }
            backend.spend()
            if let failAt = clip.failAt, next >= failAt { throw Corrupt(path: path, frame: next) }
            defer { next += 1 }
            backend.lock.withLock { backend.decodedFrames += 1 }
            return ScriptFrame(pts: MediaTime(value: clip.place(next), timescale: clip.fps),
                               duration: MediaTime(value: 1, timescale: clip.fps), index: next, byteCount: clip.frameBytes)
        }
        public func seek(to time: MediaTime) throws {
            let frame = Int((time.seconds * Double(clip.fps) + 1e-9).rounded(.down))
            next = max(0, min(clip.frames, frame - frame % clip.keyframeInterval))
        }
    }
}

/// Drives a player's output by hand, one vsync at a time.
public final class VirtualDisplay {
    public let output: PlayerVideoOutput
    public private(set) var vsync: Int64 = -1
    /// Every new picture: (vsync, item index, frame index), nil frame for the background.
    public private(set) var shown: [(vsync: Int64, item: Int?, frame: Int?)] = []

    public init(_ player: Player, refresh: Int64 = 60) throws {
        output = try PlayerVideoOutput(player: player, refresh: RefreshRate(numerator: refresh), name: "test-0")
    }

    @discardableResult
    public func step(_ count: Int = 1, wait: Double = 20) -> Player.Picture? {
        var last: Player.Picture?
        for _ in 0..<count {
            vsync += 1
            let picture = output.picture(forVsync: vsync, waitingUpTo: wait)
            if picture.isNew {
                shown.append((vsync, picture.item?.playlistIndex, (picture.frame as? ScriptFrame)?.index))
            }
            last = picture
        }
        return last
    }

    /// Vsyncs of the shown frames.
    public var frameVsyncs: [Int64] { shown.filter { $0.frame != nil }.map(\.vsync) }
}

/// Polls `condition` until it holds or `seconds` pass.
public func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return condition()
}

/// The first `count` values of `stream`, or those that came within `seconds` (a stream is cancelled,
/// and so ends, when the time is up): an event that never comes fails the test instead of hanging it.
public func firstValues<T: Sendable>(_ count: Int, of stream: AsyncStream<T>, within seconds: Double = 10) async -> [T] {
    await withTaskGroup(of: [T]?.self) { group in
        group.addTask {
            var values: [T] = []
            for await value in stream {
                values.append(value)
                if values.count == count { break }
            }
            return values
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return nil
        }
        var result: [T] = []
        for await values in group {
            if let values { result = values; break }
            break
        }
        group.cancelAll()
        return result
    }
}

/// A thread-safe list for callbacks to record into.
public final class Recorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    public init() {}
    public func append(_ item: T) { lock.withLock { items.append(item) } }
    public var all: [T] { lock.withLock { items } }
}

public let quiet = Logger(level: .error, sink: { _ in })

public func tm(_ value: Int64, _ scale: Int32) -> MediaTime { MediaTime(value: value, timescale: scale) }
