import Display
import Foundation
@testable import Kiosk
import Media
import Playback
import Testing
import TestSupport
@testable import KioskTests

/// A kiosk run on a presentation thread of its own, as `marquee` runs it: the output opens there,
/// then `makeSession` makes the session for what it can do, and the session plays on it.
final class KioskOnThread: @unchecked Sendable {
    // @unchecked: `session` is guarded by `made`.
    private let made = NSCondition()
    private var session: KioskSession?
    private let done = DispatchSemaphore(value: 0)

    init(config: KioskConfig, options: RunOptions = RunOptions(), logger: Logger,
         makeSession: @escaping @Sendable (OutputCapabilities) -> KioskSession) {
        let thread = Thread { [self] in
            _ = try? runKiosk(config: config, options: options, logger: logger, makeSession: { output in
                let session = makeSession(output)
                made.withLock {
                    self.session = session
                    made.broadcast()
                }
                return session
            }, shouldContinue: { true })
            done.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// The session, once the output has opened and it is made; nil after `timeout` seconds.
    func waitForSession(timeout: Double = 20) -> KioskSession? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return made.withLock {
            while session == nil {
                if !made.wait(until: deadline) { return session }
            }
            return session
        }
    }

    /// Stops the session and waits up to `timeout` seconds for the presentation thread to end;
    /// false if it did not.
    @discardableResult
    func stop(timeout: Double = 10) -> Bool {
        made.withLock { session }?.stop()
        return done.wait(timeout: .now() + timeout) == .success
    }
}

/// One record of what happened, in order: log lines and the backend's calls.
final class Happenings: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ entry: String) { lock.withLock { list.append(entry) } }
    var all: [String] { lock.withLock { list } }
}

/// A backend that records each probe and reader opened, and the first frame each reader gives.
struct RecordingBackend: MediaBackend {
    let inner: any MediaBackend
    let record: Happenings

    func probe(_ url: URL) throws -> AssetDescription {
        record.append("probe \(url.lastPathComponent)")
        return try inner.probe(url)
    }

    func openReader(_ url: URL) throws -> any FrameReader {
        record.append("open \(url.lastPathComponent)")
        return Reader(inner: try inner.openReader(url), record: record)
    }

    final class Reader: FrameReader {
        let inner: any FrameReader
        let record: Happenings
        var first = true
        init(inner: any FrameReader, record: Happenings) {
            self.inner = inner
            self.record = record
        }
        func nextFrame() throws -> (any PresentableFrame)? {
            let frame = try inner.nextFrame()
            if first, let video = frame as? VideoFrame {
                first = false
                record.append("first frame \(video.pixelFormat.rawValue) \(video.width)x\(video.height)")
            }
            return frame
        }
        func seek(to time: MediaTime) throws { try inner.seek(to: time) }
        var canceller: (@Sendable () -> Void)? { inner.canceller }
    }
}

/// An output is opened before its players: no item is probed or decoded before it exists, and the
/// decoders know from their first frame what the output wants.
@Suite(.serialized) struct OutputFirstTests {
    /// On both headless outputs: GL (a texture limit, the cpu conversion asked for) and planes
    /// (swscale: no limit, and no shader to convert for).
    @Test(arguments: [ScanoutMode.gl, .planes])
    func nothingIsProbedOrDecodedBeforeTheOutputHasOpened(scanout: ScanoutMode) throws {
        let clip = try TestMedia.clip(seconds: 2, fps: 30, width: 160, height: 90)
        var config = KioskConfig()
        config.playlist = [.init(uri: clip, path: clip)]
        config.display.output = .headless
        config.display.mode = DisplayMode(width: 160, height: 90, refresh: RefreshRate(numerator: 60))
        config.display.conversion = .cpu
        config.display.scanout = scanout
        let record = Happenings()
        let logger = Logger(level: .info, sink: { line in
            if line.contains("output chosen") { record.append("output chosen") }
        })
        let kiosk = KioskOnThread(config: config, logger: logger) { [config] output in
            record.append("session made for \(output.name) (\(output.colorConversion.rawValue), max texture \(output.maxTextureSize ?? 0))")
            return KioskSession(config: config, configPath: nil, logger: logger, output: output, slowStorageLimit: 100, mediaLayer: {
                RecordingBackend(inner: $0, record: record)
            })
        }
        defer { #expect(kiosk.stop(), "the presentation thread did not end") }
        let session = try #require(kiosk.waitForSession(), "no session made within 20 s: \(record.all)")
        let deadline = Date(timeIntervalSinceNow: 20)
        while !record.all.contains(where: { $0.hasPrefix("first frame") }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let happened = record.all
        let opened = try #require(happened.firstIndex(of: "output chosen"), "\(happened)")
        let capabilities = scanout == .gl ? "(cpu, max texture " : "(shader, max texture 0)"
        let made = try #require(happened.firstIndex { $0.hasPrefix("session made for headless-0 \(capabilities)") }, "\(happened)")
        let probed = try #require(happened.firstIndex { $0.hasPrefix("probe ") }, "\(happened)")
        let decoded = try #require(happened.firstIndex { $0.hasPrefix("open ") }, "\(happened)")
        #expect(opened < made && made < probed && probed < decoded, "\(happened)")
        // The first frame comes as decoded (the layer converts it for the cpu conversion as it
        // uploads it), at a size the output can draw: nothing waited for the output's answer.
        #expect(happened.contains("first frame yuv420p 160x90"), "\(happened)")
        #expect(session.output.name == "headless-0" && session.output.colorConversion == (scanout == .gl ? .cpu : .shader))
        #expect(scanout == .gl ? (session.output.maxTextureSize ?? 0) >= 2048 : session.output.maxTextureSize == nil)
    }
}
