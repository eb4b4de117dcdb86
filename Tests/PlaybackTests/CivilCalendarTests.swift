import Playback
import PlaybackTestSupport
import Testing

@Suite struct CivilCalendarTests {
    @Test func dayNumbersAndDatesAgreeOverFourCenturies() {
        // Every day from 1800 to 2200 round-trips, and day numbers follow each other.
        var expected = CivilCalendar.dayNumber(year: 1800, month: 1, day: 1)
        for year in 1800...2200 {
            for month in 1...12 {
                for day in 1...CivilCalendar.days(inMonth: month, year: year) {
                    let n = CivilCalendar.dayNumber(year: year, month: month, day: day)
                    #expect(n == expected)
                    let back = CivilCalendar.date(dayNumber: n)
                    #expect(back.year == year && back.month == month && back.day == day)
                    expected += 1
                }
            }
        }
        #expect(CivilCalendar.dayNumber(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilCalendar.dayNumber(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilCalendar.days(inMonth: 2, year: 1900) == 28 && CivilCalendar.days(inMonth: 2, year: 2000) == 29)
        #expect(CivilCalendar.days(inMonth: 13, year: 2000) == 0)
    }
}
