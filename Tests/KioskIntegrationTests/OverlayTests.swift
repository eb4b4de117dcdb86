import Foundation
@testable import Kiosk
import Media
import Playback
import Render
import Testing
import TestSupport
@testable import KioskTests

@Suite struct OverlayConfigTests {
    let unit = KioskTests.OverlayConfigTests()   // its fixtures: problems

    @Test func overlaysAreReadWithTheirPlacesSizesAndSchedules() throws {
        let png = try OverlayMedia.png("red@0.6", width: 40, height: 30)
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}], "overlays": [
              {"image": "\(png)", "anchor": "top-right", "offset": [20, 10], "width": 80, "opacity": 0.5},
              {"text": "Welcome", "anchor": "bottom", "size": 32, "color": "#ffcc00"},
              {"clock": "%H:%M", "anchor": "bottom-right", "on": "canvas", "schedule": {"days": ["sat", "sun"], "from": "08:00", "to": "18:00"}}]}
            """, baseDirectory: TestMedia.folder)
        #expect(config.overlays.count == 3)
        let image = config.overlays[0]
        guard case .image(_, let picture) = image.content else { Issue.record("not an image: \(image.content)"); return }
        // 80 wide keeps the 4:3 aspect; the pixels are premultiplied (red 255 at alpha 153 -> 153).
        #expect(picture.width == 80 && picture.height == 60)
        let p = picture.pixel(x: 40, y: 30)
        #expect(abs(Int(p.a) - 153) <= 1 && abs(Int(p.r) - Int(p.a)) <= 1 && p.g == 0 && p.b == 0)
        #expect(image.anchor == .topRight && image.offsetX == 20 && image.offsetY == 10 && image.opacity == 0.5)
        #expect(image.origin(width: 80, height: 60, surfaceWidth: 1920, surfaceHeight: 1080) == (1820, 10))
        #expect(config.overlays[1].content == .text("Welcome") && config.overlays[1].size == 32)
        #expect(config.overlays[1].color == RGBColor(red: 255, green: 204, blue: 0))
        #expect(config.overlays[1].fontPath == OverlayConfig.defaultFont)
        #expect(config.overlays[1].origin(width: 100, height: 40, surfaceWidth: 1920, surfaceHeight: 1080) == (910, 1040))
        let clock = config.overlays[2]
        #expect(clock.content == .clock(format: "%H:%M") && clock.surface == .canvas)
        #expect(clock.schedule?.days == [5, 6] && clock.schedule?.from == 8 * 3600 && clock.schedule?.to == 18 * 3600)
    }

    @Test func schemaAndCheckConfigAgree() throws {
        let png = try OverlayMedia.png("red@0.6", width: 40, height: 30)
        try TestConfig.write("""
            {"playlist": [{"uri": "a.mp4"}], "overlays": [{"image": "\(png)", "anchor": "top-right", "offset": [20, 20], "scale": 0.5},
             {"text": "Hello", "size": 24, "opacity": 0.8}, {"clock": "%H:%M:%S", "schedule": {"from": "08:00", "to": "20:00"}}]}
            """, named: "overlays-good.json")
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "anchor": "middle"}]}"#,
                             named: "overlays-bad-anchor.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "opacity": 2}]}"#,
                             named: "overlays-bad-opacity.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "clock": "%H"}]}"#,
                             named: "overlays-two-kinds.json", .refused)
        try TestConfig.write(#"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Hi", "scale": 2}]}"#,
                             named: "overlays-text-scale.json", .refused)
    }

}

/// Whole runs through `runKiosk` on the headless output (320x180 at 60 Hz, virtual clock whose
/// first vsync is at a chosen time), with screenshots read back on the presentation thread.
@Suite(.serialized) struct OverlayRunTests {
    final class Shots: @unchecked Sendable {
        let lock = NSLock()
        var images: [Int64: RGBAImage] = [:]
        var overlays: [Int64: [OverlayStatus]] = [:]
        var session: KioskSession?
    }

    struct Run {
        let shots: Shots
        let stats: PresentationStats
        let log: [String]
        let trace: [[String: Any]]
        var overlayEvents: [[String: Any]] { trace.filter { $0["event"] as? String == "overlays" } }
    }

    /// Plays `text` for `seconds` from `start`; a screenshot after each of `vsyncs` (the picture
    /// on the output once vsync n was presented) and the `overlays` status at each vsync.
    func play(_ text: String, from start: String = "2026-03-30T10:00:00Z", seconds: Double, shots vsyncs: Set<Int64>,
              before: ((KioskConfig) throws -> Void)? = nil) throws -> Run {
        var config = try KioskConfig.parse(text, baseDirectory: TestMedia.folder)
        try before?(config)
        config.display.output = .headless
        config.display.mode = DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 60))
        config.virtualClockStart = utc(start)
        var options = RunOptions()
        options.clock = .virtual
        options.exitAfter = seconds
        let tracePath = TestMedia.folder + "/overlay-trace-\(UUID().uuidString).jsonl"
        options.tracePath = tracePath
        let shots = Shots()
        let lines = LogLines()
        let stats = try runKiosk(config: config, options: options, logger: Logger(level: .info, sink: lines.append), makeSession: { output in
            let session = KioskSession(config: config, configPath: nil, logger: Logger(level: .info, sink: lines.append), output: output)
            shots.session = session
            return session
        }, onVsync: { n in
            guard let session = shots.session else { return }
            // The overlays as placed for vsync n - 1 (this runs before vsync n's are).
            shots.lock.withLock { shots.overlays[n - 1] = session.status.snapshot.overlays }
            guard vsyncs.contains(n) else { return }
            // Read back at the next vsync's start: the picture presented for vsync n.
            _ = session.presentationTasks.run(timeout: 0) { context -> Bool in
                let image = try? context.screenshots?.readBack()
                shots.lock.withLock { shots.images[n] = image }
                return true
            }
        }, shouldContinue: { true })
        let trace = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        return Run(shots: shots, stats: stats, log: lines.all, trace: trace)
    }

    static func distance(_ a: (r: UInt8, g: UInt8, b: UInt8, a: UInt8), _ b: [Double]) -> Double {
        [Double(a.r) - b[0], Double(a.g) - b[1], Double(a.b) - b[2]].map(abs).max()!
    }

    @Test func anImageOverlayBlendsItsAlphaAndOpacityAndLeavesTheRestUntouched() throws {
        let clip = try OverlayMedia.flat(seconds: 2)
        let png = try OverlayMedia.png("red@0.6", width: 40, height: 30)
        let run = try play("""
            {"playlist": [{"uri": "\(clip)"}], "overlays": [{"image": "\(png)", "anchor": "bottom-right", "offset": [10, 20], "opacity": 0.5}]}
            """, seconds: 1, shots: [30])
        let shot = try #require(run.shots.images[30], "no screenshot")
        let status = try #require(run.shots.overlays[30]?.first)
        // bottom-right, 10 in from the right and 20 up from the bottom of 320x180.
        #expect(status.rect == [270, 130, 40, 30] && status.visible && status.kind == "image")
        // The background: the flat colour, away from the overlay.
        let bg = shot.pixel(x: 100, y: 50)
        #expect(Self.distance(bg, [0x20, 0x40, 0x60]) <= 4)
        // Red at alpha 0.6, opacity 0.5: 0.3 of red over 0.7 of the background.
        let a = 0.6 * 0.5
        let expected = [255 * a + Double(bg.r) * (1 - a), Double(bg.g) * (1 - a), Double(bg.b) * (1 - a)]
        for (x, y) in [(270, 130), (289, 144), (309, 159)] {
            #expect(Self.distance(shot.pixel(x: x, y: y), expected) <= 4, "(\(x), \(y)): \(shot.pixel(x: x, y: y)) for \(expected)")
        }
        // Outside the rectangle, nothing changed (the pixels just beside each edge too).
        for (x, y) in [(269, 140), (310, 140), (290, 129), (290, 160), (0, 0), (319, 179), (319, 130)] {
            #expect(Self.distance(shot.pixel(x: x, y: y), [Double(bg.r), Double(bg.g), Double(bg.b)]) <= 1, "(\(x), \(y)): \(shot.pixel(x: x, y: y))")
        }
    }

    /// The pixels of `shot` in `rect` that differ from the background, and those outside it.
    static func changed(_ shot: RGBAImage, inside rect: [Int], background bg: (r: UInt8, g: UInt8, b: UInt8, a: UInt8)) -> (inside: Int, outside: Int) {
        var inside = 0, outside = 0
        for y in 0..<shot.height {
            for x in 0..<shot.width where distance(shot.pixel(x: x, y: y), [Double(bg.r), Double(bg.g), Double(bg.b)]) > 8 {
                if x >= rect[0] && x < rect[0] + rect[2] && y >= rect[1] && y < rect[1] + rect[3] { inside += 1 } else { outside += 1 }
            }
        }
        return (inside, outside)
    }

    @Test func aTextOverlayCoversPixelsInItsBoxOnlyAndTheClockChangesOnTheVsyncThatCrossesTheSecond() throws {
        let clip = try OverlayMedia.flat(seconds: 2)
        // The first vsync half a second before 10:00:01 UTC: vsync 30 is at 10:00:01.000.
        let run = try play("""
            {"playlist": [{"uri": "\(clip)"}], "timezone": "UTC", "overlays": [
              {"text": "Marquee", "anchor": "top-left", "offset": [8, 8], "size": 24, "color": "#ffffff"},
              {"clock": "%H:%M:%S", "anchor": "bottom-right", "offset": [8, 8], "size": 20, "color": "#ffff00"}]}
            """, from: "2026-03-30T10:00:00.5Z", seconds: 1.2, shots: [20, 45])
        let before = try #require(run.shots.images[20]), after = try #require(run.shots.images[45])
        let bg = before.pixel(x: 160, y: 90)
        #expect(Self.distance(bg, [0x20, 0x40, 0x60]) <= 4)
        let text = try #require(run.shots.overlays[20]?[0].rect)
        let clock = try #require(run.shots.overlays[20]?[1].rect)
        #expect(text[0] == 8 && text[1] == 8 && clock[0] + clock[2] == 312 && clock[1] + clock[3] == 172)
        // Glyphs cover pixels inside the boxes; nothing changes outside them.
        let textBox = Self.changed(before, inside: text, background: bg)
        let both = Self.changed(before, inside: clock, background: bg)
        #expect(textBox.inside > 150, "text covers \(textBox.inside) pixels")
        #expect(both.inside > 100, "the clock covers \(both.inside) pixels")
        #expect(textBox.outside == both.inside, "only the two boxes differ from the background")
        // The clock's text, placed for each vsync: 10:00:00 until vsync 29, 10:00:01 from vsync 30.
        #expect(run.shots.overlays[29]?[1].content == "10:00:00")
        #expect(run.shots.overlays[30]?[1].content == "10:00:01")
        #expect(run.shots.overlays[20]?[0].content == "Marquee")
        // The trace has each change with its vsync: the first picture's, then the second's.
        let events = run.overlayEvents
        #expect(events.map { $0["vsync"] as? Int } == [0, 30])
        let clocks = events.map { (($0["shown"] as? [[String: Any]]) ?? []).compactMap { $0["content"] as? String } }
        #expect(clocks == [["Marquee", "10:00:00"], ["Marquee", "10:00:01"]])
        // The clock's pixels changed after the second; the fixed text's did not.
        func box(_ image: RGBAImage, _ r: [Int]) -> [UInt8] {
            (r[1]..<(r[1] + r[3])).flatMap { y in (r[0]..<(r[0] + r[2])).flatMap { x in let p = image.pixel(x: x, y: y); return [p.r, p.g, p.b] } }
        }
        let clockAfter = try #require(run.shots.overlays[45]?[1].rect)
        #expect(box(before, clock) != box(after, clockAfter))
        #expect(box(before, text) == box(after, text))
    }

    @Test func aFontThatCannotBeReadLeavesItsOverlayOutAndTheVideoPlays() throws {
        let clip = try OverlayMedia.flat(seconds: 2)
        let font = TestMedia.folder + "/vanishing-font.ttf"
        try FileManager.default.copyItem(atPath: OverlayConfig.defaultFont, toPath: font)
        let run = try play("""
            {"playlist": [{"uri": "\(clip)"}], "overlays": [{"text": "Gone", "font": "\(font)"}]}
            """, seconds: 1, shots: [30]) { _ in
            // Read when the config was, gone when the output draws.
            try FileManager.default.removeItem(atPath: font)
        }
        #expect(run.stats.presented >= 29)
        let status = try #require(run.shots.overlays[30]?.first)
        #expect(!status.visible)
        #expect(status.problem?.contains("cannot use the font \(font): cannot be opened: No such file or directory") == true)
        #expect(run.log.contains { $0.contains("overlay font cannot be used") && $0.contains("No such file or directory") })
        let shot = try #require(run.shots.images[30])
        #expect(Self.distance(shot.pixel(x: 10, y: 10), [0x20, 0x40, 0x60]) <= 4)
    }
}

@Suite struct OverlayPlacementTests {
    @Test func aCanvasOverlayIsPlacedThroughTheOutputsWindowAndAnOutputOverlayOnTheOutput() throws {
        let png = try OverlayMedia.png("red@0.6", width: 40, height: 30)
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}], "overlays": [
              {"image": "\(png)", "anchor": "bottom-right", "offset": [10, 20], "on": "canvas"},
              {"image": "\(png)", "anchor": "bottom-right", "offset": [10, 20]},
              {"image": "\(png)", "anchor": "top-left", "on": "canvas"}]}
            """, baseDirectory: TestMedia.folder)
        let presenter = OverlayPresenter(overlays: config.overlays, timeZone: .gmt, logger: Logger(level: .error, sink: { _ in }))
        var seen: [OverlayStatus] = []
        presenter.onStatus = { seen = $0 }
        // The right half of a 3840x1080 canvas, on a 1920x1080 output.
        let pictures = try #require(presenter.update(at: utc("2026-03-30T10:00:00Z"), outputWidth: 1920, outputHeight: 1080,
                                                     window: PixelRect(x: 1920, y: 0, width: 1920, height: 1080),
                                                     canvas: (width: 3840, height: 1080)))
        // The canvas's bottom-right corner is this output's; its top-left is the other output's.
        #expect(pictures.map { [$0.x, $0.y] } == [[1870, 1030], [1870, 1030]])
        #expect(seen.map(\.visible) == [true, true, false])
        #expect(seen[2].rect == nil)
        // Nothing changed: nothing to draw again.
        #expect(presenter.update(at: utc("2026-03-30T10:00:00.5Z"), outputWidth: 1920, outputHeight: 1080,
                                 window: PixelRect(x: 1920, y: 0, width: 1920, height: 1080), canvas: (width: 3840, height: 1080)) == nil)
    }

}

/// A reload through the session: a good one's overlays take over on the next vsync, a refused one
/// keeps the old.
@Suite(.serialized) struct OverlayReloadTests {
    @Test func aGoodReloadReplacesTheOverlaysAndABadOneKeepsThem() throws {
        let clip = try OverlayMedia.flat(seconds: 2)
        let path = TestMedia.folder + "/overlay-reload.json"
        func write(_ overlays: String) throws {
            try #"{"playlist": [{"uri": "\#(clip)"}], "display": {"output": "headless", "mode": "320x180@60"}, "overlays": \#(overlays)}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        try write(#"[{"text": "One"}]"#)
        var config = try KioskConfig.load(path: path)
        config.virtualClockStart = utc("2026-03-30T10:00:00Z")
        var options = RunOptions()
        options.clock = .virtual
        options.exitAfter = 1
        final class Seen: @unchecked Sendable {
            var session: KioskSession?
            var content: [Int64: String] = [:]
            var results: [String] = []
        }
        let seen = Seen()
        _ = try runKiosk(config: config, options: options, logger: Logger(level: .error, sink: { _ in }), makeSession: { output in
            let session = KioskSession(config: config, configPath: path, logger: Logger(level: .error, sink: { _ in }), output: output)
            seen.session = session
            return session
        }, onVsync: { n in
            guard let session = seen.session else { return }
            seen.content[n - 1] = session.status.snapshot.overlays.first?.content
            if n == 10 || n == 30 {
                try? write(n == 10 ? #"[{"text": "Two"}]"# : #"[{"image": "no-such-logo.png"}]"#)
                seen.results.append("\(session.reload())")
            }
        }, shouldContinue: { true })
        #expect(seen.content[5] == "One")
        #expect(seen.content[10] == "Two")
        #expect(seen.content[50] == "Two")
        #expect(seen.results.count == 2 && seen.results[0] == "\(KioskCommandResult.done)" && seen.results[1].contains("no-such-logo.png"))
    }
}
