import Dispatch
import Foundation
import Playback
import PlaybackTestSupport
import Synchronization
import Testing

/// Observation as AVFoundation's KVO with `.initial`: every observable stream starts with the value
/// now and misses no change after it; notification streams are subscribed when they are made; time
/// observers are called in the order of the changes, on their queue or on the player's own
/// callback thread. And the API's small forms: the `actionAtItemEnd` setter, `seek(to:)`.
@Suite struct ObservationTests {
    let backend = FakeBackend()

    func item(_ name: String, frames: Int = 30) -> PlayerItem {
        PlayerItem(url: backend.add(name, .init(frames: frames, fps: 30)), backend: backend)
    }

    func describe(_ change: Player.Change) -> String {
        switch change {
        case .status(let s): "status \(s)"
        case .rate(let r): "rate \(r)"
        case .currentItem(let i): "item \(i?.asset.url.lastPathComponent ?? "nil")"
        case .timeControlStatus(let s, let why): "tcs \(s) \(why.map { "\($0)" } ?? "-")"
        }
    }

    /// `Player(item:)` becomes readyToPlay inside its initializer: a stream made afterwards still
    /// says so, first.
    @Test func changesStartWithTheValuesNowSoReadyToPlayFromTheInitializerIsSeen() async throws {
        let player = try Player(item: item("a.mp4"), logger: quiet)
        let changes = player.changes()
        player.play()
        let seen = await firstValues(5, of: changes).map(describe)
        #expect(seen == ["status readyToPlay", "rate 0.0", "tcs paused -", "item a.mp4", "rate 1.0"])
    }

    @Test func eachPropertyStreamStartsWithItsValueNow() async throws {
        let first = item("a.mp4")
        let player = try Player(item: first, logger: quiet)
        var statuses = player.statusUpdates().makeAsyncIterator()
        #expect(await statuses.next() == .readyToPlay)
        var rates = player.rateUpdates().makeAsyncIterator()
        #expect(await rates.next() == 0)
        var items = player.currentItemUpdates().makeAsyncIterator()
        #expect(await items.next()! === first)
        var controls = player.timeControlStatusUpdates().makeAsyncIterator()
        #expect(await controls.next()?.0 == .paused)
        player.play()
        #expect(await rates.next() == 1)
        try player.replaceCurrentItem(with: nil)
        let next = await items.next()
        #expect(next! == nil)
        var reasons: [Player.WaitingReason?] = []
        while let (_, reason) = await controls.next(), reasons.count < 5 {
            reasons.append(reason)
            if reason == .noItemToPlay { break }
        }
        #expect(reasons.last == .noItemToPlay)
    }

    /// `events()` subscribes when it is called: an event sent right after, before any task reads
    /// the stream, is in it.
    /// `seek(to:)` without a completion (in an async context `seek(to:)` is the awaiting form, as
    /// AVFoundation's is).
    func seekWithoutWaiting(_ player: Player, to time: MediaTime) { player.seek(to: time) }

    @Test func eventsAreSubscribedWhenTheStreamIsMadeNotWhenItIsRead() async throws {
        let player = try Player(item: item("a.mp4"), logger: quiet)
        let events = player.events()
        let itemEvents = try #require(player.currentItem).events()
        seekWithoutWaiting(player, to: MediaTime(value: 1, timescale: 2))  // posts timeJumped now
        let reader = Task { () -> String? in
            for await event in events { return "\(event.event)" }
            return nil
        }
        #expect(await reader.value == "timeJumped")
        let itemReader = Task { () -> String? in
            for await event in itemEvents { return "\(event)" }
            return nil
        }
        #expect(await itemReader.value == "timeJumped")
    }

    @Test func actionAtItemEndIsSettableAndAdvanceIsRefusedOnAPlainPlayer() throws {
        let lines = Recorder<String>()
        let player = Player(logger: Logger(level: .error, sink: { lines.append($0) }))
        #expect(player.actionAtItemEnd == .pause)
        player.actionAtItemEnd = .none
        #expect(player.actionAtItemEnd == .none)
        player.actionAtItemEnd = .advance  // AVFoundation raises; refused here, and logged
        #expect(player.actionAtItemEnd == .none)
        #expect(lines.all.contains { $0.contains("actionAtItemEnd not changed") && $0.contains("QueuePlayer") })
        let queuePlayer = QueuePlayer(logger: quiet)
        queuePlayer.actionAtItemEnd = .pause
        #expect(queuePlayer.actionAtItemEnd == .pause)
        queuePlayer.actionAtItemEnd = .advance
        #expect(queuePlayer.actionAtItemEnd == .advance)
    }

    @Test func seekWithoutACompletionLandsOnTheFrame() throws {
        let player = try Player(item: item("a.mp4", frames: 90), logger: quiet)
        let display = try VirtualDisplay(player)
        display.step()
        player.seek(to: MediaTime(value: 2, timescale: 1))
        let picture = display.step()
        #expect(picture?.isNew == true && (picture?.frame as? ScriptFrame)?.index == 60)
        #expect(player.currentTime() == MediaTime(value: 2, timescale: 1))
    }

}
