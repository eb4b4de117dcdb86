import Foundation
import Playback
import PlaybackTestSupport
import Testing

@Suite struct PlayerRuleTests {
    let backend = FakeBackend()

    func item(_ name: String, frames: Int = 30, fps: Int32 = 30, index: Int? = nil, keyframes: Int = 1) -> PlayerItem {
        let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps, keyframeInterval: keyframes)), backend: backend)
        item.playlistIndex = index
        return item
    }

    @Test func playSetsRateToDefaultRateAndPauseSetsZero() throws {
        let player = try Player(item: item("a.mp4"), logger: quiet)
        #expect(player.rate == 0 && player.defaultRate == 1)
        player.play()
        #expect(player.rate == 1)
        player.pause()
        #expect(player.rate == 0 && player.timeControlStatus == .paused && player.reasonForWaitingToPlay == nil)
    }

    @Test func withNoItemPlayingWaitsWithReasonNoItemToPlay() {
        let player = Player(logger: quiet)
        player.play()
        #expect(player.timeControlStatus == .waitingToPlayAtSpecifiedRate)
        #expect(player.reasonForWaitingToPlay == .noItemToPlay)
    }

    @Test func playWithoutDecodedFramesWaitsToMinimizeStallsThenPlays() async throws {
        backend.holdDecoding(true)
        let player = try Player(item: item("a.mp4"), logger: quiet)
        player.play()
        #expect(player.timeControlStatus == .waitingToPlayAtSpecifiedRate && player.reasonForWaitingToPlay == .toMinimizeStalls)
        backend.holdDecoding(false)
        let display = try VirtualDisplay(player)
        let picture = display.step()
        #expect(player.timeControlStatus == .playing && player.reasonForWaitingToPlay == nil,
                "\(player.timeControlStatus) \(String(describing: player.reasonForWaitingToPlay)) new=\(picture?.isNew ?? false) frame=\(picture?.frame != nil)")
    }

    @Test func advanceOnAPlainPlayerIsAnError() throws {
        let player = Player(logger: quiet)
        #expect(throws: PlayerError.advanceNeedsAQueuePlayer) { try player.setActionAtItemEnd(.advance) }
        #expect(QueuePlayer(logger: quiet).actionAtItemEnd == .advance)
    }

    @Test func replaceCurrentItemTakesEffectAtOnceAndTheSameItemDoesNothing() throws {
        let first = item("a.mp4", index: 0), second = item("b.mp4", index: 1)
        let player = try Player(item: first, logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(10)
        try player.replaceCurrentItem(with: first)
        display.step(1)
        #expect(display.shown.last!.item == 0)
        try player.replaceCurrentItem(with: second)
        #expect(player.currentItem === second)
        display.step(1)
        #expect(display.shown.last!.item == 1 && display.shown.last!.frame == 0)
    }

    @Test func seekWithZeroTolerancesIsFrameExact() async throws {
        let player = try Player(item: item("a.mp4", frames: 300, keyframes: 30), logger: quiet)
        let display = try VirtualDisplay(player)
        player.seek(to: tm(1234, 1000)) { _ in }   // inside frame 37 (1.2333 s .. 1.2667 s)
        display.step()
        #expect(display.shown.last!.frame == 37)
        #expect(player.currentTime() == tm(1234, 1000))
    }

    @Test func seekWithTolerancesLandsWithinThem() async throws {
        let player = try Player(item: item("a.mp4", frames: 300, keyframes: 30), logger: quiet)
        let display = try VirtualDisplay(player)
        player.seek(to: tm(1234, 1000), toleranceBefore: .positiveInfinity, toleranceAfter: .positiveInfinity) { _ in }
        display.step()
        // The sync frame before the target (frame 30, 1.0 s) is within the tolerance: no decoding up to 37.
        #expect(display.shown.last!.frame == 30)
        #expect(player.currentTime() == tm(1, 1))
    }

    @Test func aNewerSeekFinishesOlderUnfinishedSeeksWithFalse() throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let results = Recorder<Bool>()
        for seconds in [1, 2, 3] as [Int64] { player.seek(to: tm(seconds, 1)) { results.append($0) } }
        display.step()
        #expect(results.all == [false, false, true])
        #expect(display.shown.last!.frame == 90)
    }

    @Test func periodicObserverFiresEveryIntervalAndOnPlayPauseAndSeek() throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let times = Recorder<MediaTime>()
        _ = try player.addPeriodicTimeObserver(forInterval: tm(1, 2)) { times.append($0) }
        player.play()  // fires once (playback starts)
        player.waitForTimeObserverCallbacks()
        #expect(times.all == [.zero])
        display.step(121)  // two seconds: crossings of 0.5, 1.0, 1.5, 2.0
        player.waitForTimeObserverCallbacks()
        #expect(times.all.count == 5)
        player.pause()
        player.waitForTimeObserverCallbacks()
        #expect(times.all.count == 6)
        player.seek(to: tm(7, 1)) { _ in }
        display.step()
        player.waitForTimeObserverCallbacks()
        #expect(times.all.count == 7 && times.all.last == tm(7, 1))
    }

    @Test func boundaryObserverFiresOnCrossingButNeverOnASeekOverIt() throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let hits = Recorder<MediaTime>()
        _ = try player.addBoundaryTimeObserver(forTimes: [tm(1, 2), tm(5, 1)]) { hits.append(player.currentTime()) }
        player.play()
        display.step(40)
        player.waitForTimeObserverCallbacks()
        #expect(hits.all == [tm(1, 2)])
        player.seek(to: tm(6, 1)) { _ in }  // jumps over 5 s
        display.step(30)
        player.waitForTimeObserverCallbacks()
        #expect(hits.all == [tm(1, 2)])
        #expect(throws: PlayerError.emptyBoundaryTimes) { try player.addBoundaryTimeObserver(forTimes: []) {} }
    }

    @Test func afterRemoveTimeObserverNoCallbackStartsAndForeignTokensAreErrors() throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        let display = try VirtualDisplay(player)
        let times = Recorder<MediaTime>()
        let token = try player.addPeriodicTimeObserver(forInterval: tm(1, 10)) { times.append($0) }
        player.play()
        display.step(30)
        player.waitForTimeObserverCallbacks()
        let count = times.all.count
        try player.removeTimeObserver(token)
        display.step(30)
        player.waitForTimeObserverCallbacks()
        #expect(count > 0 && times.all.count == count)
        #expect(throws: PlayerError.tokenOfAnotherPlayer) { try Player(logger: quiet).removeTimeObserver(token) }
    }

    @Test func setRateAtHostTimeStartsOnThatVsyncAndNeedsNoAutomaticWaiting() throws {
        let player = try Player(item: item("a.mp4", frames: 300), logger: quiet)
        #expect(throws: PlayerError.setRateWhileWaitingToMinimizeStalls) { try player.setRate(1, time: .zero, atHostTime: tm(1, 1)) }
        player.automaticallyWaitsToMinimizeStalling = false
        let display = try VirtualDisplay(player)
        try player.setRate(1, time: tm(1, 1), atHostTime: tm(1, 2))  // item 1.0 s on vsync 30
        display.step(40)
        let frames = display.shown.filter { $0.frame != nil }
        #expect(frames.first.map { $0.frame } == 30)   // the picture at the start time, shown while waiting
        #expect(frames.dropFirst().first.map { [$0.vsync, Int64($0.frame!)] } == [32, 31])
    }

    @Test func changesStreamReportsRateCurrentItemAndTimeControlStatus() async throws {
        let player = Player(logger: quiet)
        let changes = player.changes()
        try player.replaceCurrentItem(with: item("a.mp4"))
        player.play()
        // The values when the stream was made (as KVO's .initial), then the changes.
        let seen = await firstValues(8, of: changes).map { change in
            switch change {
            case .status(let s): "status \(s)"
            case .rate(let r): "rate \(r)"
            case .currentItem(let i): "item \(i != nil)"
            case .timeControlStatus(let s, _): "tcs \(s)"
            }
        }
        #expect(Array(seen.prefix(4)) == ["status unknown", "rate 0.0", "tcs paused", "item false"])
        #expect(seen.contains("status readyToPlay") && seen.contains("item true") && seen.contains("rate 1.0"))
    }

    /// `statusUpdates()` starts with the status now and then sends every change: a change made
    /// while the stream is being made (the asset loading on another thread) is never lost, so a
    /// watcher waiting for readyToPlay always gets it.
    @Test func statusUpdatesNeverMissAChangeMadeWhileSubscribing() async throws {
        for round in 0..<1000 {
            let player = try Player(item: item("race-\(round).mp4", frames: 1), logger: quiet)  // starts loading
            let item = try #require(player.currentItem)
            let got = await withTaskGroup(of: PlayerItem.Status?.self) { group in
                group.addTask {
                    for await status in item.statusUpdates() where status != .unknown { return status }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(5))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            #expect(got == .readyToPlay, "round \(round): \(String(describing: got)) with the item \(item.status)")
            if got != .readyToPlay { break }
        }
    }
}

@Suite struct QueuePlayerRuleTests {
    let backend = FakeBackend()
    func item(_ name: String, frames: Int = 30, fps: Int32 = 30, index: Int? = nil) -> PlayerItem {
        let item = PlayerItem(url: backend.add(name, .init(frames: frames, fps: fps)), backend: backend)
        item.playlistIndex = index
        return item
    }

    @Test func itemsListsTheCurrentItemFirst() {
        let a = item("a.mp4"), b = item("b.mp4")
        let player = QueuePlayer(items: [a, b], logger: quiet)
        #expect(player.items().map(\.description) == [a.description, b.description])
        #expect(player.currentItem === a)
    }

    @Test func canInsertIsFalseForQueuedItemsOrAnUnqueuedAfter() {
        let a = item("a.mp4"), b = item("b.mp4"), c = item("c.mp4")
        let player = QueuePlayer(items: [a, b], logger: quiet)
        #expect(!player.canInsert(a, after: nil))
        #expect(!player.canInsert(b, after: b))
        #expect(!player.canInsert(c, after: item("x.mp4")))
        #expect(player.canInsert(c, after: nil) && player.canInsert(c, after: a))
    }

    @Test func insertAfterPlacesTheItemBehindAndNilAppendsWithoutChangingTheCurrentItem() throws {
        let a = item("a.mp4"), b = item("b.mp4"), c = item("c.mp4"), d = item("d.mp4")
        let player = QueuePlayer(items: [a, b], logger: quiet)
        try player.insert(c, after: nil)
        try player.insert(d, after: a)
        #expect(player.items().map { $0 === a ? "a" : $0 === b ? "b" : $0 === c ? "c" : "d" } == ["a", "d", "b", "c"])
        #expect(player.currentItem === a)
    }

    @Test func advanceAndRemoveCurrentDropTheCurrentItemAndRemoveAllStops() throws {
        let a = item("a.mp4"), b = item("b.mp4"), c = item("c.mp4")
        let player = QueuePlayer(items: [a, b, c], logger: quiet)
        player.play()
        player.advanceToNextItem()
        #expect(player.currentItem === b && player.items().count == 2)
        player.remove(b)
        #expect(player.currentItem === c)
        player.removeAllItems()
        #expect(player.currentItem == nil && player.rate == 0)
    }

    @Test func finishedItemsLeaveTheQueueGaplesslyAndAfterTheLastCurrentItemIsNil() throws {
        // 24 fps (10 frames = 25 vsyncs) then 30 fps (6 frames = 12 vsyncs) at 60 Hz.
        let player = QueuePlayer(items: [item("a.mp4", frames: 10, fps: 24, index: 0), item("b.mp4", frames: 6, fps: 30, index: 1)], logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(45)
        #expect(display.frameVsyncs == [0, 3, 5, 8, 10, 13, 15, 18, 20, 23, 25, 27, 29, 31, 33, 35])
        #expect(display.shown.last!.frame == nil && display.shown.last!.vsync == 37)  // background after the end
        #expect(player.currentItem == nil)
    }

    @Test func aFailedItemLeavesNoBlankVsyncBeyondItsSlot() throws {
        let missing = PlayerItem(url: URL(fileURLWithPath: "/fake/missing.mp4"), backend: backend)
        missing.playlistIndex = 1
        let player = QueuePlayer(items: [item("a.mp4", frames: 6, index: 0), missing, item("c.mp4", frames: 6, index: 2)], logger: quiet)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(30)
        #expect(display.frameVsyncs == (0..<12).map { Int64($0 * 2) })
        #expect(display.shown.filter { $0.frame != nil }.map { $0.item! } == Array(repeating: 0, count: 6) + Array(repeating: 2, count: 6))
        #expect(missing.status == .failed)
    }
}

@Suite struct PlayerLooperRuleTests {
    let backend = FakeBackend()

    @Test func looperKeepsThreeReplicasAndTheTemplateNeverPlays() throws {
        let template = PlayerItem(url: backend.add("a.mp4", .init(frames: 6, fps: 30)), backend: backend)
        let player = QueuePlayer(logger: quiet)
        let looper = try PlayerLooper(player: player, templateItem: template)
        #expect(player.items().count == 3 && !player.items().contains { $0 === template })
        #expect(player.actionAtItemEnd == .advance)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(12 * 5)
        #expect(player.items().count == 3)
        #expect(looper.loopCount == 4)
        // Every loop point is gapless: 30 frames, two vsyncs apart.
        #expect(display.frameVsyncs == (0..<30).map { Int64($0 * 2) })
        #expect(template.status == .unknown)
    }

    @Test func looperStatusBecomesReadyWhenTheTemplateDurationLoads() async throws {
        let template = PlayerItem(url: backend.add("a.mp4", .init(frames: 6, fps: 30)), backend: backend)
        let looper = try PlayerLooper(player: QueuePlayer(logger: quiet), templateItem: template)
        #expect(await eventually { looper.status == .ready })
        let failing = try PlayerLooper(player: QueuePlayer(logger: quiet),
                                       templateItem: PlayerItem(url: URL(fileURLWithPath: "/fake/none.mp4"), backend: backend))
        #expect(await eventually { failing.status == .failed })
    }

    @Test func looperTimeRangeSeeksEachReplicaAndSetsItsEnd() throws {
        let template = PlayerItem(url: backend.add("a.mp4", .init(frames: 60, fps: 30)), backend: backend)
        let player = QueuePlayer(logger: quiet)
        _ = try PlayerLooper(player: player, templateItem: template, timeRange: TimeRange(start: tm(1, 3), end: tm(2, 3)))
        let display = try VirtualDisplay(player)
        player.play()
        display.step(60)
        let frames = display.shown.compactMap(\.frame)
        #expect(Array(frames.prefix(20)) == Array(10..<20) + Array(10..<20))
        #expect(display.frameVsyncs == (0..<30).map { Int64($0 * 2) })
    }

    @Test func looperThrowsForAnEmptyOrOutsideRange() async throws {
        let template = PlayerItem(url: backend.add("a.mp4", .init(frames: 60, fps: 30)), backend: backend)
        _ = try await template.asset.load(.duration)
        #expect(throws: PlayerError.self) { try PlayerLooper(player: QueuePlayer(logger: quiet), templateItem: template, timeRange: TimeRange(start: .zero, duration: .zero)) }
        #expect(throws: PlayerError.self) { try PlayerLooper(player: QueuePlayer(logger: quiet), templateItem: template, timeRange: TimeRange(start: tm(1, 1), duration: tm(5, 1))) }
        let empty = PlayerItem(url: backend.add("empty.mp4", .init(frames: 0, fps: 30)), backend: backend)
        _ = try await empty.asset.load(.duration)
        #expect(throws: PlayerError.looperTemplateHasNoDuration) { try PlayerLooper(player: QueuePlayer(logger: quiet), templateItem: empty) }
    }

    @Test func disableLoopingCancelsAndTheCurrentReplicaPlaysToItsEnd() throws {
        let template = PlayerItem(url: backend.add("a.mp4", .init(frames: 6, fps: 30)), backend: backend)
        let player = QueuePlayer(logger: quiet)
        let looper = try PlayerLooper(player: player, templateItem: template)
        let display = try VirtualDisplay(player)
        player.play()
        display.step(5)
        looper.disableLooping()
        #expect(looper.status == .cancelled && player.items().count == 1)
        display.step(20)
        #expect(display.shown.compactMap(\.frame) == Array(0..<6))
        #expect(player.currentItem == nil)
    }

    @Test func playlistLoopOfMixedRatesIsGaplessWithExactCadence() throws {
        let a = PlayerItem(url: backend.add("a.mp4", .init(frames: 24, fps: 24)), backend: backend)
        let b = PlayerItem(url: backend.add("b.mp4", .init(frames: 25, fps: 25)), backend: backend)
        let c = PlayerItem(url: backend.add("c.mp4", .init(frames: 50, fps: 50)), backend: backend)
        let player = QueuePlayer(logger: quiet)
        let looper = PlayerLooper(player: player, templateItems: [a, b, c])
        let display = try VirtualDisplay(player)
        player.play()
        display.step(180 * 3)  // three loops of 3 s: vsyncs 0..539
        #expect(looper.loopCount == 2)
        let frames = display.shown.filter { $0.frame != nil }
        // 24 + 25 + 50 frames a loop, every one shown once (50 fps on 60 Hz repeats, never drops).
        #expect(frames.count == 3 * 99)
        #expect(player.stats.dropped == 0)
        let intervals = zip(frames, frames.dropFirst()).map { $1.vsync - $0.vsync }
        #expect(Set(intervals[0..<24]) == [2, 3] && Set(intervals[49..<98]) == [1, 2])
        for loop in 0..<3 {
            let start = frames.first { $0.vsync >= Int64(loop * 180) }!
            #expect(start.vsync == Int64(loop * 180) && start.item == 0 && start.frame == 0)
        }
    }
}
