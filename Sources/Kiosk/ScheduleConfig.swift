import Foundation
import Playback

extension KioskConfig {
    /// This config with the playlist of schedule entry `entry` (nil: the top-level playlist, as is).
    public func playing(entry: Int?) -> KioskConfig {
        guard let entry, let schedule, schedule.entries.indices.contains(entry) else { return self }
        var chosen = self
        chosen.playlist = schedule.entries[entry].playlist
        chosen.playlistOrigin = schedule.entries[entry].playlistOrigin
        return chosen
    }
}

extension ConfigReader {
    /// `"HH:MM"` or `"HH:MM:SS"` as seconds into the day; `24:00` only where `allowEndOfDay`.
    static func timeOfDay(_ text: String, allowEndOfDay: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
              parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else { return nil }
        let numbers = parts.compactMap { Int($0) }
        guard numbers.count == parts.count else { return nil }
        let h = numbers[0], m = numbers[1], s = numbers.count == 3 ? numbers[2] : 0
        if h == 24 && m == 0 && s == 0 { return allowEndOfDay ? 86_400 : nil }
        guard h < 24, m < 60, s < 60 else { return nil }
        return h * 3600 + m * 60 + s
    }

    /// `timezone`: an IANA zone name.
    mutating func readTimeZone(_ value: JSONValue) -> TimeZone? {
        guard let name = string(value, at: "timezone") else { return nil }
        // TimeZone also takes abbreviations and offsets ("EST", "GMT+1"); only names of the tz database are zones here.
        guard name.contains("/") || name == "UTC" || name == "GMT", let zone = TimeZone(identifier: name) else {
            problem("timezone", "\"\(Self.clipped(name))\" is not an IANA time zone name such as \"Europe/Berlin\" or \"UTC\"")
            return nil
        }
        return zone
    }

    /// `schedule`: a list of entries.
    mutating func readSchedule(_ value: JSONValue, baseDirectory: String) -> [Schedule.Entry]? {
        guard case .array(let list) = value else {
            problem("schedule", "expected an array of entries, found \(value.typeName)")
            return nil
        }
        if list.isEmpty { problem("schedule", "empty: give at least one entry, or leave the key out") }
        var entries: [Schedule.Entry] = []
        for (i, element) in list.enumerated() {
            if let entry = readScheduleEntry(element, at: "schedule[\(i)]", baseDirectory: baseDirectory) { entries.append(entry) }
        }
        return entries.count == list.count ? entries : nil
    }

    mutating func readScheduleEntry(_ value: JSONValue, at path: String, baseDirectory: String) -> Schedule.Entry? {
        guard let fields = members(value, at: path, allowed: ["name", "playlist", "days", "from", "to", "dates", "switch", "display"])
        else { return nil }
        let before = problems.count
        var entry = Schedule.Entry()
        var hasPlaylist = false
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "name":
                if let s = string(v, at: field) {
                    if s.isEmpty { problem(field, "empty: give the entry a name, or leave the key out") }
                    entry.name = s
                }
            case "playlist":
                hasPlaylist = true
                if let (items, origin) = readPlaylist(v, at: field, emptyHint: "give at least one item", baseDirectory: baseDirectory) {
                    entry.playlist = items
                    entry.playlistOrigin = origin
                }
            case "days", "from", "to", "dates":
                readTimes(key, v, at: field, into: &entry)
            case "switch":
                if let mode: Schedule.SwitchMode = choice(v, at: field) { entry.switchMode = mode }
            case "display":
                if let power: Schedule.DisplayPower = choice(v, at: field) { entry.display = power }
            default: break
            }
        }
        if !hasPlaylist && entry.display == .on {
            problem("\(path).playlist", "missing: the playlist this entry plays (only an entry with \"display\": \"off\" may leave it out)")
        }
        return problems.count == before ? entry : nil
    }

    /// When an entry (or an overlay's `schedule`) applies: `days`, `from`, `to` and `dates` at
    /// `field`, into `entry`.
    mutating func readTimes(_ key: String, _ v: JSONValue, at field: String, into entry: inout Schedule.Entry) {
        switch key {
        case "days":
            guard case .array(let days) = v else {
                problem(field, "expected an array of days (\"mon\" ... \"sun\"), found \(v.typeName)")
                return
            }
            if days.isEmpty { problem(field, "empty: list the days it plays on, or leave the key out for every day") }
            var set = Set<Int>()
            for (j, day) in days.enumerated() {
                guard let name = string(day, at: "\(field)[\(j)]") else { continue }
                guard let index = Schedule.dayNames.firstIndex(of: name) else {
                    problem("\(field)[\(j)]", "\"\(Self.clipped(name))\" is not a day: write one of \(Schedule.dayNames.map { "\"\($0)\"" }.joined(separator: ", "))")
                    continue
                }
                set.insert(index)
            }
            entry.days = set
        case "from", "to":
            guard let s = string(v, at: field) else { return }
            guard let seconds = Self.timeOfDay(s, allowEndOfDay: key == "to") else {
                problem(field, "\"\(Self.clipped(s))\" is not a local time: write HH:MM or HH:MM:SS (00:00 to 23:59:59\(key == "to" ? ", or 24:00" : ""))")
                return
            }
            if key == "from" { entry.from = seconds } else { entry.to = seconds }
        case "dates":
            guard case .array(let dates) = v else {
                problem(field, "expected an array of dates (\"YYYY-MM-DD\" or \"YYYY-MM-DD..YYYY-MM-DD\"), found \(v.typeName)")
                return
            }
            if dates.isEmpty { problem(field, "empty: list the dates it plays on, or leave the key out") }
            var ranges: [ClosedRange<Schedule.LocalDate>] = []
            for (j, date) in dates.enumerated() {
                guard let s = string(date, at: "\(field)[\(j)]") else { continue }
                let ends = s.components(separatedBy: "..")
                guard ends.count <= 2, let first = Schedule.LocalDate(parsing: ends[0]),
                      let last = ends.count == 2 ? Schedule.LocalDate(parsing: ends[1]) : first else {
                    problem("\(field)[\(j)]", "\"\(Self.clipped(s))\" is not a date: write YYYY-MM-DD (a day that exists, 1970 to 9999) or YYYY-MM-DD..YYYY-MM-DD")
                    continue
                }
                guard first <= last else {
                    problem("\(field)[\(j)]", "\"\(Self.clipped(s))\" ends before it starts")
                    continue
                }
                ranges.append(first...last)
            }
            entry.dates = ranges
        default: break
        }
    }
}
