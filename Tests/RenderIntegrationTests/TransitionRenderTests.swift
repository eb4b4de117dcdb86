import Display
import Foundation
import Media
import Playback
import Render
import Testing
import TestSupport
@testable import RenderTests

/// A crossfade and a fade drawn by the player layer on a headless output (EGL, llvmpipe),
/// checked by screenshot: a red clip into a blue one, made with ffmpeg at test time.
@Suite(.serialized) struct TransitionRenderTests {
    let quiet = Logger(level: .error, sink: { _ in })

    /// A lossless clip of one flat colour, `seconds` long at 30 fps.
    static func flat(_ color: String, seconds: Int) throws -> String {
        try TestMedia.make("xfade-\(color)-\(seconds)s.mp4", [
            "-f", "lavfi", "-i", "color=c=\(color):size=64x36:rate=30", "-t", "\(seconds)",
            "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    /// Plays red (1 s) then blue (2 s, with `transition` into it) on a 64x36 headless output at
    /// 60 Hz, virtual clock, with `conversion`; returns the middle pixel on screen after each of
    /// `vsyncs` was drawn, and the trace's lines.
    func play(_ transition: Transition, at vsyncs: [Int64], conversion: ColorConversion = .shader) throws -> ([Int64: [Int]], String) {
        let red = try Self.flat("red", seconds: 1), blue = try Self.flat("blue", seconds: 2)
        let output = try HeadlessOutput(name: "xfade", mode: DisplayMode(width: 64, height: 36, refresh: RefreshRate(numerator: 60)),
                                        clock: .virtual)
        var capabilities = OutputCapabilities.unconstrained
        capabilities.colorConversion = conversion
        let backend = FFmpegBackend(output: capabilities)
        let second = PlayerItem(url: URL(fileURLWithPath: blue), backend: backend)
        second.transition = transition
        second.playlistIndex = 1
        let first = PlayerItem(url: URL(fileURLWithPath: red), backend: backend)
        first.playlistIndex = 0
        let player = QueuePlayer(items: [first, second], logger: quiet)
        let tracePath = NSTemporaryDirectory() + "xfade-trace-\(getpid())-\(transition.kind.rawValue)-\(conversion).jsonl"
        let trace = try TraceWriter(path: tracePath)
        let presenter = try PlayerPresenter(player: player, output: output, trace: trace, logger: quiet)
        var shots: [Int64: [Int]] = [:]
        let wanted = Set(vsyncs.map { $0 + 1 })
        presenter.onVsync = { n in
            // Before vsync n's picture is drawn the screen shows vsync n - 1's.
            guard wanted.contains(n) else { return }
            let p = try output.screenshot().pixel(x: 32, y: 18)
            shots[n - 1] = [Int(p.r), Int(p.g), Int(p.b)]
        }
        player.play()
        _ = try presenter.run(stopWhenEmpty: true) { shots.count < wanted.count }
        trace.flush()
        return (shots, tracePath)
    }

    static func near(_ a: [Int], _ b: [Int], within: Int = 4) -> Bool { zip(a, b).allSatisfy { abs($0 - $1) <= within } }

    @Test("crossfade 1 s: on its middle vsync each clip contributes half within 4/255; the trace has no gap and records the mix", arguments: [ColorConversion.shader, .cpu])
    func crossfadeMidpoint(conversion: ColorConversion) throws {
        // Red shows vsyncs 0..59, blue from 60; the crossfade lasts 60 vsyncs: weight k/60 on
        // vsync 59 + k, so a half on vsync 89.
        let (shots, tracePath) = try play(Transition(.crossfade, duration: MediaTime(value: 1, timescale: 1)), at: [30, 89, 150],
                                          conversion: conversion)
        let red = try #require(shots[30]), mid = try #require(shots[89]), blue = try #require(shots[150])
        #expect(red[0] > 200 && red[2] < 30 && blue[2] > 200 && blue[0] < 30, "red \(red), blue \(blue)")
        let half = zip(red, blue).map { ($0 + $1) / 2 }
        #expect(Self.near(mid, half), "the middle: \(mid), half of each: \(half)")
        let (status, report) = try Command.checkTrace(tracePath, ["--refresh", "60"])
        let figures = try #require(report["xfade"])
        #expect(status == 0, "\(figures)")
        #expect(figures["gaps"] as? Int == 0 && figures["blanks_after_start"] as? Int == 0)
        #expect((figures["mix_steps"] as? Int ?? 0) >= 29, "\(figures)")
        let lines = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
        let middle = try #require(lines.first { $0.contains("\"vsync\":89,") })
        #expect(middle.contains("\"mix\":{\"kind\":\"crossfade\",\"weight\":0.5,\"otherItem\":0,\"otherPts\":0.966667"), "\(middle)")
    }

    @Test("fade 1 s: red's last vsync before blue is the background alone (black), the fade's quarter points are half bright")
    func fadeReachesBlack() throws {
        // Each part 30 vsyncs: red fades over vsyncs 30..59 with weight (59 - n)/30, blue in over 60..89 with (n - 59)/30.
        let (shots, _) = try play(Transition(.fade, duration: MediaTime(value: 1, timescale: 1)), at: [20, 44, 59, 74, 150])
        let red = try #require(shots[20]), blue = try #require(shots[150])
        #expect(Self.near(try #require(shots[59]), [0, 0, 0]), "the middle: \(shots[59]!)")
        #expect(Self.near(try #require(shots[44]), red.map { $0 / 2 }), "red at half: \(shots[44]!) of \(red)")
        #expect(Self.near(try #require(shots[74]), blue.map { $0 / 2 }), "blue at half: \(shots[74]!) of \(blue)")
    }
}
