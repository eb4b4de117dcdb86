import Foundation
import Playback

/// `schedule`: dayparting. Entries, each a playlist with the local days and times (and optionally
/// dates) it plays; the first entry that matches a moment is the one playing, else the top-level
/// playlist. Local times are in `timeZone` (the config's `timezone`, else the system's), through
/// Foundation's `TimeZone` and `Calendar`, so a daylight-saving change moves the moments an entry
/// begins and ends as the wall clocks of the place move.
///
/// An entry starts on each of its `days` (and `dates`, when given) at `from` and ends at `to`; a
/// `to` at or before `from` is on the next day (an entry across midnight belongs to the day it
/// starts on). A local time that does not exist (the hour skipped in spring) is reached at the
/// change itself; one that happens twice (the hour repeated in autumn) counts both times.
public struct Schedule: Sendable, Equatable {
    public enum SwitchMode: String, Sendable, CaseIterable {
        /// At the first item boundary at or after the moment (the item playing then finishes).
        case item
        /// On the vsync of the moment itself: the item playing then is cut there.
        case exact
    }

    /// `display` of an entry: `off` turns the output dark while the entry lasts.
    public enum DisplayPower: String, Sendable, CaseIterable {
        case on, off
    }

    /// A day in the local calendar.
    public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let year: Int
        public let month: Int
        public let day: Int

        /// "YYYY-MM-DD" for a date that exists (years 1970 to 9999); nil otherwise.
        public init?(parsing text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                  parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
                  let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else { return nil }
            self.init(year: y, month: m, day: d)
        }

        public init?(year: Int, month: Int, day: Int) {
            guard (1970...9999).contains(year), (1...12).contains(month), day >= 1,
                  day <= CivilCalendar.days(inMonth: month, year: year) else { return nil }
            self.year = year
            self.month = month
            self.day = day
        }

        /// The date `dayNumber` days after 1970-01-01.
        init(dayNumber: Int) {
            (year, month, day) = CivilCalendar.date(dayNumber: dayNumber)
        }

        /// Days since 1970-01-01.
        var dayNumber: Int { CivilCalendar.dayNumber(year: year, month: month, day: day) }

        /// 0 for Monday ... 6 for Sunday (1970-01-01 was a Thursday).
        var weekday: Int { ((dayNumber % 7) + 7 + 3) % 7 }

        public static func < (a: LocalDate, b: LocalDate) -> Bool { a.dayNumber < b.dayNumber }
        public var description: String {
            "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
        }
    }

    /// The names of the days, Monday first (`days`).
    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    public struct Entry: Sendable, Equatable {
        /// For logs, the trace and the `schedule` property; nil: "entry N".
        public var name: String?
        public var playlist: [KioskConfig.Item] = []
        public var playlistOrigin = KioskConfig.PlaylistOrigin.list
        /// The days it starts on, 0 (Monday) to 6 (Sunday).
        public var days: Set<Int> = Set(0...6)
        /// Seconds into the local day it starts (0 ..< 86400) and ends (1 ... 86400); `to <= from`:
        /// it ends on the next day.
        public var from = 0
        public var to = 86_400
        /// The only dates (inclusive ranges) it starts on; nil: any date.
        public var dates: [ClosedRange<LocalDate>]?
        /// How a change into this entry happens (and out of it, into the top-level playlist).
        public var switchMode = SwitchMode.item
        public var display = DisplayPower.on
        public init() {}

        func starts(on date: LocalDate) -> Bool {
            days.contains(date.weekday) && (dates.map { ranges in ranges.contains { $0.contains(date) } } ?? true)
        }

        /// Whether it plays at `second` into the local day `date`.
        func matches(date: LocalDate, second: Int) -> Bool {
            if from < to { return second >= from && second < to && starts(on: date) }
            // Across midnight (or a whole day from `from` when `to == from`).
            return (second >= from && starts(on: date))
                || (second < to && starts(on: LocalDate(dayNumber: date.dayNumber - 1)))
        }
    }

    public var entries: [Entry]
    public var timeZone: TimeZone

    public init(entries: [Entry], timeZone: TimeZone = .current) {
        self.entries = entries
        self.timeZone = timeZone
    }

    /// The local date and second of the day at `time` (whole seconds: a moment inside a second is
    /// that second).
    func local(_ time: WallTime) -> (date: LocalDate, second: Int)? {
        let seconds = time.nanoseconds >= 0 ? time.nanoseconds / 1_000_000_000 : (time.nanoseconds + 1) / 1_000_000_000 - 1
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second],
                                            from: Date(timeIntervalSince1970: Double(seconds)))
        guard let y = parts.year, let m = parts.month, let d = parts.day, let date = LocalDate(year: y, month: m, day: d),
              let h = parts.hour, let mi = parts.minute, let s = parts.second else { return nil }
        return (date, h * 3600 + mi * 60 + s)
    }

    /// The entry playing at `time` (its index), nil: the top-level playlist.
    public func entry(at time: WallTime) -> Int? {
        guard let (date, second) = local(time) else { return nil }
        return entries.firstIndex { $0.matches(date: date, second: second) }
    }

    /// How a change from `old` to `new` (entry indices; nil: the top-level playlist) happens: the
    /// new entry's `switch`, or, back to the top-level playlist, the ending one's.
    public func switchMode(from old: Int?, to new: Int?) -> SwitchMode {
        if let new, entries.indices.contains(new) { return entries[new].switchMode }
        if let old, entries.indices.contains(old) { return entries[old].switchMode }
        return .item
    }

    /// The first moment after `time`, within `horizonDays`, at which a different entry plays, and
    /// that entry (nil: the top-level playlist); nil when nothing changes within the horizon.
    ///
    /// The candidates are each entry's `from` and `to` on each local day around, at every UTC
    /// offset the zone has then (a local time that happens twice gives both moments; one that
    /// does not exist gives none), and the zone's offset changes themselves (which is where an
    /// entry starting in a skipped hour begins). Each is exact to the second.
    public func nextChange(after time: WallTime, horizonDays: Int = 8) -> (time: WallTime, entry: Int?)? {
        guard !entries.isEmpty, let (today, _) = local(time) else { return nil }
        let current = entry(at: time)
        let start = Date(timeIntervalSince1970: time.unixSeconds - 86_400)
        let end = Date(timeIntervalSince1970: time.unixSeconds + Double(horizonDays + 1) * 86_400)
        // The offsets the zone uses around the window, and the moments they change.
        var offsets: Set<Int> = [timeZone.secondsFromGMT(for: start), timeZone.secondsFromGMT(for: end)]
        var candidates: [Int64] = []
        var cursor = start
        for _ in 0..<64 {
            guard let change = timeZone.nextDaylightSavingTimeTransition(after: cursor), change < end else { break }
            offsets.insert(timeZone.secondsFromGMT(for: change))
            offsets.insert(timeZone.secondsFromGMT(for: change.addingTimeInterval(-1)))
            candidates.append(Int64(change.timeIntervalSince1970.rounded()))
            cursor = change
        }
        let boundaries = Set(entries.flatMap { [$0.from, $0.to] })
        for day in (today.dayNumber - 1)...(today.dayNumber + horizonDays) {
            for second in boundaries {
                let localSeconds = Int64(day) * 86_400 + Int64(second)
                for offset in offsets {
                    let unix = localSeconds - Int64(offset)
                    if timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(unix))) == offset {
                        candidates.append(unix)
                    }
                }
            }
        }
        let now = time.nanoseconds
        for unix in Set(candidates).sorted() {
            let (moment, overflow) = unix.multipliedReportingOverflow(by: 1_000_000_000)
            guard !overflow, moment > now else { continue }
            let at = WallTime(nanoseconds: moment)
            let playing = entry(at: at)
            if playing != current { return (at, playing) }
        }
        return nil
    }

    /// `time` as a local date and time with its UTC offset, e.g. `2026-03-29T03:00:00+02:00`.
    public func localDescription(_ time: WallTime) -> String {
        guard let (date, second) = local(time) else { return "\(time.unixSeconds)" }
        let seconds = time.nanoseconds >= 0 ? time.nanoseconds / 1_000_000_000 : (time.nanoseconds + 1) / 1_000_000_000 - 1
        let offset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds)))
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let sign = offset < 0 ? "-" : "+"
        return "\(date)T\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))\(sign)\(two(abs(offset) / 3600)):\(two(abs(offset) / 60 % 60))"
    }

    /// The entry's name as logs and properties show it.
    public func name(of entry: Int?) -> String {
        guard let entry else { return "playlist" }
        guard entries.indices.contains(entry) else { return "entry \(entry)" }
        return entries[entry].name ?? "schedule[\(entry)]"
    }
}
