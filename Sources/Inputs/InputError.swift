import Foundation
import Synchronization
import Playback

/// A failed call of liblo, libevdev, libgpiod or the system: the input it was for, the call and
/// its return code or errno.
public struct InputError: CallError, Equatable {
    public let subject: String
    public let failure: CallFailure

    public init(subject: String, call: String, code: Int32, reason: String) {
        self.subject = subject
        failure = CallFailure(call: call, code: code, reason: reason)
    }

    /// From a negative errno return (libevdev, libgpiod) or errno itself.
    static func errno(_ subject: String, _ call: String, _ code: Int32) -> InputError {
        let value = abs(code)
        return InputError(subject: subject, call: call, code: value, reason: String(cString: strerror(value)))
    }
}

/// A monotonic time in seconds for input events (the trigger engine's clock).
public func inputClockSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// What an input's thread shares with its owner: the stop request, a count it keeps, and its end.
final class InputThreadState: Sendable {
    let stopping = Atomic(false)
    /// Devices or lines open now; packets received.
    let count = Atomic(0)
    /// Packets refused.
    let refused = Atomic(0)
    let finished = Latch<Bool>()
    /// Set by `stop`: what the thread waits on when it has nothing to poll.
    let stopRequest = Latch<Bool>()

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Waits `seconds` unless a stop comes first.
    func idle(_ seconds: Double) { _ = stopRequest.wait(timeout: seconds) }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        _ = stopRequest.set(true)
        _ = finished.wait(timeout: 1)
    }
}

/// A held input's new state.
public enum InputLevel: Sendable, Equatable {
    case pressed, released
    /// Its device or chip went while it was pressed: neither a release nor a press.
    case lost
}
