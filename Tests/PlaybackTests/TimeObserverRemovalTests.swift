import Foundation
import Testing
import Synchronization
@testable import Playback
import PlaybackTestSupport

/// Removing a time observer: no callback starts after removal returns, a callback in progress on
/// another thread is waited for, and a callback may remove its own observer.
@Suite struct TimeObserverRemovalTests {
    private func observer(_ callback: @escaping @Sendable (MediaTime) -> Void) -> TimeObserver {
        TimeObserver(token: TimeObserverToken(id: 1, player: ObjectIdentifier(TimeObserverRemovalTests.self)),
                     kind: .periodic(interval: MediaTime(value: 1, timescale: 1), callback: callback), queue: nil)
    }

    @Test func aCallbackMayRemoveItsOwnObserver() {
        let box = Mutex<TimeObserver?>(nil)
        let removed = Latch<Bool>()
        let observer = observer { _ in
            if let me = box.withLock({ $0 }) { removed.set(me.deactivate()) }
        }
        box.withLock { $0 = observer }
        Thread.detachNewThread { observer.firePeriodic(.zero) }
        // Before: a recursive lock allowed this; a plain one would hang here.
        #expect(removed.wait(timeout: 30) == true)
    }
}
