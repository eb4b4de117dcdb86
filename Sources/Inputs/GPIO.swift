import CGpiod
import Foundation
import Playback
import Synchronization

/// A GPIO line by chip (`gpiochip0`, a path or a label) and offset.
public struct GPIOLine: Hashable, Sendable, CustomStringConvertible {
    public enum Bias: String, Sendable, CaseIterable { case asIs = "as-is", disable, pullUp = "pull-up", pullDown = "pull-down" }
    public var chip: String
    public var line: Int
    public var bias: Bias
    /// True when the line reads low while pressed (a button to ground with a pull-up).
    public var activeLow: Bool
    public init(chip: String, line: Int, bias: Bias = .asIs, activeLow: Bool = false) {
        self.chip = chip
        self.line = line
        self.bias = bias
        self.activeLow = activeLow
    }
    public var description: String { "\(chip):\(line)" }
}

/// One requested GPIO line (libgpiod 1.x): its chip handle and line, released together.
final class GPIOHandle {
    let chip: OpaquePointer
    let line: OpaquePointer
    init(_ wanted: GPIOLine, output: Bool, consumer: String = "marquee") throws(InputError) {
        guard let chip = gpiod_chip_open_lookup(wanted.chip) else {
            throw InputError.errno("GPIO \(wanted)", "gpiod_chip_open_lookup", errno)
        }
        guard let line = gpiod_chip_get_line(chip, UInt32(wanted.line)) else {
            let code = errno
            gpiod_chip_close(chip)
            throw InputError.errno("GPIO \(wanted)", "gpiod_chip_get_line", code)
        }
        var flags: Int32 = 0
        switch wanted.bias {
        case .asIs: break
        case .disable: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
        let rc = output ? gpiod_line_request_output_flags(line, consumer, flags, 0)
                        : gpiod_line_request_both_edges_events_flags(line, consumer, flags)
        guard rc == 0 else {
            let code = errno
            gpiod_chip_close(chip)
            throw InputError.errno("GPIO \(wanted)", output ? "gpiod_line_request_output_flags" : "gpiod_line_request_both_edges_events_flags", code)
        }
        self.chip = chip
        self.line = line
    }
    deinit { gpiod_chip_close(chip) }  // releases the line too
}

/// Reads edges of GPIO lines (buttons, mats, a show controller's contacts) on a thread of its own
/// (**marquee-gpio**). A chip that is missing, or goes, is tried again every 2 s; a line that
/// goes while pressed is released. Never fatal.
public final class GPIOInputs: @unchecked Sendable {
    // @unchecked: the handles belong to the thread; the rest are atomics and immutable.
    public static let retryInterval = 2.0
    private let thread = InputThreadState()
    /// The lines requested now.
    public var openLines: Int { thread.count.load(ordering: .relaxed) }

    /// `onEdge`: `line` is now pressed or released (or lost with its chip), at
    /// `inputClockSeconds()` time.
    public init(lines: [GPIOLine], logger: Logger, onEdge: @escaping @Sendable (_ line: GPIOLine, _ level: InputLevel, _ time: Double) -> Void) {
        let thread = thread
        startThread(named: "marquee-gpio") {
            defer { _ = thread.finished.set(true) }
            var handles: [GPIOLine: GPIOHandle] = [:]
            var pressed = Set<GPIOLine>()
            var failed = Set<GPIOLine>()
            var lastTry = -Double.infinity
            while !thread.isStopping {
                if handles.count < lines.count, inputClockSeconds() - lastTry >= Self.retryInterval {
                    lastTry = inputClockSeconds()
                    for wanted in lines where handles[wanted] == nil {
                        do {
                            handles[wanted] = try GPIOHandle(wanted, output: false)
                            failed.remove(wanted)
                            logger.info("GPIO input opened", ["line": "\(wanted)"])
                        } catch {
                            if failed.insert(wanted).inserted { logger.warning("GPIO input cannot be opened; tried again every 2 s", ["line": "\(wanted)", "error": "\(error)"]) }
                        }
                    }
                    thread.count.store(handles.count, ordering: .relaxed)
                }
                let open = Array(handles)
                var fds = open.map { pollfd(fd: gpiod_line_event_get_fd($0.value.line), events: Int16(POLLIN), revents: 0) }
                if fds.isEmpty {
                    thread.idle(0.25)
                    continue
                }
                let ready = poll(&fds, nfds_t(fds.count), 250)
                guard ready > 0 else { continue }
                for (index, entry) in fds.enumerated() where entry.revents != 0 {
                    let (wanted, handle) = open[index]
                    var event = gpiod_line_event()
                    if entry.revents & Int16(POLLIN) == 0 || gpiod_line_event_read(handle.line, &event) != 0 {
                        // The chip went (unbound, unplugged): release, and try again later.
                        if pressed.remove(wanted) != nil { onEdge(wanted, .lost, inputClockSeconds()) }
                        handles[wanted] = nil
                        thread.count.store(handles.count, ordering: .relaxed)
                        logger.warning("GPIO input lost; tried again every 2 s", ["line": "\(wanted)"])
                        continue
                    }
                    let high = event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE)
                    let isPressed = high != wanted.activeLow
                    if isPressed { pressed.insert(wanted) } else { pressed.remove(wanted) }
                    onEdge(wanted, isPressed ? .pressed : .released, inputClockSeconds())
                }
            }
        }
    }

    public func stop() { thread.stop() }

    deinit { thread.stopping.store(true, ordering: .relaxed) }

    /// Whether this machine has any GPIO chip (tests that need one skip without).
    public static var chipsPresent: Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).contains { $0.hasPrefix("gpiochip") }
    }
}

/// A GPIO line driven high while a triggered item plays (a lamp in the button, a relay).
public final class GPIOOutput: @unchecked Sendable {
    // @unchecked: the handle is used under `lock` only.
    private let handle: Mutex<GPIOHandle?>
    public let line: GPIOLine

    public init(_ line: GPIOLine) throws(InputError) {
        self.line = line
        handle = Mutex(try GPIOHandle(line, output: true))
    }

    public func set(_ on: Bool) throws(InputError) {
        let value: Int32 = on != line.activeLow ? 1 : 0
        let rc = handle.withLock { h in h.map { gpiod_line_set_value($0.line, value) } ?? -1 }
        guard rc == 0 else { throw InputError.errno("GPIO \(line)", "gpiod_line_set_value", errno) }
    }
}
