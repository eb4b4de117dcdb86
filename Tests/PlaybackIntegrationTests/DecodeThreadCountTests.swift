import Foundation
@testable import Playback
import PlaybackTestSupport
import Testing
@testable import PlaybackTests

/// The count behind `Player.waitForDecodeThreadsToEnd`, on a count of its own (the process-wide
/// one also counts every other test's decode threads).
@Suite struct DecodeThreadCountTests {
    @Test func theWaitGivesUpAtItsTimeoutWhileAThreadRunsAndReturnsOnceItEnds() {
        let count = ItemFeeder.ThreadCount()
        count.enter()
        var started = Date()
        #expect(count.waitForNone(timeout: 0.1) == 1)
        #expect(Date().timeIntervalSince(started) >= 0.1)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            count.leave()
        }
        started = Date()
        #expect(count.waitForNone(timeout: 10) == 0)
        #expect(Date().timeIntervalSince(started) < 5, "the wait returns when the thread ends, not at its timeout")
    }
}
