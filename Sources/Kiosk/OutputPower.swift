import Foundation
import Playback
import Synchronization

/// Whether a session's output shows pictures or is in standby, and why: switched on the
/// presentation thread (by the schedule or by command), read from any thread.
final class OutputPower: @unchecked Sendable {
    // @unchecked: `control`, `trace`, `outputName` and `vsync` are the presentation thread's;
    // the state is behind a lock.
    /// Who switched the output.
    enum Cause: String, Sendable {
        case schedule = "scheduled"
        case command = "by command"
    }
    enum State: Equatable, Sendable {
        case on
        /// In standby (playback paused, so decoding stops).
        case off(Cause)
        /// As the status and the log say it: `off (scheduled)`, `off (by command)`; nil: on.
        var offReason: String? {
            if case .off(let cause) = self { return "off (\(cause.rawValue))" }
            return nil
        }
    }
    private let current = Mutex(State.on)
    private let status: KioskStatus
    private let logger: Logger
    /// Plays (true) or pauses (false) what the output shows.
    private let playing: (Bool) -> Void
    /// The output's standby control (nil: it has none; the pictures still stop), the trace and
    /// the output's name, given when presentation starts.
    var control: DisplayPowerControl?
    var trace: TraceWriter?
    var outputName = "-"
    /// The vsync being presented (nil while the display is dark), for the trace's lines.
    var vsync: Int64?

    init(status: KioskStatus, logger: Logger, playing: @escaping (Bool) -> Void) {
        self.status = status
        self.logger = logger
        self.playing = playing
    }

    var state: State { current.withLock { $0 } }

    /// The `display-power` command: switches the output on the presentation thread, which owns
    /// it (also while in standby), through `tasks`.
    func set(_ on: Bool, through tasks: PresentationTasks) -> KioskCommandResult {
        let done = tasks.run(timeout: 4) { [self] _ -> Bool in
            set(on, by: .command)
            return (state == .on) == on
        }
        guard let done else { return .failed("the output did not answer within 4 s") }
        return done ? .done : .failed("the display power could not be changed (see the log)")
    }

    /// Puts the output into standby (`on` false) or wakes it, for `cause`. A control that fails
    /// leaves the state as it was (logged). Presentation thread.
    func set(_ on: Bool, by cause: Cause, vsync: Int64? = nil) {
        let reason = "\(on ? "on" : "off") (\(cause.rawValue))"
        do {
            if let control { try control.setDisplayPower(on) }
        } catch {
            logger.error("display power cannot be changed", ["state": on ? "on" : "off", "error": "\(error)"])
            return
        }
        playing(on)
        let state: State = on ? .on : .off(cause)
        current.withLock { $0 = state }
        status.update { $0.displayOff = state.offReason }
        logger.info("display power", ["state": on ? "on" : "off", "why": reason])
        trace?.event("{\"type\":\"event\",\"event\":\"display-power\",\"output\":\(jsonStringLiteral(outputName)),\"state\":\"\(on ? "on" : "off")\",\"why\":\(jsonStringLiteral(reason)),\"vsync\":\(vsync.map { "\($0)" } ?? "null")}")
    }
}
