import Display
import Foundation
import Media
import Playback
import Synchronization
import Testing
import TestSupport
@testable import RenderTests

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

    /// The app's own queue for its handlers, as the guide's are on the main queue: tasks that
    /// prefer it run on a dispatch queue, not on the shared pool of two threads that the suite's
    /// blocking tests may hold for minutes on this machine.
    final class AppQueue: TaskExecutor, @unchecked Sendable {
        // @unchecked: the queue is the only state, and it is thread-safe.
        private let queue = DispatchQueue(label: "guide-app")
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
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

    /// Waits up to 30 s for `condition`.
    func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(condition())
    }

    @Test("the guide's loop on the real clock: 10 passes, no gap at the seams after passes shown on time, boundary times exact, callbacks in order, then paused for 10 s at under 1% CPU")
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
        let handlerCalls = Mutex<[Double]>([])  // wall time (as the trace's) of each seek-and-play
        let app = AppQueue()
        let looped = Task(executorPreference: app) { () -> Int in
            var ends = 0
            for await event in events {
                guard case .didPlayToEndTime = event else { continue }
                ends += 1
                log.add(.end(ends))
                if ends == passes { return ends }
                handlerCalls.withLock { $0.append(Date().timeIntervalSince1970) }
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
            group.addTask(executorPreference: app) { await looped.value }
            group.addTask(executorPreference: app) { try? await Task.sleep(nanoseconds: 60_000_000_000); return nil }
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

        // From the trace (tools/check-trace.py): every frame of every pass shown or counted
        // dropped, no repeat, no blank, and no gap at the seams. On the real clock the handler's
        // seek must come before drawing for the seam's vsync starts (about 10 ms at 60 Hz): a
        // busy machine (the suite runs in parallel on two shared cores) may run the handler's task
        // later, or show a picture late and drop the frames due meanwhile (the timeline keeps the
        // clock): a seam after a pass that was itself late is the machine's lateness, and of the
        // seams after passes shown on time at most 2 may be a vsync late (without the seam's wait
        // and primed start nearly every seam is: 8 of 9 measured). SeamlessLoopTests checks the
        // seam exactly on the virtual clock. Observers' times are checked in the passes on time.
        let played = try Self.playedPart(of: tracePath)
        defer { try? FileManager.default.removeItem(atPath: played) }
        let (_, report) = try Command.checkTrace(played)
        let figures = try #require(report.values.first)
        let problems = figures["problems"] as? [String] ?? []
        let drops = figures["drops"] as? Int ?? -1
        #expect((figures["frames"] as? Int ?? 0) + drops == 18 * passes - 1, "\(figures)")
        #expect(figures["runs"] as? Int == passes, "\(figures)")
        for name in ["repeats", "blanks_after_start"] {
            #expect(figures[name] as? Int == 0, "\(name): \(problems)")
        }
        let shown = try Self.passes(in: played)
        try #require(shown.count == passes, "\(shown.count) passes in the trace")
        // On time: every frame 2 vsyncs after the one before (the first pass starts at frame 1,
        // frame 0 was shown while paused).
        let onTime = shown.map { pass in
            pass.count == 18 - (pass.first?.pts == 0 ? 0 : 1) && zip(pass, pass.dropFirst()).allSatisfy { $1.vsync - $0.vsync == 2 }
        }
        // A seam whose handler ran less than 6 ms before the seam's vsync (the busy machine ran
        // the app's task late) is excused too: frame 0 could not be drawn for it.
        let calledAt = handlerCalls.withLock { $0 }
        var seamGaps: [Int] = [], lateHandlers: [Int] = []
        for k in 0..<(passes - 1) where onTime[k] {
            let step = shown[k + 1][0].vsync - shown[k].last!.vsync
            guard step != 2 else { continue }
            if k < calledAt.count, calledAt[k] > shown[k].last!.wall + 2.0 / 60 - 0.006 {
                lateHandlers.append(k + 1)
            } else {
                seamGaps.append(k + 1)
            }
        }
        let clean = onTime.filter { $0 }.count
        let gaps = figures["gaps"] as? Int ?? -1
        #expect(gaps >= 0 && seamGaps.count <= 2,
                "\(gaps) of \(passes - 1) seams held the last frame longer, \(seamGaps.count) after passes shown on time with the handler in time (before passes \(seamGaps); late handlers before \(lateHandlers)): \(problems)")
        print("guide loop trace: \(gaps) gaps at \(passes - 1) seams (\(clean) passes on time), \(figures["cadence_errors"] ?? 0) cadence errors, \(drops) drops; paused CPU \(used) s in \(wall) s")

        // The callbacks, in order: in each pass the boundaries at a third and two thirds, then
        // the end; in a pass shown on time the times read in the callbacks (as the guide prints
        // them) are exactly the boundaries, and the periodic observer's exactly 0, a third, two
        // thirds and the duration.
        let calls = log.all
        let kinds = calls.compactMap { call -> String? in
            switch call {
            case .boundary: "boundary"
            case .end(let n): "end \(n)"
            case .periodic: nil
            }
        }
        #expect(kinds == (1...passes).flatMap { ["boundary", "boundary", "end \($0)"] }, "\(kinds)")
        var pass = 0
        for call in calls {
            switch call {
            case .end: pass += 1
            case .boundary(let time) where pass < passes && onTime[pass]:
                #expect(time == firstThird || time == secondThird, "pass \(pass + 1): a boundary callback read \(time)")
            case .periodic(let time) where pass < passes && onTime[pass]:
                #expect([MediaTime.zero, firstThird, secondThird, duration].contains(time), "pass \(pass + 1): periodic \(time)")
            default: break
            }
        }
    }

    /// The frames of a trace as passes: (vsync, pts) of each frame, a new pass where pts go back.
    static func passes(in trace: String) throws -> [[(vsync: Int, pts: Double, wall: Double)]] {
        var passes: [[(vsync: Int, pts: Double, wall: Double)]] = []
        for line in try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["type"] as? String == "frame", let vsync = object["vsync"] as? Int,
                  let pts = (object["pts"] as? NSNumber)?.doubleValue else { continue }
            let wall = (object["wall"] as? NSNumber)?.doubleValue ?? 0
            if let last = passes.last?.last, pts > last.pts {
                passes[passes.count - 1].append((vsync, pts, wall))
            } else {
                passes.append([(vsync, pts, wall)])
            }
        }
        return passes
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
        // Every frame shown or counted dropped, the items in order; the change between them has
        // no gap unless the machine was late (the player counted a picture shown late or a frame
        // dropped: the suite runs in parallel on two shared cores).
        // (A frame the player dropped for lateness at an item's end leaves no gap the trace check
        // can see: the player's own count makes up the difference.)
        let stats = queuePlayer.stats
        let accounted = (figures["frames"] as? Int ?? 0) + (figures["drops"] as? Int ?? 0)
        #expect(accounted <= 15 + 10 - 1 && accounted + stats.dropped + stats.decoderDropped >= 15 + 10 - 1, "\(figures), \(stats)")
        #expect(figures["item_changes"] as? Int == 1, "\(figures)")
        let late = stats.delayed + stats.dropped
        #expect(late > 0 || figures["gaps"] as? Int == 0, "\(problems)")
        #expect(figures["repeats"] as? Int == 0, "\(problems)")
    }
}
