import Foundation

/// Error raised when a wait expires; every wait in Marquee has a timeout and says what it waited for.
public struct WaitTimeout: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { description }
    public let waitingFor: String
    public let seconds: Double
    public init(waitingFor: String, seconds: Double) {
        self.waitingFor = waitingFor
        self.seconds = seconds
    }
    public var description: String { "timed out after \(seconds.formatted(decimals: 3)) s waiting for \(waitingFor)" }
}
