import Foundation

/// A moment of the system's real-time clock (the one chrony or linuxptp keeps in step across a
/// wall's nodes): nanoseconds since 1970-01-01T00:00:00Z, leap seconds not counted.
public struct WallTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    /// The moment `unixSeconds` after the Unix epoch; past what nanoseconds hold (years 1677 to 2262)
    /// it is the earliest or latest one, and NaN is the epoch: a clock set to nonsense never traps.
    public init(unixSeconds: Double) { nanoseconds = Int64(saturating: (unixSeconds * 1e9).rounded()) }

    /// Unix seconds (the `wall` field of trace lines).
    public var unixSeconds: Double { Double(nanoseconds) / 1e9 }

    /// The system clock now (CLOCK_REALTIME, through Foundation).
    public static func now() -> WallTime { WallTime(unixSeconds: Date().timeIntervalSince1970) }

    public static func < (a: WallTime, b: WallTime) -> Bool { a.nanoseconds < b.nanoseconds }
    /// The moment `nanoseconds` later (earlier when negative); it stops at the earliest and latest
    /// moments nanoseconds hold rather than trapping.
    public static func + (a: WallTime, nanoseconds: Int64) -> WallTime {
        let (sum, overflow) = a.nanoseconds.addingReportingOverflow(nanoseconds)
        return WallTime(nanoseconds: overflow ? (nanoseconds > 0 ? .max : .min) : sum)
    }
    /// `a - b` in nanoseconds, stopping at Int64's limits rather than trapping.
    public static func - (a: WallTime, b: WallTime) -> Int64 {
        let (difference, overflow) = a.nanoseconds.subtractingReportingOverflow(b.nanoseconds)
        return overflow ? (b.nanoseconds < 0 ? .max : .min) : difference
    }

    /// Parses an ISO-8601 date and time with its zone: `2026-01-01T00:00:00Z`,
    /// `2026-01-01T01:30:00.25+01:00` (a space may stand for the `T`). nil for anything else,
    /// impossible dates (February 30th) included, and for moments nanoseconds since 1970 cannot
    /// hold (before 1677-09-21 or after 2262-04-11); digits past the nanosecond are dropped.
    public init?(iso8601 text: String) {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in i..<(i + n) {
                guard b[k] >= 0x30, b[k] <= 0x39 else { return nil }
                v = v * 10 + Int(b[k] - 0x30)
            }
            i += n
            return v
        }
        func literal(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), literal(0x2D), let month = digits(2), literal(0x2D), let day = digits(2),
              i < b.count, b[i] == 0x54 || b[i] == 0x20 || b[i] == 0x74 else { return nil }
        i += 1
        guard let hour = digits(2), literal(0x3A), let minute = digits(2), literal(0x3A), let second = digits(2) else { return nil }
        var fraction: Int64 = 0
        if literal(0x2E) || literal(0x2C) {
            var scale: Int64 = 100_000_000, count = 0  // scale reaches 0 after 9 digits
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                fraction += Int64(b[i] - 0x30) * scale
                scale /= 10
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
        }
        var offsetSeconds = 0
        if literal(0x5A) || literal(0x7A) {
            offsetSeconds = 0
        } else if i < b.count, b[i] == 0x2B || b[i] == 0x2D {
            let sign = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = literal(0x3A)
            guard let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else {
            return nil  // no zone: the same text would mean different moments on different nodes
        }
        guard i == b.count, (1...12).contains(month), day >= 1, day <= CivilCalendar.days(inMonth: month, year: year),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        // Four-digit years keep the seconds far inside Int64; the nanoseconds may not fit.
        let days = CivilCalendar.dayNumber(year: year, month: month, day: day)
        let seconds = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        guard let total = Int64(exactly: Int128(seconds) * 1_000_000_000 + Int128(fraction)) else { return nil }
        nanoseconds = total
    }

    public var description: String {
        // Whole seconds rounded down and the nanoseconds past them, in integers (exact at Int64's ends).
        var seconds = nanoseconds / 1_000_000_000
        var nanos = nanoseconds % 1_000_000_000
        if nanos < 0 {
            seconds -= 1
            nanos += 1_000_000_000
        }
        let (y, m, d) = CivilCalendar.date(dayNumber: Int(seconds / 86400 - (seconds % 86400 < 0 ? 1 : 0)))
        let s = ((seconds % 86400) + 86400) % 86400
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var text = "\(y)-\(two(Int64(m)))-\(two(Int64(d)))T\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60))"
        if nanos != 0 {
            let digits = String(nanos + 1_000_000_000).dropFirst()
            text += "." + digits.replacingOccurrences(of: "0+$", with: "", options: .regularExpression)
        }
        return text + "Z"
    }
}


/// Why a wall's timeline cannot be made.
public struct WallSyncError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let description: String
}

/// Where a looping playlist is at some moment: the loop pass, the item, and the time in the item
/// (from the start of what plays of it).
public struct WallPosition: Sendable, Hashable, CustomStringConvertible {
    /// Loop passes completed since the epoch (negative before it).
    public var pass: Int64
    public var index: Int
    public var itemTime: MediaTime
    public init(pass: Int64, index: Int, itemTime: MediaTime) {
        self.pass = pass
        self.index = index
        self.itemTime = itemTime
    }
    public var description: String { "pass \(pass) item \(index) at \(itemTime.seconds.formatted(decimals: 6)) s" }
}

/// A playlist that loops forever laid on the synchronized clock: the loop's first pass starts at
/// `epoch`, and the position at wall time T is (T - epoch) modulo the loop's length. Every output of
/// every node that computes it from a clock in step shows the same thing at the same time: there is
/// no leader, and a node that starts late, restarts or stalls simply computes where the loop is.
///
/// Exact: the items' durations are added in a common timescale (the least common multiple of
/// theirs and of 10^6, else nanoseconds), so nothing drifts however long the wall runs.
public struct WallTimeline: Sendable {
    public let epoch: WallTime
    /// The length of each item (what plays of it).
    public let durations: [MediaTime]
    /// Ticks per second of the arithmetic.
    public let timescale: Int32
    /// Where each item starts in the loop, in ticks; the last entry is the loop's length.
    private let starts: [Int128]

    public init(epoch: WallTime, durations: [MediaTime]) throws(WallSyncError) {
        guard !durations.isEmpty else { throw WallSyncError(description: "the wall's playlist has no items") }
        for (i, d) in durations.enumerated() where !d.isNumeric || d <= .zero {
            throw WallSyncError(description: "item \(i) has no positive duration (\(d)): clock sync needs every item's length")
        }
        self.epoch = epoch
        self.durations = durations
        // At least microseconds, so that positions resolve frames whatever the items' timescales.
        var scale: Int64 = 1_000_000
        for d in durations {
            let ts = Int64(d.timescale)
            scale = scale / gcd(scale, ts) * ts
            if scale > Int64(Int32.max) { scale = 1_000_000_000; break }
        }
        timescale = Int32(scale)
        var starts: [Int128] = [0]
        for d in durations {
            // Exact when the timescale is a multiple of the item's; else rounded to the nearest tick.
            let ticks = (Int128(d.value) * Int128(scale) * 2 + Int128(d.timescale)) / (2 * Int128(d.timescale))
            starts.append(starts.last! + max(1, ticks))
        }
        // Positions and lengths are Int64 ticks: a loop longer than that (292,000 years at the
        // least timescale) is a container's nonsense, refused rather than trapped on.
        guard starts.last! <= Int128(Int64.max) else {
            throw WallSyncError(description: "the loop's items add up to more than the clock can count (\(durations.map(\.description).joined(separator: " + ")))")
        }
        self.starts = starts
    }

    /// The loop's length.
    public var length: MediaTime { MediaTime(value: Int64(starts.last!), timescale: timescale) }
    /// Where item `index` starts in the loop.
    public func start(ofItem index: Int) -> MediaTime { MediaTime(value: Int64(starts[index]), timescale: timescale) }

    /// The position at wall time `time`.
    public func position(at time: WallTime) -> WallPosition {
        // Ticks since the epoch, rounded down (a tick is never shown before its time).
        let ns = Int128(time - epoch)
        let numerator = ns * Int128(timescale)
        var ticks = numerator / 1_000_000_000
        if numerator % 1_000_000_000 != 0 && numerator < 0 { ticks -= 1 }
        let length = starts.last!
        var pass = ticks / length
        var inLoop = ticks % length
        if inLoop < 0 { inLoop += length; pass -= 1 }
        // The item: the last whose start is at or before the position.
        var lo = 0, hi = durations.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= inLoop { lo = mid } else { hi = mid - 1 }
        }
        return WallPosition(pass: Int64(clamping: pass), index: lo, itemTime: MediaTime(value: Int64(inLoop - starts[lo]), timescale: timescale))
    }

    /// The wall time at which `itemTime` of item `index` plays in loop pass `pass`.
    public func wallTime(pass: Int64, index: Int, itemTime: MediaTime) -> WallTime {
        let ticks = Int128(pass) * starts.last! + starts[index]
        // Exact in Int128 (no Double): a non-numeric item time counts as 0.
        let inItem = itemTime.isNumeric ? Int128(itemTime.value) * 1_000_000_000 / Int128(itemTime.timescale) : 0
        let ns = ticks * 1_000_000_000 / Int128(timescale) + inItem
        return epoch + Int64(clamping: ns)
    }
}


/// What a vsync shows on a clock-synchronized output.
public struct WallPick: Sendable, Equatable {
    /// The loop position in the middle of the vsync's interval.
    public var position: WallPosition
    /// The frame's pts (in the item) when the item's frame duration is known, else the position's
    /// time: the frame to show is the last one whose pts is at or before this.
    public var pts: MediaTime
    /// Frames moved since the previous vsync: 0 = the same frame again, 1 = the next, 2 = one
    /// frame skipped; nil for the first vsync and after a resync.
    public var advance: Int64?
    /// The previous vsync was not one refresh interval ago (a stall, a missed vsync, a clock
    /// step, the first frame): the picture jumps to where the loop is, on purpose.
    public var resync: Bool
}

/// Picks, for each vsync of one output, the frame the wall shows then: the one at the loop
/// position of the middle of the vsync's interval, so outputs whose vsyncs are out of phase are
/// never more than one vsync apart and a boundary between frames never falls on a vsync that
/// jitters. A display clock a little fast or slow against the wall clock is thus corrected by
/// showing one frame twice, or skipping one, now and then, never by a jump.
///
/// Give it each vsync's wall time (the vsync's monotonic time plus the real-time minus monotonic
/// offset of the moment), in order. Pure: tested against simulated clocks.
public struct WallFrameScheduler: Sendable {
    public let timeline: WallTimeline
    public let refresh: RefreshRate
    /// Each item's frame duration (nil: unknown, the pick gives the position's time).
    public let frameDurations: [MediaTime?]
    /// Vsyncs picked, frames shown twice and frames skipped (outside resyncs), resyncs.
    public private(set) var picks = 0
    public private(set) var repeated = 0
    public private(set) var skipped = 0
    public private(set) var resyncs = 0
    private var last: (time: WallTime, frame: Int64)?

    public init(timeline: WallTimeline, refresh: RefreshRate, frameDurations: [MediaTime?]? = nil) {
        self.timeline = timeline
        self.refresh = refresh
        self.frameDurations = frameDurations ?? Array(repeating: nil, count: timeline.durations.count)
        precondition(self.frameDurations.count == timeline.durations.count, "one frame duration per item")
    }

    /// One refresh interval in nanoseconds (at most a quarter of Int64's range, so that the cadence
    /// checks' `interval * 3` cannot overflow whatever rate a display reports).
    public var intervalNanoseconds: Int64 {
        Int64(min(1_000_000_000 * Int128(refresh.denominator) / Int128(refresh.numerator), Int128(Int64.max / 4)))
    }

    /// The frame for the vsync at wall time `vsync`.
    public mutating func pick(vsyncAt vsync: WallTime) -> WallPick {
        let interval = intervalNanoseconds
        let (position, pts, frameNumber) = frame(at: vsync + interval / 2)
        picks += 1
        var advance: Int64?
        var resync = true
        if let last {
            let gap = vsync - last.time
            // A vsync one interval (give or take half) after the previous one is the normal cadence.
            if gap > interval / 2 && gap < interval * 3 / 2 {
                resync = false
                // Frame numbers come from container durations: wrapping differences, never a trap.
                advance = frameNumber &- last.frame
                // What a display exactly on the wall clock would show now: fewer frames moved means
                // this display runs fast (a frame shown once more), more means slow (one skipped).
                let expected = frame(at: last.time + interval + interval / 2).number
                if frameNumber < expected { repeated &+= Int(clamping: expected &- frameNumber) }
                if frameNumber > expected { skipped &+= Int(clamping: frameNumber &- expected) }
            }
        }
        if resync && last != nil { resyncs += 1 }
        last = (vsync, frameNumber)
        return WallPick(position: position, pts: pts, advance: advance, resync: resync)
    }

    /// The position at `time`, the pts of the frame showing then, and a frame counter that grows by
    /// one per frame across items and loop passes.
    private func frame(at time: WallTime) -> (position: WallPosition, pts: MediaTime, number: Int64) {
        let position = timeline.position(at: time)
        let t = position.itemTime
        let base = globalFrameBase(position)
        if let frame = frameDurations[position.index], frame.isNumeric, frame > .zero {
            // Frame k of the item covers [k * frame, (k + 1) * frame).
            let k = Int64(clamping: (Int128(t.value) * Int128(frame.timescale)) / (Int128(t.timescale) * Int128(frame.value)))
            return (position, frame * k, base &+ k)
        }
        // Unknown frame rate: count vsyncs of content time instead.
        let k = Int64(clamping: (Int128(t.value) * Int128(refresh.numerator)) / (Int128(t.timescale) * Int128(refresh.denominator)))
        return (position, t, base &+ k)
    }

    /// Frames (whole ones, at each item's own rate) in the loop before `position`'s item, plus
    /// whole passes: a frame counter that is continuous across item and loop boundaries.
    private func globalFrameBase(_ position: WallPosition) -> Int64 {
        var frames: Int64 = 0
        var perPass: Int64 = 0
        for (i, d) in timeline.durations.enumerated() {
            let n: Int64
            if let f = frameDurations[i], f.isNumeric, f > .zero {
                n = Int64(saturating: (d.seconds / f.seconds).rounded(.up))
            } else {
                n = Int64(saturating: (d.seconds * refresh.hertz).rounded(.up))
            }
            if i < position.index { frames &+= n }
            perPass &+= n
        }
        return position.pass &* perPass &+ frames
    }
}

/// One frame change on an output, as its trace tells it: the wall time it appeared and what it is.
public struct WallFrameEvent: Sendable, Equatable {
    public var wall: WallTime
    public var item: Int
    public var pts: MediaTime
    public var pass: Int64
    public init(wall: WallTime, item: Int, pts: MediaTime, pass: Int64 = 0) {
        self.wall = wall
        self.item = item
        self.pts = pts
        self.pass = pass
    }
}

/// The sync error between two outputs: for every frame both showed (same pass, item and pts), how
/// far apart in wall time it appeared; the largest in nanoseconds, and how many frames were
/// compared. Frames only one output showed (before the other started, or skipped) are left out.
public func wallSyncError(_ a: [WallFrameEvent], _ b: [WallFrameEvent]) -> (maxNanoseconds: Int64, compared: Int) {
    struct Key: Hashable { var pass: Int64; var item: Int; var pts: MediaTime }
    var onsets: [Key: WallTime] = [:]
    for e in a where onsets[Key(pass: e.pass, item: e.item, pts: e.pts)] == nil {
        onsets[Key(pass: e.pass, item: e.item, pts: e.pts)] = e.wall
    }
    var worst: Int64 = 0, compared = 0
    var seen = Set<Key>()
    for e in b {
        let key = Key(pass: e.pass, item: e.item, pts: e.pts)
        guard seen.insert(key).inserted, let other = onsets[key] else { continue }
        compared += 1
        worst = max(worst, abs(e.wall - other))
    }
    return (worst, compared)
}
