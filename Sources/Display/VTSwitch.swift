import CDRM
import Foundation
import Playback
import Synchronization
import SystemCalls

/// What a VT switcher does to the DRM card when its terminal goes to the background or comes
/// back (the real one: `drmDropMaster` / `drmSetMaster`; tests use a fake).
protocol DRMMasterControl: AnyObject {
    func dropMaster() throws
    func setMaster() throws
    /// How many CRTCs outputs of this process still drive (the VT is released only at 0).
    var claimedCRTCs: Int { get }
}

/// The kernel's side of a VT in `VT_PROCESS` mode: the acknowledgements it waits for.
protocol VTAcknowledging: AnyObject {
    /// `VT_RELDISP 1`: the switch away may go on.
    func acknowledgeRelease() throws
    /// `VT_RELDISP VT_ACKACQ`: the terminal is ours again.
    func acknowledgeAcquire() throws
}

/// A signal from the kernel about the VT.
enum VTSignal: Sendable {
    /// Another VT was asked for: let go of the display, then acknowledge.
    case release
    /// Marquee's VT is in front again.
    case acquire
}

/// Follows switches of the virtual terminal Marquee's display belongs to, as mpv's VT switcher
/// does: the terminal is put in `VT_PROCESS` mode, so the kernel asks (SIGUSR1) before it switches
/// away and says (SIGUSR2) when it switches back. On a release request every output takes its head
/// down (its saved display state goes back), then DRM master is dropped and the switch
/// acknowledged; while the VT is in the background `connect` finds no display (the player is not
/// asked for pictures, so its timeline waits where it stopped, as for an unplugged display); on
/// return the switch is acknowledged, master is taken back and the display is modeset again.
///
/// The state machine is here; the terminal and the card are behind protocols (tested with fakes).
final class VTSwitcher: @unchecked Sendable {
    // @unchecked: `state` is a Mutex; `terminal` and `signals` are immutable.
    /// The terminal's name, e.g. `tty1`.
    let name: String
    private let terminal: any VTAcknowledging
    /// Reads the signals that came since it was last asked (nothing when none).
    private let signals: () -> [VTSignal]
    private let logger: Logger
    private struct State {
        var active = true
        var master = true
        var releasePending = false
        /// Counts signals: hotplug waits report a change when it moved.
        var generation = 0
    }
    private let state = Mutex(State())

    /// Counts the signals taken in so far.
    var generation: Int { state.withLock { $0.generation } }

    /// Called by `finish` once the display is let go of for good (puts the terminal's mode back).
    private let onFinish: () -> Void

    init(name: String, terminal: any VTAcknowledging, signals: @escaping () -> [VTSignal], logger: Logger,
         onFinish: @escaping () -> Void = {}) {
        self.name = name
        self.terminal = terminal
        self.signals = signals
        self.logger = logger
        self.onFinish = onFinish
    }

    private static let shared = Mutex<(opened: Bool, switcher: VTSwitcher?)>((false, nil))

    /// The process's switcher, for its controlling terminal: opened on the first call (which logs
    /// whether VT switches are followed, and why not), the same one after. nil where there is no
    /// virtual terminal (a service without a TTY, a run over SSH or in a container).
    static func forProcess(logger: Logger) -> VTSwitcher? {
        shared.withLock { state in
            if state.opened { return state.switcher }
            state.opened = true
            switch ProcessVirtualTerminal.open() {
            case .success(let terminal):
                logger.info("VT switches are followed", ["tty": terminal.name, "release": "SIGUSR1", "acquire": "SIGUSR2"])
                state.switcher = VTSwitcher(name: terminal.name, terminal: terminal, signals: { terminal.pendingSignals() },
                                            logger: logger, onFinish: { terminal.restore() })
            case .failure(let why):
                logger.info("VT switches are not followed", ["why": why.reason])
            }
            return state.switcher
        }
    }

    /// Takes in the signals that came; returns the generation (it moves with each signal).
    @discardableResult
    func update() -> Int {
        state.withLock { state in
            // Read under the lock: two threads asking at once see the signals in their order.
            for signal in signals() {
                state.generation += 1
                switch signal {
                case .release: state.releasePending = true
                case .acquire:
                    state.releasePending = false
                    state.active = true
                    state.master = false
                }
            }
            return state.generation
        }
    }

    /// Why a head presenting now must go (a switch away was asked for), else nil.
    func releaseRequested() -> String? {
        update()
        return state.withLock { $0.releasePending ? "\(name) is being switched away" : nil }
    }

    /// Called before looking for a display: completes what the signals asked for and says why the
    /// display cannot be used now (nil: it can). A release waits until no output drives a CRTC
    /// (each takes its head down first); then master is dropped and the switch acknowledged. After
    /// a return the switch is acknowledged and master taken back (retried at the next call when
    /// another process holds it).
    func claim(_ card: any DRMMasterControl) -> String? {
        update()
        return state.withLock { state -> String? in
            if state.releasePending {
                if card.claimedCRTCs > 0 { return "\(name) is being switched away (outputs are letting go of the display)" }
                do {
                    try card.dropMaster()
                } catch {
                    logger.warning("cannot drop DRM master for a VT switch", ["tty": name, "error": "\(error)"])
                }
                do {
                    try terminal.acknowledgeRelease()
                    logger.info("VT switched away: display released", ["tty": name])
                } catch {
                    logger.warning("cannot acknowledge the VT switch", ["tty": name, "error": "\(error)"])
                }
                state.releasePending = false
                state.active = false
                state.master = false
            }
            guard state.active else { return "\(name) is in the background (VT switched away)" }
            if !state.master {
                do {
                    try terminal.acknowledgeAcquire()
                } catch {
                    logger.debug("VT_ACKACQ refused", ["tty": name, "error": "\(error)"])
                }
                do {
                    try card.setMaster()
                    state.master = true
                    logger.info("VT back in front: DRM master taken back", ["tty": name])
                } catch {
                    return "\(name) is in front again, but DRM master cannot be taken back (\(error))"
                }
            }
            return nil
        }
    }

    /// Before the process lets go of the card: a switch away that is waiting is let go on.
    func finish(_ card: any DRMMasterControl) {
        update()
        let pending = state.withLock { state -> Bool in
            defer { state.releasePending = false }
            return state.releasePending
        }
        if pending {
            try? card.dropMaster()
            try? terminal.acknowledgeRelease()
        }
        onFinish()
    }
}

/// Hotplug notices, plus a notice whenever the VT switcher got a signal (so a display link looks
/// at its display again at once: to let it go, or to modeset it again).
final class VTAwareHotplugEvents: HotplugEvents {
    let inner: any HotplugEvents
    let switcher: VTSwitcher
    private var seen: Int
    /// How long one wait on the inner events lasts before the VT is looked at again.
    let slice: Double

    init(inner: any HotplugEvents, switcher: VTSwitcher, slice: Double = 0.1) {
        self.inner = inner
        self.switcher = switcher
        self.slice = slice
        seen = switcher.generation
    }

    func wait(timeout: Double) -> Bool {
        var left = max(0, timeout)
        while true {
            let generation = switcher.update()
            if generation != seen {
                seen = generation
                return true
            }
            let step = min(left, slice)
            if inner.wait(timeout: step) { return true }
            left -= step
            if left <= 0 { return false }
        }
    }
}

// MARK: The real terminal

/// The write end of the VT signal pipe (-1 before a terminal is taken), for the signal handler.
nonisolated(unsafe) private var vtSignalPipeWriteEnd: Int32 = -1

/// The controlling terminal when it is a virtual terminal, in `VT_PROCESS` mode with SIGUSR1
/// (release) and SIGUSR2 (acquire) sent to this process; put back in its old mode by `restore`.
final class ProcessVirtualTerminal: VTAcknowledging, @unchecked Sendable {
    // @unchecked: immutable after init; the descriptors are only read and ioctl'd.
    let name: String
    private let tty: FileDescriptor
    private let signalPipe: FileDescriptor
    private var previousMode: vt_mode

    static let releaseSignal = SIGUSR1
    static let acquireSignal = SIGUSR2

    /// The terminal, or why there is none to follow (no controlling terminal: a service without a
    /// TTY, a headless run; not a VT: a serial line or a pseudo-terminal).
    static func open() -> Result<ProcessVirtualTerminal, VTUnavailable> {
        let tty: FileDescriptor
        do {
            tty = try FileDescriptor.open("/dev/tty", O_RDWR | O_NOCTTY)
        } catch {
            return .failure(VTUnavailable(reason: "no controlling terminal (\(error))"))
        }
        var mode = vt_mode()
        let fd = tty.rawValue
        do {
            try systemCall("ioctl(/dev/tty, VT_GETMODE)") { ioctl(fd, UInt(VT_GETMODE), &mode) }
        } catch {
            return .failure(VTUnavailable(reason: "the controlling terminal is not a virtual terminal (\(error))"))
        }
        // The terminal's own device number (TIOCGDEV: /dev/tty itself is 5,0), for its name.
        var name = "the controlling terminal"
        var device: UInt32 = 0
        let tiocgdev: UInt = 0x8004_5432   // _IOR('T', 0x32, unsigned int); a macro Swift cannot import
        if ioctl(fd, tiocgdev, &device) == 0 {
            name = "tty\((device & 0xff) | ((device >> 12) & 0xfff00))"
        }
        let pipe: FileDescriptor.Pipe
        do {
            pipe = try FileDescriptor.pipe(flags: O_NONBLOCK)
        } catch {
            return .failure(VTUnavailable(reason: "\(error)"))
        }
        // The handler's end stays open for the life of the process (a signal may come late);
        // `VTSwitcher.forProcess` opens the terminal once.
        vtSignalPipeWriteEnd = pipe.writeEnd.relinquish()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(vtSignalPipeWriteEnd, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(releaseSignal, &action, nil)
        sigaction(acquireSignal, &action, nil)
        var process = vt_mode()
        process.mode = CChar(VT_PROCESS)
        process.relsig = Int16(releaseSignal)
        process.acqsig = Int16(acquireSignal)
        do {
            try systemCall("ioctl(\(name), VT_SETMODE VT_PROCESS)") { ioctl(fd, UInt(VT_SETMODE), &process) }
        } catch {
            return .failure(VTUnavailable(reason: "\(error)"))
        }
        return .success(ProcessVirtualTerminal(name: name, tty: tty, signalPipe: pipe.readEnd, previousMode: mode))
    }

    private init(name: String, tty: consuming FileDescriptor, signalPipe: consuming FileDescriptor, previousMode: vt_mode) {
        self.name = name
        self.tty = tty
        self.signalPipe = signalPipe
        self.previousMode = previousMode
    }

    deinit { restore() }

    /// Puts the terminal back in the mode it had (`VT_AUTO` as a rule).
    func restore() {
        var mode = previousMode
        mode.mode = mode.mode == CChar(VT_PROCESS) ? CChar(VT_AUTO) : mode.mode
        _ = ioctl(tty.rawValue, UInt(VT_SETMODE), &mode)
    }

    /// The signals that came since the last call.
    func pendingSignals() -> [VTSignal] {
        var bytes = [UInt8](repeating: 0, count: 64)
        var signals: [VTSignal] = []
        let fd = signalPipe.rawValue
        while let count = try? bytes.withUnsafeMutableBytes({ buffer throws(SystemCallError) in
            try systemCall("read(VT signal pipe)") { read(fd, buffer.baseAddress, buffer.count) }
        }), count > 0 {
            for byte in bytes.prefix(count) {
                if Int32(byte) == Self.releaseSignal { signals.append(.release) }
                if Int32(byte) == Self.acquireSignal { signals.append(.acquire) }
            }
        }
        return signals
    }

    func acknowledgeRelease() throws {
        let fd = tty.rawValue
        try systemCall("ioctl(\(name), VT_RELDISP 1)") { ioctl(fd, UInt(VT_RELDISP), Int32(1)) }
    }

    func acknowledgeAcquire() throws {
        let fd = tty.rawValue
        try systemCall("ioctl(\(name), VT_RELDISP VT_ACKACQ)") { ioctl(fd, UInt(VT_RELDISP), Int32(VT_ACKACQ)) }
    }
}

/// Why VT switches are not followed.
struct VTUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

extension DRMDevice: DRMMasterControl {
    func dropMaster() throws {
        try drmCheck("drmDropMaster(\(path))", drmDropMaster(fd))
    }

    func setMaster() throws {
        try drmCheck("drmSetMaster(\(path))", drmSetMaster(fd))
    }
}
