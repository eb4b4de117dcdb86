import Foundation
@testable import Kiosk
import Playback
import Testing
import TestSupport

func utc(_ text: String) -> WallTime { WallTime(iso8601: text)! }

/// A week in Berlin with the spring change (Sunday 2026-03-29, 02:00 CET -> 03:00 CEST):
/// 0 breakfast, weekdays 06:00-10:00 (exact); 1 night, Friday and Saturday 22:00-02:00, across
/// midnight (item); 2 early, Sunday 01:30-03:30, which the night entry covers until its end, and
/// whose 02:00 does not exist that day (exact); 3 a date, 2026-03-27 12:00-13:00 (exact).
let weekConfig = """
    {"playlist": [{"uri": "loop.mp4"}], "timezone": "Europe/Berlin",
     "schedule": [
       {"name": "breakfast", "days": ["mon", "tue", "wed", "thu", "fri"], "from": "06:00", "to": "10:00",
        "switch": "exact", "playlist": [{"uri": "breakfast.mp4"}]},
       {"name": "night", "days": ["fri", "sat"], "from": "22:00", "to": "02:00", "playlist": {"directory": "schedule-night"}},
       {"name": "early", "days": ["sun"], "from": "01:30", "to": "03:30", "switch": "exact", "playlist": [{"uri": "early.mp4"}]},
       {"name": "sale", "dates": ["2026-03-27"], "from": "12:00", "to": "13:00", "switch": "exact",
        "playlist": [{"uri": "sale.mp4"}]}
     ]}
    """

/// Every change of the week, in UTC (CET is UTC+1 until 2026-03-29 01:00 UTC, then CEST UTC+2).
let weekChanges: [(String, Int?)] = [
    ("2026-03-23T05:00:00Z", 0), ("2026-03-23T09:00:00Z", nil),
    ("2026-03-24T05:00:00Z", 0), ("2026-03-24T09:00:00Z", nil),
    ("2026-03-25T05:00:00Z", 0), ("2026-03-25T09:00:00Z", nil),
    ("2026-03-26T05:00:00Z", 0), ("2026-03-26T09:00:00Z", nil),
    ("2026-03-27T05:00:00Z", 0), ("2026-03-27T09:00:00Z", nil),
    ("2026-03-27T11:00:00Z", 3), ("2026-03-27T12:00:00Z", nil),
    ("2026-03-27T21:00:00Z", 1), ("2026-03-28T01:00:00Z", nil),  // Friday night to Saturday 02:00
    ("2026-03-28T21:00:00Z", 1),                                  // Saturday night ...
    ("2026-03-29T01:00:00Z", 2),                                  // ... ends at the change: 02:00 CET is 03:00 CEST
    ("2026-03-29T01:30:00Z", nil),                                // 03:30 CEST
    ("2026-03-30T04:00:00Z", 0), ("2026-03-30T08:00:00Z", nil),   // Monday in summer time
]

func weekSchedule() throws -> KioskConfig {
    let folder = TestMedia.folder + "/schedule-night"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: folder + "/n.mp4", contents: Data())
    return try KioskConfig.parse(weekConfig, baseDirectory: TestMedia.folder)
}

@Suite struct ScheduleConfigTests {
    @Test func entriesAreReadWithTheirZone() throws {
        let config = try weekSchedule()
        let schedule = try #require(config.schedule)
        #expect(schedule.timeZone.identifier == "Europe/Berlin")
        #expect(schedule.entries.map(\.name) == ["breakfast", "night", "early", "sale"])
        #expect(schedule.entries[0].days == [0, 1, 2, 3, 4] && schedule.entries[0].from == 6 * 3600 && schedule.entries[0].to == 10 * 3600)
        #expect(schedule.entries[0].switchMode == .exact && schedule.entries[1].switchMode == .item)
        #expect(schedule.entries[1].playlist.map(\.uri) == ["n.mp4"])
        #expect(schedule.entries[3].days == Set(0...6) && schedule.entries[3].dates?.count == 1)
        #expect(config.playing(entry: 0).playlist.map(\.path) == [TestMedia.folder + "/breakfast.mp4"])
        #expect(config.playing(entry: nil).playlist.map(\.uri) == ["loop.mp4"])
    }

    @Test func badEntriesAreNamedByTheirPath() {
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "timezone": "Mars/Olympus"}"#)
            == [#"timezone: "Mars/Olympus" is not an IANA time zone name such as "Europe/Berlin" or "UTC""#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["monday"], "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].days[0]: "monday" is not a day: write one of "mon", "tue", "wed", "thu", "fri", "sat", "sun""#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"from": "25:00", "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].from: "25:00" is not a local time: write HH:MM or HH:MM:SS (00:00 to 23:59:59)"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"from": "24:00", "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].from: "24:00" is not a local time: write HH:MM or HH:MM:SS (00:00 to 23:59:59)"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"dates": ["2026-02-30"], "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].dates[0]: "2026-02-30" is not a date: write YYYY-MM-DD (a day that exists, 1970 to 9999) or YYYY-MM-DD..YYYY-MM-DD"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"dates": ["2026-05-02..2026-05-01"], "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].dates[0]: "2026-05-02..2026-05-01" ends before it starts"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"days": ["mon"]}]}"#)
            == [#"schedule[0].playlist: missing: the playlist this entry plays (only an entry with "display": "off" may leave it out)"#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"switch": "soon", "playlist": [{"uri": "b.mp4"}]}]}"#)
            == [#"schedule[0].switch: "soon" is not one of "item", "exact""#])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"playlist": [{"uri": "b.mp4", "start": -2}]}]}"#)
            == ["schedule[0].playlist[0].start: -2.0 is negative: times are seconds from the start of the item"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": []}"#)
            == ["schedule: empty: give at least one entry, or leave the key out"])
        #expect(problems(#"{"playlist": [{"uri": "a.mp4"}], "schedule": [{"every": "day", "playlist": [{"uri": "b.mp4"}]}]}"#)
            == ["schedule[0].every: unknown key (allowed here: name, playlist, days, from, to, dates, switch, display)"])
    }

}

@Suite struct ScheduleTimeTests {
    @Test func aWeekOfChangesFollowsTheLocalClockAcrossMidnightAndTheSpringChange() throws {
        let schedule = try #require(try weekSchedule().schedule)
        var time = utc("2026-03-22T23:00:00Z")  // Monday 00:00 CET
        #expect(schedule.entry(at: time) == nil)
        var seen: [(String, Int?)] = []
        while let change = schedule.nextChange(after: time), change.time < utc("2026-03-31T00:00:00Z") {
            seen.append((schedule.localDescription(change.time), change.entry))
            // The entry changes exactly there, and not a second before.
            #expect(schedule.entry(at: change.time) == change.entry)
            #expect(schedule.entry(at: change.time + -1_000_000_000) == schedule.entry(at: time))
            time = change.time
        }
        let expected = weekChanges.map { (schedule.localDescription(utc($0.0)), $0.1) }
        #expect(seen.map(\.0) == expected.map(\.0))
        #expect(seen.map(\.1) == expected.map(\.1))
        #expect(seen[15].0 == "2026-03-29T03:00:00+02:00")  // the night's 02:00 never comes: it ends at the change
    }

    @Test func aLocalTimeThatHappensTwiceInAutumnCountsBothTimes() throws {
        var entry = Schedule.Entry()
        entry.from = 2 * 3600 + 30 * 60
        entry.to = 2 * 3600 + 45 * 60
        let schedule = Schedule(entries: [entry], timeZone: TimeZone(identifier: "Europe/Berlin")!)
        // 2026-10-25: 03:00 CEST goes back to 02:00 CET at 01:00 UTC.
        var time = utc("2026-10-24T22:00:00Z")
        var changes: [String] = []
        for _ in 0..<4 {
            let change = try #require(schedule.nextChange(after: time))
            changes.append("\(change.time.unixSeconds == utc("2026-10-25T00:30:00Z").unixSeconds ? "first" : "") \(schedule.localDescription(change.time)) \(change.entry.map(String.init) ?? "-")")
            time = change.time
        }
        #expect(changes == ["first 2026-10-25T02:30:00+02:00 0", " 2026-10-25T02:45:00+02:00 -",
                            " 2026-10-25T02:30:00+01:00 0", " 2026-10-25T02:45:00+01:00 -"])
    }

    @Test func anEntryOfAWholeDayAndOneFromMidnight() throws {
        var allDay = Schedule.Entry()
        allDay.days = [6]
        allDay.from = 0
        allDay.to = 0  // to == from: a whole day from `from`
        let schedule = Schedule(entries: [allDay], timeZone: TimeZone(identifier: "UTC")!)
        let change = try #require(schedule.nextChange(after: utc("2026-03-27T10:00:00Z")))
        #expect(change.time == utc("2026-03-29T00:00:00Z") && change.entry == 0)
        let end = try #require(schedule.nextChange(after: change.time))
        #expect(end.time == utc("2026-03-30T00:00:00Z") && end.entry == nil)
    }
}

/// A player stand-in: the playlist of each entry is items of a fixed length (vsyncs), laid end to
/// end without a gap; it records on which vsync each playlist's first frame was due.
final class FakePlayback: SchedulePlayback {
    let lengths: [Int?: Int64]
    var itemStart: Int64 = 0
    var itemEnd: Int64
    var playing: Int?
    var queued: Int??
    var starts: [(vsync: Int64, entry: Int?)] = []
    var lastAsked: Int64 = -1

    init(lengths: [Int?: Int64], playing: Int?) {
        self.lengths = lengths
        self.playing = playing
        itemEnd = lengths[playing]!
        starts = [(0, playing)]
    }

    /// Plays up to vsync `n`.
    func advance(to n: Int64) {
        lastAsked = n
        while n >= itemEnd {
            itemStart = itemEnd
            if let next = queued {
                playing = next
                queued = nil
                starts.append((itemStart, next))
            }
            itemEnd = itemStart + lengths[playing]!
        }
    }

    func currentItemEnd() -> Player.ItemEnd { .atVsync(itemEnd) }

    func switchPlaylist(to entry: Int?, cutAt: Int64?) -> Bool {
        if let cutAt {
            guard cutAt > lastAsked, cutAt < itemEnd else { return false }
            itemEnd = cutAt
        }
        queued = .some(entry)
        return true
    }
}

@Suite struct ScheduleRunnerTests {
    static let refresh = RefreshRate(numerator: 60)

    /// Runs `runner` over `fake` until vsync `last`, asking every vsync within 15 s of a moment
    /// in `moments` or 5 s of an item's end, and every 10 s otherwise (as an idle presentation
    /// loop skips vsyncs); `wall` maps a vsync to its system-clock time.
    fileprivate func run(_ runner: ScheduleRunner, _ fake: FakePlayback, until last: Int64, moments: [Int64], wall: (Int64) -> WallTime) {
        var n: Int64 = 0
        while n <= last {
            fake.advance(to: n)
            runner.vsync(n, wall: wall(n), playback: fake)
            let nearItemEnd = fake.itemEnd - n <= 300
            let nearChange = moments.contains { $0 - n <= 900 && $0 - n >= -900 }
            n += nearItemEnd || nearChange ? 1 : 600
        }
    }

    static func vsync(of moment: WallTime, start: WallTime) -> Int64 {
        Int64((Double(moment - start) / 1e9 * 60).rounded())
    }

    @Test func aWeekSwitchesOnTheVsyncOfEachMomentOrTheFirstItemBoundaryAfterIt() throws {
        let schedule = try #require(try weekSchedule().schedule)
        let start = utc("2026-03-22T23:00:00Z")
        let runner = ScheduleRunner(schedule: schedule, active: schedule.entry(at: start), refresh: Self.refresh)
        // Items of 7 min 13 s (top-level), 61 s, 29 s, 3 min, 47 s: boundaries fall anywhere.
        let fake = FakePlayback(lengths: [nil: 25_980, 0: 3_660, 1: 1_740, 2: 10_800, 3: 2_820], playing: nil)
        let end = Self.vsync(of: utc("2026-03-31T00:00:00Z"), start: start)
        let moments = weekChanges.map { Self.vsync(of: utc($0.0), start: start) }
        run(runner, fake, until: end, moments: moments) { start + $0 * 1_000_000_000 / 60 }
        let changes = fake.starts.dropFirst()
        #expect(changes.map(\.entry) == weekChanges.map(\.1))
        // Each change as its mode says: exact on the moment's vsync; item at the first boundary of
        // the playlist playing before it at or after that vsync.
        var previous = (vsync: Int64(0), entry: Int?.none)
        for (change, expected) in zip(changes, weekChanges) {
            let moment = Self.vsync(of: utc(expected.0), start: start)
            let mode = schedule.switchMode(from: previous.entry, to: change.entry)
            if mode == .exact {
                #expect(change.vsync == moment, "\(expected.0)")
            } else {
                let length = fake.lengths[previous.entry]!
                let boundary = previous.vsync + (moment - previous.vsync + length - 1) / length * length
                #expect(change.vsync == boundary, "\(expected.0)")
            }
            previous = change
        }
    }

    @Test func aClockStepIntoAnotherEntrySwitchesAtOnce() throws {
        let schedule = try #require(try weekSchedule().schedule)
        let start = utc("2026-03-24T04:00:00Z")  // Tuesday 05:00 CET
        let runner = ScheduleRunner(schedule: schedule, active: nil, refresh: Self.refresh)
        var steps: [(Int64, Int64)] = []
        runner.onClockStep = { steps.append(($0, $1)) }
        let fake = FakePlayback(lengths: [nil: 25_980, 0: 3_660], playing: nil)
        // At vsync 6000 (05:01:40) the clock is stepped two hours ahead: 07:01:40, breakfast time.
        let wall = { (n: Int64) -> WallTime in start + n * 1_000_000_000 / 60 + (n >= 6000 ? 7_200_000_000_000 : 0) }
        var n: Int64 = 0
        while n < 7000 {
            fake.advance(to: n)
            runner.vsync(n, wall: wall(n), playback: fake)
            n += 1
        }
        #expect(steps.count == 1 && steps.first?.0 == 6000)
        // Exact: cut a quarter second (15 vsyncs) after the step was noticed.
        #expect(fake.starts.map(\.entry) == [nil, 0])
        #expect(fake.starts.last?.vsync == 6015)
    }
}
