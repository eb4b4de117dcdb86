import Foundation

/// How one item follows the one before it (Marquee; set per item, `PlayerItem.transition`: the
/// transition INTO that item, the loop point included).
///
/// - `cut`: the next item's first frame replaces the last one on the vsync it is due (gapless).
/// - `crossfade`: the item starts on the same vsync as with a cut (the timeline is the cut's);
///   for its first `duration` its pictures are mixed over the outgoing item's last picture, which
///   stays as it was at its end: the k-th of n vsyncs shows the incoming picture with weight k/n.
/// - `fade`: the outgoing item's last `duration / 2` fades to the background (its last vsync is
///   the background alone), then the incoming item's first `duration / 2` fades in from it.
///
/// Each part lasts a whole number of vsyncs, at most half the item's length (longer ones are
/// clamped), and is counted on the timeline: every output of a wall draws the same mix on the
/// same vsync.
public struct Transition: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable { case cut, crossfade, fade }
    public var kind: Kind
    public var duration: MediaTime

    public init(_ kind: Kind, duration: MediaTime = .zero) {
        self.kind = kind
        self.duration = kind == .cut || !duration.isNumeric || duration < .zero ? .zero : duration
    }

    public static let cut = Transition(.cut)

    /// Half the duration: each part of a fade.
    var half: MediaTime {
        duration.timescale <= Int32.max / 2 ? MediaTime(value: duration.value, timescale: duration.timescale * 2)
            : MediaTime(seconds: duration.seconds / 2, preferredTimescale: 90_000)
    }

    public var description: String { kind == .cut ? "cut" : "\(kind.rawValue) \(duration.seconds.formatted(decimals: 3)) s" }

    /// Vsyncs `seconds` lasts at `refresh` (at least 1), at most half of `length` when known.
    static func vsyncs(_ seconds: MediaTime, refresh: RefreshRate, clampedTo length: MediaTime?) -> Int64 {
        let scheduler = CadenceScheduler(refresh: refresh)
        var n = max(1, scheduler.vsyncOffset(for: seconds))
        if let length, length.isNumeric, length > .zero {
            n = min(n, max(1, scheduler.vsyncOffset(for: length) / 2))
        }
        return n
    }
}

/// What one vsync's picture mixes during a transition: the picture's own frame drawn with
/// `frameWeight`, `other` (the outgoing item's last picture, in a crossfade) with `otherWeight`,
/// and the background with the rest (`1 - frameWeight - otherWeight`).
public struct PictureMix: @unchecked Sendable, Equatable {
    // @unchecked: the frame is handed to the presentation thread, which alone uses it.
    public let kind: Transition.Kind
    public let frameWeight: Double
    public let other: (any PresentableFrame)?
    public let otherWeight: Double
    /// The other frame's item (playlist index in traces) and time in it.
    public let otherItem: Int?
    public let otherPts: MediaTime?

    public static func == (a: PictureMix, b: PictureMix) -> Bool {
        a.kind == b.kind && a.frameWeight == b.frameWeight && a.otherWeight == b.otherWeight
            && a.otherItem == b.otherItem && a.otherPts == b.otherPts
    }
}

/// A transition's mix as an output draws it (`OutputDriver.draw(_:mixes:)`): the lane's frame
/// with `frameWeight`, `other` with `otherWeight`, the background with the rest.
public struct FrameMix<Frame> {
    public var other: Frame?
    public var otherWeight: Float
    public var frameWeight: Float
    public init(other: Frame?, otherWeight: Float, frameWeight: Float) {
        self.other = other
        self.otherWeight = otherWeight
        self.frameWeight = frameWeight
    }

    /// The weights that draw `other` and then the frame, each blended over what is there with a
    /// constant alpha, to the mix: (alpha of `other`, alpha of the frame).
    public var blendAlphas: (other: Float, frame: Float) {
        let frame = min(max(frameWeight, 0), 1)
        let rest = 1 - frame
        let other = rest > 1e-6 ? min(max(otherWeight / rest, 0), 1) : 0
        return (other, frame)
    }
}

extension Player {
    /// A run that came in with a transition: what it mixes with, and for how many vsyncs.
    struct Entering {
        let kind: Transition.Kind
        let frame: (any PresentableFrame)?
        let item: Int
        let pts: MediaTime
        let vsyncs: Int64
    }

    /// The item length the transition parts are clamped to (half of it at most).
    func runLength(_ run: Run) -> MediaTime? {
        let fpet = run.item.forwardPlaybackEndTime
        let end = fpet.isNumeric ? fpet : run.item.duration
        guard end.isNumeric else { return nil }
        let length = end - (run.origin ?? .zero)
        return length > .zero ? length : nil
    }

    /// The run `newRun` follows `old` (its end reached on vsync `n`): with a transition into its
    /// item it remembers the outgoing picture (`last`) to mix with.
    func enterLocked(_ newRun: Run, after old: Run, last: (frame: any PresentableFrame, run: Run)?) {
        let transition = newRun.item.transition
        guard transition.kind != .cut, let refresh else { return }
        let seconds = transition.kind == .fade ? transition.half : transition.duration
        let vsyncs = Transition.vsyncs(seconds, refresh: refresh, clampedTo: runLength(newRun) ?? newRun.item.duration)
        let held = last.flatMap { $0.run === old ? $0.frame : nil }
        if transition.kind == .crossfade && held == nil { return }  // nothing to mix with
        newRun.entering = Entering(kind: transition.kind, frame: transition.kind == .crossfade ? held : nil,
                                   item: old.item.traceIndex, pts: held?.pts ?? .zero, vsyncs: vsyncs)
    }

    /// The mix on vsync `n`, from the timeline: the current run's way in (crossfade, fade in) or,
    /// before a fade into the next item, its way out. Nil: no mix (the picture alone).
    func mixLocked(_ n: Int64) -> PictureMix? {
        guard let run, let refresh, anchor != nil, let shown, shown.run === run else { return nil }
        if let entering = run.entering {
            // vsyncOf saturates at .min/.max (timestamps out of range): no mix then, and no overflow.
            let first = vsyncOf(run.start)
            guard first > Int64.min / 2, first <= n else { return nil }
            let (k, overflow) = (n - first).addingReportingOverflow(1)
            guard !overflow, k < entering.vsyncs else {
                run.entering = nil  // done: the held picture goes
                return nil
            }
            let w = Double(max(k, 1)) / Double(entering.vsyncs)
            switch entering.kind {
            case .crossfade:
                return PictureMix(kind: .crossfade, frameWeight: w, other: entering.frame, otherWeight: 1 - w,
                                  otherItem: entering.item, otherPts: entering.pts)
            case .fade:
                return PictureMix(kind: .fade, frameWeight: w, other: nil, otherWeight: 0, otherItem: nil, otherPts: nil)
            case .cut:
                return nil
            }
        }
        // A fade into the next item: this item's last part fades out, its predicted end the
        // background alone.
        guard !run.ended, queue.count > 1, queue[0] === run.item, queue[1].transition.kind == .fade,
              run.origin != nil, let length = runLength(run) else { return nil }
        let next = queue[1].transition
        let vsyncs = Transition.vsyncs(next.half, refresh: refresh, clampedTo: length)
        let end = vsyncOf(run.start + length)
        guard end > Int64.min / 2, end < Int64.max / 2, n >= end - vsyncs else { return nil }
        let w = Double(max(0, end - 1 - n)) / Double(vsyncs)
        return PictureMix(kind: .fade, frameWeight: w, other: nil, otherWeight: 0, otherItem: nil, otherPts: nil)
    }
}

extension TraceWriter {
    /// A frame line (`TraceWriter.frame`); during a transition `mix` adds
    /// `"mix":{"kind":"crossfade","weight":0.5,"otherItem":0,"otherPts":1.966667}` (`weight`: this
    /// frame's; the other picture's is 1 - weight in a crossfade, the background's the rest in a fade).
    public func frame(vsync: Int64, t: MediaTime, output: String, item: Int, uri: String, pts: MediaTime,
                      wall: Double = Date().timeIntervalSince1970, late: Int64 = 0, mix: PictureMix? = nil) {
        var extra = ""
        if let mix {
            extra += ",\"mix\":{\"kind\":\"\(mix.kind.rawValue)\",\"weight\":\(mix.frameWeight.formatted(decimals: 6))"
            if let other = mix.otherItem, let pts = mix.otherPts {
                extra += ",\"otherItem\":\(other),\"otherPts\":\(pts.seconds.formatted(decimals: 6)),\"otherWeight\":\(mix.otherWeight.formatted(decimals: 6))"
            }
            extra += "}"
        }
        frame(vsync: vsync, t: t, output: output, item: item, uri: uri, pts: pts, wall: wall, late: late, extraFields: extra)
    }
}
