import Display
import Foundation
import Media
import Playback
import Render
import Synchronization
import Testing
import TestSupport
@testable import RenderTests

/// `PlayerView` on a headless output (EGL surfaceless): it presents a player from a thread of its
/// own, swaps players, shows the background without one, and `close()` ends its thread.
@Suite(.serialized) struct PlayerViewTests {
    static let mode = DisplayMode(width: 320, height: 240, refresh: RefreshRate(numerator: 60))
    let quiet = Logger(level: .error, sink: { _ in })

    /// A clip of one flat colour (lossless, so the picture is exactly that colour).
    static func flat(_ color: String) throws -> String {
        try TestMedia.make("flat-\(color).mp4", [
            "-f", "lavfi", "-i", "color=c=\(color):size=320x240:rate=30", "-t", "3",
            "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }

    func player(_ path: String) throws -> Player {
        let player = try Player(item: PlayerItem(url: URL(fileURLWithPath: path)), logger: quiet)
        player.play()
        return player
    }

    /// Polls `condition` until it holds or `seconds` pass.
    func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// The middle pixel's colour, as (r, g, b).
    func middle(_ view: PlayerView) throws -> (Int, Int, Int) {
        let p = try view.screenshot().pixel(x: Int(Self.mode.width) / 2, y: Int(Self.mode.height) / 2)
        return (Int(p.r), Int(p.g), Int(p.b))
    }

    func isColor(_ view: PlayerView, _ rgb: (Int, Int, Int)) throws -> Bool {
        let c = try middle(view)
        return abs(c.0 - rgb.0) < 24 && abs(c.1 - rgb.1) < 24 && abs(c.2 - rgb.2) < 24
    }

    @Test func framesAppearWithNoThreadOrLoopOfTheApp() throws {
        let view = try PlayerView(output: .headless(mode: Self.mode, clock: .real), logger: quiet)
        #expect(view.isPresenting && !view.isReadyForDisplay)
        #expect(try eventually { try isColor(view, (0, 0, 0)) })  // the background before a player
        let player = try player(Self.flat("red"))
        view.player = player
        #expect(eventually { view.isReadyForDisplay })
        #expect(try eventually { try isColor(view, (255, 0, 0)) })
        // Time moves with the output's vsyncs: nobody but the view pulls.
        let t0 = player.currentTime()
        #expect(eventually { player.currentTime().seconds > t0.seconds + 0.2 })
        // On a busy machine late pictures are dropped (the clock is kept), so more come in time.
        #expect(eventually(60) { player.stats.presented > 5 }, "\(player.stats)")
        try view.close()
        #expect(!view.isPresenting)
    }

    @Test func swappingPlayersShowsTheNewOneAndNilShowsTheBackground() throws {
        let view = try PlayerView(output: .headless(mode: Self.mode, clock: .real), background: RGBColor(red: 0, green: 0, blue: 255), logger: quiet)
        defer { try? view.close() }
        let red = try player(Self.flat("red")), green = try player(Self.flat("lime"))
        view.player = red
        #expect(try eventually { try isColor(view, (255, 0, 0)) })
        view.player = green
        #expect(view.player === green)
        #expect(try eventually { try isColor(view, (0, 255, 0)) })
        let greenTime = green.currentTime()
        view.player = nil
        #expect(try eventually { try isColor(view, (0, 0, 255)) })  // the background
        // The player let go does not advance.
        let heldAt = green.currentTime()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(green.currentTime() == heldAt && heldAt >= greenTime)
        // A player shown before comes back and goes on from where it was.
        view.player = red
        #expect(try eventually { try isColor(view, (255, 0, 0)) })
        #expect(view.lastError == nil)
    }

    @Test func aPlayerShownByAnotherViewLeavesThisOneOnItsBackground() throws {
        let first = try PlayerView(output: .headless(mode: Self.mode, clock: .real), logger: quiet)
        let second = try PlayerView(output: .headless(mode: Self.mode, clock: .real), logger: quiet)
        let red = try player(Self.flat("red"))
        first.player = red
        #expect(eventually { first.isReadyForDisplay })
        second.player = red
        #expect(eventually { second.lastError != nil })
        #expect(second.lastError?.contains("one video output") == true)
        #expect(try isColor(second, (0, 0, 0)))
        // Once the first view is closed, it has let the player go: the second may show it.
        try first.close()
        second.player = nil
        second.player = red
        #expect(try eventually { try isColor(second, (255, 0, 0)) })
        try second.close()
    }

    @Test func closeEndsTheThreadAndLaterCallsAreHarmless() throws {
        let view = try PlayerView(output: .headless(mode: Self.mode, clock: .virtual), logger: quiet)
        view.player = try player(Self.flat("red"))
        #expect(eventually { view.isReadyForDisplay })
        let start = Date()
        try view.close(timeout: 5)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(!view.isPresenting)
        try view.close(timeout: 0)
        #expect(throws: PlayerViewError.closed) { try view.screenshot() }
    }

    /// docs/playback.md's example (the guide's "Putting It All Together"), as written there but on a headless
    /// output: it plays, loops by seeking to zero at the end, and the boundary block sees its time.
    @Test func thePlaybackDocExampleRuns() async throws {
        let boundaries = Mutex<[String]>([])
        let print: @Sendable (String) -> Void = { line in boundaries.withLock { $0.append(line) } }

        let asset = Asset(url: URL(fileURLWithPath: try TestMedia.clip(seconds: 1, fps: 30)))
        _ = try await asset.load(.tracks)
        let item = PlayerItem(asset: asset)
        let status = item.statusUpdates()          // observed before the item meets the player; starts with .unknown
        let ends = item.events()                   // subscribed here: no end is missed
        let player = try Player(item: item)
        player.actionAtItemEnd = .none
        let view = try PlayerView(output: .headless(mode: Self.mode))
        view.player = player
        Task { for await event in ends { if case .didPlayToEndTime = event { await player.seek(to: .zero) } } }
        _ = try player.addBoundaryTimeObserver(forTimes: [MediaTime(seconds: 0.5, preferredTimescale: 600)]) {
            print("Passed a boundary at \(player.currentTime())")
        }
        for await s in status where s != .unknown { if s == .readyToPlay { player.play() }; break }

        // Two passes: the boundary is passed once in each. The seek back runs in a Task: on 2 cores
        // the suite's blocking tests (a package build, a VM) can hold the cooperative pool for tens
        // of seconds, so the wait is long; it ends at the second boundary (about 2 s).
        let deadline = Date(timeIntervalSinceNow: 60)
        while boundaries.withLock({ $0.count }) < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try view.close()
        // The time read in the block is the crossing vsync's: 0.500 on time (a busy machine that
        // skipped that vsync crosses on a later one).
        let lines = boundaries.withLock { $0 }
        let seconds = lines.compactMap { line in
            line.hasPrefix("Passed a boundary at {") ? line.split(separator: "=").last.flatMap { Double($0.dropLast().trimmingCharacters(in: .whitespaces)) } : nil
        }
        #expect(lines.count >= 2 && seconds.count == lines.count && seconds.allSatisfy { $0 >= 0.5 && $0 < 0.6 }, "\(lines)")
    }
}
