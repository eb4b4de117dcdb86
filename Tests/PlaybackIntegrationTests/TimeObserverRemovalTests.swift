import Foundation
import Testing
import Synchronization
@testable import Playback
import PlaybackTestSupport
@testable import PlaybackTests

/// Removing a time observer: no callback starts after removal returns, a callback in progress on
/// another thread is waited for, and a callback may remove its own observer.
@Suite struct TimeObserverRemovalTests {
    private func observer(_ callback: @escaping @Sendable (MediaTime) -> Void) -> TimeObserver {
        TimeObserver(token: TimeObserverToken(id: 1, player: ObjectIdentifier(TimeObserverRemovalTests.self)),
                     kind: .periodic(interval: MediaTime(value: 1, timescale: 1), callback: callback), queue: nil)
    }

    @Test func removalWaitsForACallbackRunningOnAnotherThreadAndNoneStartsAfterIt() {
        let entered = Latch<Void>()
        let finished = Atomic(false)
        let calls = Atomic(0)
        let observer = observer { _ in
            calls.add(1, ordering: .relaxed)
            entered.set(())
            Thread.sleep(forTimeInterval: 0.2)
            finished.store(true, ordering: .relaxed)
        }
        Thread.detachNewThread { observer.firePeriodic(.zero) }
        #expect(entered.wait(timeout: 30) != nil)
        #expect(observer.deactivate())
        let callbackDone = finished.load(ordering: .relaxed)
        #expect(callbackDone)  // removal returned only after the callback did
        observer.firePeriodic(.zero)
        let count = calls.load(ordering: .relaxed)
        #expect(count == 1)
    }

}
