import Display
import Foundation
@testable import Kiosk
import Media
import Playback
import Testing
import TestSupport

/// Health's `stalled` and the watchdog's decision, judged at given instants (a virtual clock).
@Suite struct SupervisionJudgementTests {
    let t0 = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    /// A status whose one output presents from t0 and showed a picture lasting `lasts` at t0.
    func presenting(lasts: Double) -> KioskStatus {
        let status = KioskStatus()
        status.update {
            $0.started = t0
            $0.items = [.init(uri: "a.mp4", path: "/media/a.mp4", state: .playing)]
            $0.position = 0
            $0.currentPath = "/media/a.mp4"
            $0.outputs = [.init(name: "headless-0", mode: "640x360@60")]
            $0.outputs[0].lastBeat = t0
            $0.outputs[0].dueSince = t0
            $0.outputs[0].lastPicture = t0
            $0.outputs[0].pictureDuration = lasts
        }
        return status
    }

    /// The presentation thread keeps going round (a beat at `seconds`) without a new picture.
    func beat(_ status: KioskStatus, at seconds: Double, idle: String? = nil) {
        status.update { $0.outputs[0].lastBeat = at(seconds); $0.outputs[0].idle = idle }
    }

    /// STATUS= does not say an item plays when it failed and is being skipped.
    @Test func aFailedItemIsSaidToBeSkippedNotPlayed() {
        let status = presenting(lasts: 1.0 / 30)
        status.update {
            $0.items[0].state = .failed
            $0.items[0].error = "corrupt"
            $0.items.append(.init(uri: "b.mp4", path: "/media/b.mp4"))
        }
        beat(status, at: 0.5)
        let summary = status.supervision(now: at(0.5)).summary
        #expect(summary.hasPrefix("skipping item 1 of 2: a.mp4 cannot be played"), "\(summary)")
    }

    @Test func videoWithoutANewPictureForTwoSecondsIsStalledAndStopsTheWatchdog() {
        let status = presenting(lasts: 1.0 / 30)
        beat(status, at: 1.9)
        let fine = status.supervision(now: at(1.9))
        #expect(fine.status == "ok" && fine.progressing, "\(fine)")
        #expect(fine.summary == "playing item 1 of 1: a.mp4")
        beat(status, at: 2.1)
        let stalled = status.supervision(now: at(2.1))
        #expect(stalled.status == "stalled")
        #expect(!stalled.progressing)
        #expect(stalled.reasons == ["output headless-0: stalled: no new picture for 2.1 s (the picture shown lasts 0.033 s; limit 2.0 s)"])
        #expect(stalled.summary == "stalled: no new picture on headless-0 for over 2.0 s (see health)")
        // A new picture: progressing again.
        status.update { $0.outputs[0].lastPicture = at(2.2) }
        #expect(status.supervision(now: at(2.3)).status == "ok")
    }

    @Test func aStillImageShownForItsDurationIsNotStalled() {
        let status = presenting(lasts: 10)
        for second in [5.0, 10.0, 15.0, 19.9] {
            beat(status, at: second)
            let verdict = status.supervision(now: at(second))
            #expect(verdict.status == "ok" && verdict.progressing, "at \(second) s: \(verdict)")
        }
        #expect(status.supervision(now: at(19.9)).summary == "playing item 1 of 1: a.mp4 (a still picture, 10.0 s)")
        beat(status, at: 20.5)
        #expect(status.supervision(now: at(20.5)).status == "stalled")
    }

    @Test func pausedWaitingForADisplayOrNothingToPlayIsRightlyIdle() {
        let status = presenting(lasts: 1.0 / 30)
        beat(status, at: 30, idle: "paused")
        var verdict = status.supervision(now: at(30))
        #expect(verdict.status == "ok" && verdict.progressing && verdict.summary == "paused by command", "\(verdict)")
        // Leaving the idle time: new pictures are due from then on, not from the last one.
        status.update {
            $0.outputs[0].idle = nil
            $0.outputs[0].dueSince = at(30)
        }
        beat(status, at: 31)
        #expect(status.supervision(now: at(31)).status == "ok")
        beat(status, at: 32.5)
        #expect(status.supervision(now: at(32.5)).status == "stalled")

        status.update { $0.outputs[0].connected = false }
        beat(status, at: 60)
        verdict = status.supervision(now: at(60))
        #expect(verdict.progressing && verdict.status == "degraded", "\(verdict)")
        #expect(verdict.reasons == ["output headless-0: no display connected"])
        #expect(verdict.summary.hasPrefix("waiting for a display on headless-0"))

        status.update { $0.outputs[0].connected = true }
        beat(status, at: 90, idle: "nothing to play")
        #expect(status.supervision(now: at(90)).progressing)
    }

    @Test func aPresentationThreadThatStopsGoingRoundIsStalledWhateverItShows() {
        let status = presenting(lasts: 1.0 / 30)
        beat(status, at: 1, idle: "paused")
        #expect(status.supervision(now: at(5.9)).progressing)
        let verdict = status.supervision(now: at(6.5))
        #expect(!verdict.progressing && verdict.status == "stalled")
        #expect(verdict.reasons.first == "output headless-0: stalled: the presentation thread has not run for 5.5 s")
    }

    @Test func theFirstPictureMayTakeLongerThanTheNext() {
        let status = presenting(lasts: 0)
        status.update { $0.outputs[0].lastPicture = nil }
        beat(status, at: 10)
        let waiting = status.supervision(now: at(10))
        #expect(waiting.progressing && waiting.status == "ok", "\(waiting)")
        #expect(waiting.summary == "starting: waiting for the first picture on headless-0")
        beat(status, at: 31)
        let stalled = status.supervision(now: at(31))
        #expect(!stalled.progressing && stalled.status == "stalled", "\(stalled)")
        #expect(stalled.reasons.first?.contains("no new picture for 31.0 s") == true, "\(stalled.reasons)")
        // Nor is a presentation thread that sits in its first draw for 20 s hung.
        let drawing = presenting(lasts: 0)
        drawing.update { $0.outputs[0].lastPicture = nil }
        #expect(drawing.supervision(now: at(20)).progressing)
        #expect(drawing.supervision(now: at(20)).summary == "starting: waiting for the first picture on headless-0")
    }

    @Test func startingUpIsRightlyWaitingForAWhile() {
        let status = KioskStatus()
        status.update { $0.started = t0 }
        let starting = status.supervision(now: at(30))
        #expect(starting.progressing && starting.status == "ok" && starting.summary == "starting: setting up the output")
        let late = status.supervision(now: at(61))
        #expect(!late.progressing && late.status == "stalled", "\(late)")
    }

    @Test func nothingPlayableFeedsTheWatchdogAndSaysSo() {
        let status = presenting(lasts: 1.0 / 30)
        status.update {
            $0.items[0].state = .failed
            $0.items[0].error = "a.mp4: No such file or directory"
        }
        beat(status, at: 30)
        let verdict = status.supervision(now: at(30))
        #expect(verdict.status == "failed" && verdict.progressing && verdict.summary == "nothing can be played (see health)", "\(verdict)")
    }

    @Test func slowStorageDegradesHealthForTenMinutes() {
        let status = presenting(lasts: 1.0 / 30)
        status.update {
            $0.slowStorage["/media/nfs/b.mp4"] = .init(operation: "open", seconds: 3.25, limit: 2, count: 2, last: at(1))
        }
        beat(status, at: 1.5)
        let verdict = status.supervision(now: at(1.5))
        #expect(verdict.status == "degraded" && verdict.progressing)
        #expect(verdict.reasons == ["slow storage: /media/nfs/b.mp4: 2 open over 2.0 s in the last 10 minutes (the slowest 3.2 s)"])
        #expect(verdict.summary.hasSuffix("; degraded (1 reason, see health)"))
        status.update { $0.outputs[0].lastPicture = at(601.5) }
        beat(status, at: 601.5)
        #expect(status.supervision(now: at(601.5)).status == "ok")
    }
}

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`.
/// A datagram socket bound at `path` (standing in for systemd's notify or journal socket).
func bindDatagramSocket(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    try #require(fd >= 0 && bound == 0, "cannot bind \(path): errno \(errno)")
    return fd
}

final class NotifySocket: @unchecked Sendable {
    let path = "/tmp/marquee-notify-\(UUID().uuidString.prefix(8)).sock"
    private let fd: Int32

    init() throws {
        fd = try bindDatagramSocket(path)
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, waiting up to `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Every message that comes within `seconds`.
    func collect(for seconds: Double) -> [String] {
        let deadline = Date(timeIntervalSinceNow: seconds)
        var messages: [String] = []
        while case let left = deadline.timeIntervalSinceNow, left > 0 {
            if let message = receive(timeout: left) { messages.append(message) }
        }
        return messages
    }
}

/// The `BlockingBackend`s a session made (it makes its backend on the presentation thread).
final class BlockingBackends: @unchecked Sendable {
    private let lock = NSLock()
    private var made: [BlockingBackend] = []
    func make(inner: any MediaBackend, frames: Int) -> BlockingBackend {
        let backend = BlockingBackend(inner: inner, frames: frames)
        lock.withLock { made.append(backend) }
        return backend
    }
    var first: BlockingBackend? { lock.withLock { made.first } }
    func releaseAll() { for backend in lock.withLock({ made }) { backend.release() } }
}

/// A backend whose readers hand out `frames` frames of the real file, then block (a decoder that
/// hangs) until `release`, or 30 s; and whose probe takes `probeDelay` seconds (slow storage).
final class BlockingBackend: MediaBackend, @unchecked Sendable {
    let inner: any MediaBackend
    let frames: Int
    let probeDelay: Double
    let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var blocked = 0
    /// Whether a reader waits at the gate now.
    var isBlocking: Bool { lock.withLock { blocked > 0 } }

    init(inner: any MediaBackend, frames: Int, probeDelay: Double = 0) {
        self.inner = inner
        self.frames = frames
        self.probeDelay = probeDelay
    }

    func release() { for _ in 0..<8 { gate.signal() } }

    func probe(_ url: URL) throws -> AssetDescription {
        if probeDelay > 0 { Thread.sleep(forTimeInterval: probeDelay) }
        return try inner.probe(url)
    }

    func openReader(_ url: URL) throws -> any FrameReader { Reader(inner: try inner.openReader(url), owner: self) }

    final class Reader: FrameReader {
        let inner: any FrameReader
        let owner: BlockingBackend
        var handedOut = 0
        init(inner: any FrameReader, owner: BlockingBackend) {
            self.inner = inner
            self.owner = owner
        }
        func nextFrame() throws -> (any PresentableFrame)? {
            handedOut += 1
            if handedOut > owner.frames {
                owner.lock.withLock { owner.blocked += 1 }
                defer { owner.lock.withLock { owner.blocked -= 1 } }
                guard owner.gate.wait(timeout: .now() + 30) == .success else { return nil }
                owner.gate.signal()
            }
            return try inner.nextFrame()
        }
        func seek(to time: MediaTime) throws { try inner.seek(to: time) }
    }
}

/// A whole session on the headless output with the real clock, supervised as `marquee` does.
@Suite(.serialized) struct SupervisedSessionTests {
    func config(_ path: String) -> KioskConfig {
        var config = KioskConfig()
        config.playlist = [.init(uri: path, path: path)]
        config.display.output = .headless
        config.display.mode = DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 30))
        return config
    }


    /// Ticks `supervisor` every 50 ms until `condition` holds for its verdict (at most `timeout`
    /// s), reading what it sends meanwhile.
    func tick(_ supervisor: ServiceSupervisor, _ socket: NotifySocket, until timeout: Double,
              _ condition: (KioskStatus.Supervision) -> Bool) -> KioskStatus.Supervision? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            let verdict = supervisor.tick()
            if condition(verdict) { return verdict }
            _ = socket.collect(for: 0.05)
        }
        return nil
    }

    /// Ticks every 50 ms for `seconds` and returns what the notify socket got meanwhile.
    func tickAndCollect(_ supervisor: ServiceSupervisor, _ socket: NotifySocket, for seconds: Double) -> [String] {
        var messages: [String] = []
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            supervisor.tick()
            messages += socket.collect(for: 0.05)
        }
        return messages
    }

    @Test func aManagerThatDoesNotReadCannotBlockTheNotifier() throws {
        let socket = try NotifySocket()
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": socket.path])
        let start = ContinuousClock.now
        // The receiver's queue holds a few datagrams; the rest are dropped, not waited for.
        let sent = (0..<200).filter { notifier.notify("STATUS=\($0)") }.count
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(sent > 0 && sent < 200, "\(sent) of 200 sent")
    }

    @Test func aFileNameCannotAddLinesToANotification() throws {
        #expect(escapingControlCharacters("playing item 1: a\nREADY=1\rMAINPID=1\u{1b}[2J.mp4")
                == #"playing item 1: a\u000aREADY=1\u000dMAINPID=1\u001b[2J.mp4"#)
        let socket = try NotifySocket()
        ServiceNotifier(environment: ["NOTIFY_SOCKET": socket.path]).status("x\nWATCHDOG=trigger")
        #expect(socket.collect(for: 0.2) == [#"STATUS=x\u000aWATCHDOG=trigger"#])
    }
}
