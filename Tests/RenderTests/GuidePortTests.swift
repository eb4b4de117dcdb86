import Display
import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport

/// The AV Foundation Programming Guide's playback chapter ported to Marquee as a newcomer would,
/// with the public API only (Playback, Media, Display): an asset whose tracks load first, an item
/// whose status is observed before the player exists, boundary observers at a third and two
/// thirds, a did-play-to-end handler that seeks back to zero and plays, a queue player filled with
/// `canInsert`/`insert`, and a player view. What it showed is checked from the trace on the real
/// clock (`tools/check-trace.py`).
@Suite("The guide's playback chapter, ported with the public API", .serialized)
struct GuidePortTests {
    /// What a callback saw.
    enum Call: Equatable {
        case boundary(MediaTime)
        case periodic(MediaTime)
        case end(Int)
    }

    /// What the callbacks saw, in the order they ran.
    final class Log: @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var calls: [Call] = []
        func add(_ call: Call) { lock.withLock { calls.append(call) } }
        var all: [Call] { lock.withLock { calls } }
    }

    /// The CPU seconds (user + system) of this process's threads named `name` (/proc/self/task).
    static func cpuSeconds(ofThreadsNamed name: String) -> Double? {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var total: Double?
        for task in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            total = (total ?? 0) + (user + system) / ticks
        }
        return total
    }

    /// The trace without its first frame, the one shown while paused before `play()` (a picture
    /// held as long as the app waits, not part of the cadence), for `tools/check-trace.py`.
    static func playedPart(of trace: String) throws -> String {
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true)
        guard let first = lines.firstIndex(where: { $0.contains("\"type\":\"frame\"") }) else { return trace }
        let path = trace + ".played"
        try (lines.enumerated().filter { $0.offset != first }.map { String($0.element) }.joined(separator: "\n") + "\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The seams with a gap that the machine's load does not explain: a busy machine that showed a
    /// picture of the pass before late (a cadence error there) may be late at the seam too; a
    /// seam after a pass shown on time must have no gap.
    static func unexplainedGaps(_ problems: [String]) -> [String] {
        func vsync(_ problem: String, after marker: String) -> Int? {
            guard let range = problem.range(of: marker) else { return nil }
            return Int(problem[range.upperBound...].prefix { $0.isNumber })
        }
        let late = problems.filter { !$0.hasPrefix("gap") }.compactMap { vsync($0, after: "on vsync ") }
        return problems.filter { $0.hasPrefix("gap") }.filter { gap in
            guard let at = vsync(gap, after: "starts on vsync ") else { return true }
            return !late.contains { $0 < at && $0 >= at - 40 }
        }
    }

    /// Waits up to 30 s for `condition`.
    func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(condition())
    }

    @Test("the guide's loop: 10 passes with no gap at any seam, boundary times exact, callbacks in order, then paused for 10 s at under 1% CPU")
    func theGuidesLoopOnAPlayerView() async throws {
        let path = try TestMedia.clip(seconds: 0.6, fps: 30)   // 18 frames, 2 vsyncs each at 60 Hz
        let tracePath = TestMedia.folder + "/guide-loop-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: tracePath) }

        // loadAssetFromFile: the asset, and its tracks loaded asynchronously.
        let asset = Asset(url: URL(fileURLWithPath: path))
        let tracks = try await asset.load(.tracks)
        #expect(tracks.contains { $0.mediaType == .video })

        // The completion: an item, observed (status, did-play-to-end) before the player has it.
        let item = PlayerItem(asset: asset)
        let log = Log()
        let statuses = item.statusUpdates()
        let ready = Task { () -> PlayerItem.Status in
            for await status in statuses where status != .unknown { return status }
            return item.status
        }
        let events = item.events()
        let player = try Player(item: item)
        #expect(await ready.value == .readyToPlay)

        // Tracking time: boundary observers at a third and two thirds of the duration (the guide
        // rounds to whole seconds with a timescale of 1; a 0.6 s clip needs a finer one).
        let duration = try await asset.load(.duration)
        let firstThird = MediaTime(seconds: duration.seconds / 3, preferredTimescale: 600)
        let secondThird = MediaTime(seconds: duration.seconds * 2 / 3, preferredTimescale: 600)
        let boundary = try player.addBoundaryTimeObserver(forTimes: [firstThird, secondThird], queue: nil) {
            log.add(.boundary(player.currentTime()))
        }
        let periodic = try player.addPeriodicTimeObserver(forInterval: firstThird, queue: nil) { time in
            log.add(.periodic(time))
        }

        // Reaching the end: seek back to zero and play, nine times; the tenth pass ends paused.
        let passes = 10
        let looped = Task { () -> Int in
            var ends = 0
            for await event in events {
                guard case .didPlayToEndTime = event else { continue }
                ends += 1
                log.add(.end(ends))
                if ends == passes { return ends }
                player.seek(to: .zero) { _ in }
                player.play()
            }
            return ends
        }

        // The player view, and play.
        let view = try PlayerView(output: .headless(mode: DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 60)), clock: .real),
                                  trace: try TraceWriter(path: tracePath))
        view.player = player
        // syncUI: the play button works once the item is ready and its first frame is on screen.
        try await waitUntil { view.isReadyForDisplay }
        player.play()
        let ends = await withTaskGroup(of: Int?.self) { group in
            group.addTask { await looped.value }
            group.addTask { try? await Task.sleep(nanoseconds: 60_000_000_000); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(ends == passes, "the item played to its end \(ends ?? 0) times within a minute")

        // Paused on its last frame: 10 s cost under 1% of a CPU, and no decoder is left.
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(player.rate == 0)
        let cpu0 = try #require(Self.cpuSeconds(ofThreadsNamed: "player-view"), "the view's thread is not named player-view")
        let wall0 = ContinuousClock.now
        try await Task.sleep(nanoseconds: 10_000_000_000)
        let used = try #require(Self.cpuSeconds(ofThreadsNamed: "player-view")) - cpu0
        let wall = (ContinuousClock.now - wall0).seconds
        #expect(used / wall < 0.01, "the view's thread used \(used) s of CPU in \(wall) s while paused")
        #expect(player.waitForDecodeThreads(atMost: 0, timeout: 5) == 0)
        try player.removeTimeObserver(boundary)
        try player.removeTimeObserver(periodic)
        try view.close()

        // From the trace: every frame of every pass, 2 vsyncs each, no gap at any of the 9 seams
        // (a busy machine may show a picture late; a seam is then excused only after a pass that
        // was itself late somewhere, and most seams must be clean).
        let played = try Self.playedPart(of: tracePath)
        defer { try? FileManager.default.removeItem(atPath: played) }
        let (_, report) = try Command.checkTrace(played)
        let figures = try #require(report.values.first)
        let problems = figures["problems"] as? [String] ?? []
        #expect(figures["frames"] as? Int == 18 * passes - 1, "\(figures)")
        #expect(figures["runs"] as? Int == passes, "\(figures)")
        #expect(Self.unexplainedGaps(problems).isEmpty, "\(problems)")
        let gaps = figures["gaps"] as? Int ?? -1
        #expect(gaps >= 0 && gaps <= 2, "\(gaps) of \(passes - 1) seams had a gap: \(problems)")
        for name in ["repeats", "blanks_after_start"] {
            #expect(figures[name] as? Int == 0, "\(name): \(problems)")
        }
        print("guide loop trace: \(gaps) gaps at \(passes - 1) seams, \(figures["cadence_errors"] ?? 0) cadence errors, \(figures["drops"] ?? 0) drops; paused CPU \(used) s in \(wall) s")

        // The callbacks, in order: in each pass the boundaries at a third and two thirds (the
        // time read in the callback: exact, as the guide prints it), then the end.
        let calls = log.all
        let ordered = calls.filter { if case .periodic = $0 { false } else { true } }
        let expected = (1...passes).flatMap { [Call.boundary(firstThird), .boundary(secondThird), .end($0)] }
        #expect(ordered == expected, "\(ordered)")
        // The periodic observer: at each start (0), every third, and at each end (the duration):
        // exact times, in playing order, never a time of an earlier pass after a later one.
        let times = calls.compactMap { if case .periodic(let t) = $0 { t } else { nil } }
        #expect(times.allSatisfy { [MediaTime.zero, firstThird, secondThird, duration].contains($0) }, "\(times)")
        let sawThirds = times.filter { $0 == firstThird }.count
        #expect(sawThirds == passes, "\(times)")
    }

    @Test("the queue player: canInsert/insert appends, the items play in order, the change between them has no gap")
    func theQueuePlayerOnAPlayerView() async throws {
        let first = try TestMedia.clip(seconds: 0.5, fps: 30), second = try TestMedia.clip(seconds: 0.4, fps: 25)
        let tracePath = TestMedia.folder + "/guide-queue-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: tracePath) }
        let items = [PlayerItem(url: URL(fileURLWithPath: first))]
        let queuePlayer = QueuePlayer(items: items)
        let anItem = PlayerItem(url: URL(fileURLWithPath: second))
        #expect(queuePlayer.canInsert(anItem, after: nil))
        if queuePlayer.canInsert(anItem, after: nil) {
            try queuePlayer.insert(anItem, after: nil)
        }
        #expect(!queuePlayer.canInsert(anItem, after: nil))
        #expect(queuePlayer.items().count == 2 && queuePlayer.items().last === anItem)

        let view = try PlayerView(output: .headless(mode: DisplayMode(width: 320, height: 180, refresh: RefreshRate(numerator: 60)), clock: .real),
                                  trace: try TraceWriter(path: tracePath))
        view.player = queuePlayer
        try await waitUntil { view.isReadyForDisplay }
        queuePlayer.play()
        let deadline = ContinuousClock.now + .seconds(30)
        while queuePlayer.currentItem != nil && ContinuousClock.now < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(queuePlayer.currentItem == nil)
        try await Task.sleep(nanoseconds: 200_000_000)
        try view.close()

        let played = try Self.playedPart(of: tracePath)
        defer { try? FileManager.default.removeItem(atPath: played) }
        let (_, report) = try Command.checkTrace(played)
        let figures = try #require(report.values.first)
        let problems = figures["problems"] as? [String] ?? []
        #expect(figures["frames"] as? Int == 15 + 10 - 1, "\(figures)")
        #expect(figures["item_changes"] as? Int == 1, "\(figures)")
        #expect(Self.unexplainedGaps(problems).isEmpty, "\(problems)")
        #expect(figures["repeats"] as? Int == 0, "\(problems)")
    }
}
