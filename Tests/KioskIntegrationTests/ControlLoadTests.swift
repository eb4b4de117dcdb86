import Foundation
@testable import Kiosk
import Playback
import Render
import Synchronization
import Testing
import TestSupport
@testable import KioskTests

/// An output stand-in whose read-back is a ready picture, so that a task's time on the presenting
/// thread is what the screenshot path itself does there.
private struct PictureSource: ScreenshotSource {
    let image: RGBAImage
    func readBack() throws -> RGBAImage { image }
}

/// What the control socket's heavy requests cost the player: screenshots and bursts of seeks and
/// playlist steps.
@Suite(.serialized) struct ControlLoadTests {
    let quiet = Logger(level: .error, sink: { _ in })

    /// A 1080p screenshot holds the presenting thread only for the read-back: the PNG is encoded
    /// by the thread that asked. Four screenshots against a thread that drains its tasks each
    /// 1/60 s, as the presenting thread does between vsyncs.
    @Test func aScreenshotIsEncodedOffThePresentingThread() throws {
        let (width, height) = (1920, 1080)
        // A busy picture (a PNG of it takes time to encode): a gradient with a little noise.
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        var seed: UInt32 = 1
        for i in stride(from: 0, to: pixels.count, by: 4) {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            pixels[i] = UInt8(truncatingIfNeeded: (i / 4) % width / 8 &+ Int(seed >> 29))
            pixels[i + 1] = UInt8(truncatingIfNeeded: (i / 4) / width / 5)
            pixels[i + 2] = UInt8(truncatingIfNeeded: seed >> 24)
        }
        nonisolated(unsafe) let context = PresentationContext(name: "headless-0", width: width, height: height,
                                          screenshots: PictureSource(image: RGBAImage(width: width, height: height, pixels: pixels, bottomRowFirst: true)),
                                          clock: VirtualVsyncClock(refresh: RefreshRate(numerator: 60)))
        let tasks = PresentationTasks()
        let stop = Atomic(false)
        let longest = Mutex(0.0)
        let presenter = Thread {
            while !stop.load(ordering: .relaxed) {
                let started = ContinuousClock.now
                tasks.drain(context)
                let took = (ContinuousClock.now - started).seconds
                longest.withLock { $0 = max($0, took) }
                Thread.sleep(forTimeInterval: 1.0 / 60)
            }
        }
        presenter.start()
        defer { stop.store(true, ordering: .relaxed) }
        var encoding = 0.0
        for _ in 0..<4 {
            let started = ContinuousClock.now
            let result = tasks.screenshot(of: nil)
            encoding = max(encoding, (ContinuousClock.now - started).seconds)
            guard case .screenshot(let png, let w, let h, let output) = result else {
                Issue.record("no screenshot: \(result)")
                return
            }
            #expect(w == width && h == height && output == "headless-0")
            #expect(try pngSize(png) == (width, height))
        }
        let held = longest.withLock { $0 }
        print("1080p screenshot: presenting thread held \((held * 1000).formatted(decimals: 2)) ms at most, \((encoding * 1000).formatted(decimals: 0)) ms in all")
        // A copy takes well under a millisecond here; the bound leaves room for a busy machine's
        // scheduling, and is far below what encoding there took (about half of the whole).
        #expect(held < 0.2 && held * 5 < encoding, "the presenting thread was held \(held * 1000) ms by a screenshot (one took \(encoding * 1000) ms in all)")
        // The rows come out top first: the PNG's first row is the picture's top row (the last
        // row GL stores).
        guard case .screenshot(let png, _, _, _) = tasks.screenshot(of: nil) else {
            Issue.record("no second screenshot")
            return
        }
        let decoded = try decodePNG(png)
        let top = Array(pixels[(height - 1) * width * 4..<(height - 1) * width * 4 + 4])
        #expect(Array(decoded.prefix(4)) == top)
        #expect(tasks.screenshot(of: "hdmi-9").failure == "no output named hdmi-9 (this one is headless-0)")
    }

    /// Bursts of 200 seeks and of 200 `playlist-next`s on a playing kiosk open a couple of
    /// decoders, not one per request; every request is answered.
    @Test func burstsOfSeeksAndStepsOpenACoupleOfDecoders() throws {
        let clips = try [3.0, 4.0, 5.0, 6.0].map { try TestMedia.clip(seconds: $0, fps: 30, width: 160, height: 90) }
        let playlist = clips.map { #"{"uri": "\#($0)"}"# }.joined(separator: ", ")
        let config = try KioskConfig.parse(#"{"playlist": [\#(playlist)], "loop": true, "display": {"output": "headless", "mode": "160x90@60"}}"#,
                                           baseDirectory: "/")
        var options = RunOptions()
        options.clock = .real
        // Every decoder the session opens goes through this layer, which counts it.
        let decoderOpens = OpenCounter()
        let kiosk = KioskOnThread(config: config, options: options, logger: quiet) { [quiet] output in
            KioskSession(config: config, configPath: nil, logger: quiet, output: output, mediaLayer: { inner in
                CountingBackend(inner: inner, opens: decoderOpens)
            })
        }
        defer { kiosk.stop() }
        let session = try #require(kiosk.waitForSession(), "the output did not open within 20 s")
        let controller = KioskController(status: session.status) { session.perform($0) }
        let server = try ControlServer(path: KioskTests.ControlServerTests.socketPath(), handler: controller, logger: quiet)
        defer { server.stop() }
        let client = try #require(UnixSocketClient.connect(path: server.path, timeout: 5))
        // Playing, with the next item's preroll made.
        let deadline = Date(timeIntervalSinceNow: 20)
        var position = 0.0
        while position < 0.5 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            position = client.request(["get_property", "time-pos"], id: 0)?["data"]?.numberValue ?? 0
        }
        try #require(position >= 0.5, "the kiosk is not playing after 20 s")
        Thread.sleep(forTimeInterval: 0.3)

        func opens(during burst: () -> Void) -> Int {
            let before = decoderOpens.count.load(ordering: .relaxed)
            burst()
            Thread.sleep(forTimeInterval: 1.5)  // whatever the burst started has opened by now
            return decoderOpens.count.load(ordering: .relaxed) - before
        }
        // 200 seeks sent at once, then their 200 replies read.
        let seekOpens = opens {
            client.send((1...200).map { #"{"command":["seek",0.01,"relative"],"request_id":\#($0)}"# }.joined(separator: "\n"))
            var answered = 0
            while answered < 200, let line = client.readLine() {
                if line.contains(#""error":"success""#) { answered += 1 }
            }
            #expect(answered == 200)
        }
        // 200 steps, each sent once the one before is answered.
        let positionBefore = client.request(["get_property", "playlist-pos"], id: 300)?["data"]?.numberValue
        let stepOpens = opens {
            for i in 1...200 {
                #expect(client.request(["playlist-next"], id: i)?["error"]?.stringValue == "success")
            }
        }
        print("decoders opened: \(seekOpens) for 200 seeks, \(stepOpens) for 200 playlist-next; preroll readers: \(decoderOpens.prerolls.load(ordering: .relaxed)) in all")
        #expect(seekOpens <= 3, "200 seeks opened \(seekOpens) decoders")
        #expect(stepOpens >= 1 && stepOpens <= 4, "200 playlist-next opened \(stepOpens) decoders")
        // And they land where 200 steps land: 200 = 50 passes of 4 items, back on the item it was on.
        let positionAfter = client.request(["get_property", "playlist-pos"], id: 301)?["data"]?.numberValue
        #expect(positionBefore != nil && positionAfter == positionBefore, "playlist-pos \(String(describing: positionBefore)) before, \(String(describing: positionAfter)) after")
    }
}

/// A PNG's size from its IHDR chunk.
func pngSize(_ png: Data) throws -> (Int, Int) {
    let bytes = [UInt8](png.prefix(24))
    try #require(bytes.count == 24 && bytes[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] && bytes[12..<16] == Array("IHDR".utf8)[...],
                 "not a PNG")
    let be = { (at: Int) in bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
    return (be(16), be(20))
}

/// A PNG's RGBA pixels, decoded by the ffmpeg command (an independent decoder).
func decodePNG(_ png: Data) throws -> [UInt8] {
    let path = TestMedia.folder + "/shot-\(UUID().uuidString).png"
    try png.write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = try Command.run("ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgba", "-"])
    try #require(result.status == 0, "ffmpeg cannot decode the PNG: \(result.errorText)")
    return [UInt8](result.output)
}

/// A media backend layer that counts the readers (decoders) opened through it.
struct CountingBackend: MediaBackend {
    let inner: any MediaBackend
    let opens: OpenCounter

    func probe(_ url: URL) throws -> AssetDescription { try inner.probe(url) }

    func openReader(_ url: URL) throws -> any FrameReader {
        opens.count.add(1, ordering: .relaxed)
        return try inner.openReader(url)
    }

    /// Counted apart: a preroll's reader decodes an item's first frame while another plays; the
    /// item's own reader opens later (and is counted above).
    func openPrerollReader(_ url: URL) throws -> any FrameReader {
        opens.prerolls.add(1, ordering: .relaxed)
        return try inner.openPrerollReader(url)
    }

    func checkFirstFrame(_ url: URL) throws { try inner.checkFirstFrame(url) }
}

final class OpenCounter: Sendable {
    let count = Atomic(0)
    let prerolls = Atomic(0)
}
