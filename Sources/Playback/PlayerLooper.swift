import Foundation
import Synchronization

/// Loops a template item on a queue player (`AVPlayerLooper`) by keeping replicas of it queued:
/// the template itself never plays, and later edits to it are ignored. Each replica is a new item
/// of the same asset; a time range is applied to each by a seek to its start and its
/// `forwardPlaybackEndTime`. Marquee's player makes the loop point gapless.
///
/// Marquee adds a playlist form, `init(player:templateItems:)`, which loops a list of items as a
/// whole and skips items that fail (they are tried again on the next pass).
public final class PlayerLooper: @unchecked Sendable {
    // @unchecked: mutable state is guarded by the player's lock.
    public enum Status: Sendable, Equatable { case unknown, ready, failed, cancelled }

    private struct Template {
        var asset: Asset
        let forwardEnd: MediaTime
        let playlistIndex: Int?
        var transition = Transition.cut
        /// Where each replica starts (a playlist entry's `start`); nil: at zero.
        var start: MediaTime?
        /// Replicas made of this template so far (its passes).
        var made = 0
        /// Probes of the file that failed in a row.
        var probeFailures = 0
        /// The replica (by `made`) that probes the file again with a new asset; nil: none due.
        var retryAt: Int?

        /// The asset of the next replica. A probe that failed (a file missing, unreadable or not
        /// there yet) is tried again with a new asset: on the next pass after the first failure,
        /// then after 2, 4 and 8 passes, and every 8 passes from then on; one that failed only
        /// after a second or more (a read that timed out) every 8 passes from the first.
        mutating func nextAsset() -> Asset {
            made += 1
            if retryAt == nil {
                if asset.probeFailed {
                    probeFailures += 1
                    // A probe that failed slowly (it waited for a timeout) is tried only every 8 passes.
                    if asset.probeFailedSlowly { probeFailures = max(probeFailures, Template.maxBackoffDoublings + 1) }
                    retryAt = made + (1 << min(probeFailures - 1, Template.maxBackoffDoublings)) - 1
                } else if asset.probeSucceeded {
                    probeFailures = 0
                }
            }
            if let due = retryAt, made >= due {
                asset = Asset(url: asset.url, backend: asset.backend)
                retryAt = nil
            }
            return asset
        }

        /// A failed probe is retried after at most 2^3 = 8 passes.
        static let maxBackoffDoublings = 3

        /// Nothing to remember: the probe has not failed (a template made again from its source
        /// only probes its file again).
        var isPlain: Bool { probeFailures == 0 && retryAt == nil && !asset.probeFailed }

        init(_ item: PlayerItem, playlistIndex: Int?) {
            asset = item.asset
            forwardEnd = item.forwardPlaybackEndTime
            self.playlistIndex = playlistIndex
            transition = item.transition
            start = item.pendingStart?.time
        }
    }

    /// Makes the template items of a playlist on demand, by position (0..<count): a long playlist
    /// costs no item and no asset per entry, only for the few replicas queued.
    public struct TemplateSource: Sendable {
        public let count: Int
        let make: @Sendable (Int) -> PlayerItem

        public init(count: Int, make: @escaping @Sendable (Int) -> PlayerItem) {
            self.count = max(0, count)
            self.make = make
        }

        /// The given items, as they are.
        public init(items: [PlayerItem]) {
            self.init(count: items.count) { items[$0] }
        }
    }

    public let player: QueuePlayer
    /// Where the playlist's templates come from, in order (appends add a source each), and how
    /// many there are in all.
    private var sources: [(first: Int, source: TemplateSource)] = []
    private var templateCount = 0
    /// Templates made so far, by position: every one for a playlist of up to `keptTemplates`
    /// entries (each keeps its probed asset from pass to pass, as AVPlayerLooper's replicas share
    /// the template's asset); beyond that only those that carry a failed probe's back-off (kept
    /// while the list was shorter). A template made fresh is plain when its replica is made (the
    /// probe comes later), so in a long list a failing file is tried again every pass: once in
    /// over 4096 items rather than after 1 to 8 passes.
    private var templates: [Int: Template] = [:]
    static let keptTemplates = 4096
    private var timeRange: TimeRange
    private let isPlaylist: Bool
    private var replicas: [(item: PlayerItem, template: Int)] = []
    private var nextTemplate = 0
    /// The status and its error, apart from the player's lock: set from loading callbacks, which
    /// must not wait for the player.
    private let outcome = Mutex<(status: Status, error: (any Error)?)>((.unknown, nil))
    private var _loopCount = 0
    private var looping = true

    /// Loops `templateItem` within `timeRange` (invalid: the whole item). Throws for a template
    /// whose known duration is zero, or a range that is empty or outside [0, duration].
    public init(player: QueuePlayer, templateItem: PlayerItem, timeRange: TimeRange = .invalid) throws {
        self.player = player
        var template = Template(templateItem, playlistIndex: templateItem.playlistIndex)
        template.start = nil  // a time range, not the item's own start, says where replicas start
        templates = [0: template]
        templateCount = 1
        sources = [(0, TemplateSource(items: [templateItem]))]
        self.timeRange = timeRange
        isPlaylist = false
        if timeRange.isValid {
            guard timeRange.duration > .zero else { throw PlayerError.looperTimeRangeInvalid("\(timeRange) is empty") }
            guard timeRange.start >= .zero else { throw PlayerError.looperTimeRangeInvalid("\(timeRange) starts before 0") }
        }
        if case .loaded(let duration) = templateItem.asset.status(of: .duration) {
            try Self.check(duration: duration, range: timeRange)
        }
        start()
        let asset = templateItem.asset
        asset.loadValues(forKeys: ["duration"]) { [weak self] in
            guard let self else { return }
            switch asset.status(of: .duration) {
            case .loaded(let duration):
                do {
                    try Self.check(duration: duration, range: self.timeRange)
                    self.setStatus(.ready, error: nil)
                } catch {
                    self.setStatus(.failed, error: error)
                    self.disableLooping(status: .failed)
                }
            case .failed(let error):
                self.setStatus(.failed, error: error)
                self.disableLooping(status: .failed)
            default: break
            }
        }
    }

    /// Marquee: loops `templateItems` in order as a whole. Items that fail are skipped and tried
    /// again on the next pass; `loopCount` goes up each time the last one ends. With
    /// `afterCurrentItem` the replicas go behind the item playing now instead of ahead of it, so a
    /// new playlist takes over at the next item boundary, without a gap (a kiosk reload).
    public convenience init(player: QueuePlayer, templateItems: [PlayerItem], afterCurrentItem: Bool = false) {
        self.init(player: player, templates: TemplateSource(items: templateItems), afterCurrentItem: afterCurrentItem)
    }

    /// Marquee: loops the playlist `source` makes, as `init(player:templateItems:)`, making each
    /// template item only when a replica of it is due.
    public init(player: QueuePlayer, templates source: TemplateSource, afterCurrentItem: Bool = false) {
        self.afterCurrentItem = afterCurrentItem
        self.player = player
        sources = [(0, source)]
        templateCount = source.count
        timeRange = .invalid
        isPlaylist = true
        start()
        setStatus(templateCount == 0 ? .failed : .ready, error: nil)
    }

    private var afterCurrentItem = false

    /// The template at `index`, made from its source unless kept.
    private func template(at index: Int) -> Template {
        if let kept = templates[index] { return kept }
        let (first, source) = sources.last { $0.first <= index }!
        let item = source.make(index - first)
        return Template(item, playlistIndex: item.playlistIndex ?? index)
    }

    /// Keeps `template` for the next pass: always in a playlist of up to `keptTemplates` entries;
    /// in a longer one only while it carries a failed probe's back-off (bounded memory: a pass
    /// over a million entries probes each file again, as reading a folder again does).
    private func keep(_ template: Template, at index: Int) {
        if templateCount <= Self.keptTemplates || !template.isPlain {
            templates[index] = template
        } else {
            templates[index] = nil
        }
    }

    private static func check(duration: MediaTime, range: TimeRange) throws {
        guard !(duration.isNumeric && duration <= .zero) else { throw PlayerError.looperTemplateHasNoDuration }
        guard range.isValid, duration.isNumeric else { return }
        guard range.end <= duration else {
            throw PlayerError.looperTimeRangeInvalid("\(range) ends after the item's duration \(duration)")
        }
    }

    public var status: Status { outcome.withLock { $0.status } }
    public var error: (any Error)? { outcome.withLock { $0.error } }
    /// How many times playback wrapped around to the start.
    public var loopCount: Int { player.withLock { _loopCount } }
    /// The replicas now queued.
    public var loopingPlayerItems: [PlayerItem] { player.withLock { replicas.map(\.item) } }

    /// Replicas kept queued: the one playing and two behind it, whatever the playlist's length.
    /// Each replica probes its file as it joins the player, so a whole long playlist queued at
    /// once would probe every file at once (a `loadfile append` burst, a million-entry M3U).
    private var wanted: Int { 3 }

    private func setStatus(_ status: Status, error: (any Error)?) {
        outcome.withLock { outcome in
            guard outcome.status != .cancelled else { return }
            outcome = (status, error)
        }
    }

    private func start() {
        try? player.setActionAtItemEnd(.advance)
        player.locked { outbox in
            player.loopers.append(WeakLooper(looper: self))
            var index = afterCurrentItem ? min(1, player.queue.count) : 0
            while replicas.count < wanted && templateCount > 0 {
                let (item, template) = makeReplica()
                player.insertLocked(item, at: index, &outbox)
                replicas.append((item, template))
                index += 1
            }
        }
    }

    private func makeReplica() -> (PlayerItem, Int) {
        let index = nextTemplate
        nextTemplate = (nextTemplate + 1) % templateCount
        var template = template(at: index)
        let item = PlayerItem(asset: template.nextAsset())
        keep(template, at: index)
        item.playlistIndex = template.playlistIndex
        item.transition = template.transition
        if timeRange.isValid {
            item.pendingStart = (timeRange.start, .zero, nil)
            item.forwardPlaybackEndTime = timeRange.end
        } else {
            item.forwardPlaybackEndTime = template.forwardEnd
            if isPlaylist, let start = template.start, start > .zero { item.pendingStart = (start, .zero, nil) }
        }
        return (item, index)
    }

    /// Called by the player (its lock held) when `item` has left the queue at its end.
    func itemLeftLocked(_ item: PlayerItem, _ outbox: inout Player.Outbox) {
        guard let position = replicas.firstIndex(where: { $0.item === item }) else { return }
        let template = replicas[position].template
        replicas.remove(at: position)
        if template == templateCount - 1 && looping { _loopCount += 1 }
        guard looping else { return }
        // The new replica goes right behind the last one, ahead of any other items.
        let after = replicas.last.flatMap { last in self.player.queue.firstIndex { $0 === last.item } }
        let (replica, index) = makeReplica()
        player.insertLocked(replica, at: (after ?? -1) + 1, &outbox)
        replicas.append((replica, index))
    }

    /// Marquee: `items` join the end of the looped playlist (`loadfile append`). The replicas
    /// queued now stay (the one playing, and the next, which may be decoding ahead): nothing leaves
    /// the queue and nothing is probed again, so a burst of appends costs no decoder and no probe
    /// each. The new items follow the last item in every pass from the next replica made on (when
    /// the queued ones have already wrapped to the top of a short playlist, they play first).
    public func append(templateItems items: [PlayerItem]) {
        append(templates: TemplateSource(items: items))
    }

    /// Marquee: the playlist `source` makes joins the end of the looped playlist, as
    /// `append(templateItems:)`.
    public func append(templates source: TemplateSource) {
        guard isPlaylist, source.count > 0 else { return }
        player.locked { outbox in
            guard looping else { return }
            let first = templateCount
            sources.append((first, source))
            templateCount += source.count
            // Past `keptTemplates` the plain templates kept so far go too (as `keep` would).
            if first <= Self.keptTemplates && templateCount > Self.keptTemplates {
                templates = templates.filter { !$0.value.isPlain }
            }
            // Replicas queued behind the next one (no decoder yet) are made again, so that the new
            // items come right after the old last one: the cycle goes on from the next replica.
            let current = player.queue.first
            let next = player.queue.dropFirst().first
            let kept = replicas.filter { $0.item === current || $0.item === next }
            for replica in replicas where !kept.contains(where: { $0.item === replica.item }) {
                player.removeLocked(replica.item, &outbox)
            }
            replicas = kept
            if let last = kept.last, first > 0 { nextTemplate = (last.template + 1) % first }
            // The cycle wraps to the first item there: the new ones come before it.
            if nextTemplate == 0 && first > 0 { nextTemplate = first }
            // A playlist that had nothing to loop fills its window now.
            while replicas.count < wanted {
                let after = replicas.last.flatMap { last in player.queue.firstIndex { $0 === last.item } } ?? (player.queue.count - 1)
                let (replica, index) = makeReplica()
                player.insertLocked(replica, at: after + 1, &outbox)
                replicas.append((replica, index))
            }
        }
        setStatus(.ready, error: nil)
    }

    /// Stops looping: the current replica plays to its end, the others leave the queue, and the
    /// queue is as it was apart from them.
    public func disableLooping() { disableLooping(status: .cancelled) }

    private func disableLooping(status: Status) {
        player.locked { outbox in
            guard looping else { return }
            looping = false
            outcome.withLock { if $0.status != .failed { $0.status = status } }
            let current = player.queue.first
            for replica in replicas where replica.item !== current {
                player.removeLocked(replica.item, &outbox)
            }
            replicas.removeAll { $0.item !== current }
        }
    }
}
