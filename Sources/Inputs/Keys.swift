import CEvdev
import Foundation
import Playback
import SystemCalls
import Synchronization

/// Key codes by their kernel names (`KEY_SPACE`, `BTN_0`), as libevdev knows them.
public enum KeyCodes {
    /// The code of `name`, or nil when the kernel has no key of that name.
    public static func code(named name: String) -> Int? {
        let code = libevdev_event_code_from_name(UInt32(EV_KEY), name)
        return code < 0 ? nil : Int(code)
    }

    /// The largest key code (`KEY_MAX`).
    public static let largest = Int(KEY_MAX)
}

/// Reads key presses from the kernel's input devices (keyboards, USB keypads, buttons wired as
/// keys) through libevdev, on a thread of its own (**marquee-keys**). The devices are listed again
/// every `rescanInterval`: one plugged in later is opened, one unplugged is closed and its held
/// keys released; none is ever fatal.
public final class KeyInputs: @unchecked Sendable {
    // @unchecked: the devices belong to the thread; the rest are atomics and immutable.
    /// A device: its path, libevdev handle and the keys held on it.
    final class Device {
        let path: String
        let fd: Int32
        let handle: OpaquePointer
        var held = Set<Int>()
        init(path: String, fd: Int32, handle: OpaquePointer) {
            self.path = path
            self.fd = fd
            self.handle = handle
        }
        deinit {
            libevdev_free(handle)
            close(fd)
        }
    }

    public static let rescanInterval = 1.0
    private let thread = InputThreadState()
    /// The devices open now (for health and tests).
    public var openDevices: Int { thread.count.load(ordering: .relaxed) }

    /// - Parameters:
    ///   - paths: the device files to read (nil: every `/dev/input/event*` that has keys).
    ///   - onKey: key `code` went down or up (or was lost with its device), at `inputClockSeconds()`
    ///     time; on the thread.
    public init(paths: [String]?, logger: Logger, onKey: @escaping @Sendable (_ code: Int, _ level: InputLevel, _ time: Double) -> Void) {
        let thread = thread
        startThread(named: "marquee-keys") {
            defer { _ = thread.finished.set(true) }
            var devices: [String: Device] = [:]
            var failed = Set<String>()  // logged once each until they open
            var lastScan = -Double.infinity
            while !thread.isStopping {
                if inputClockSeconds() - lastScan >= Self.rescanInterval {
                    lastScan = inputClockSeconds()
                    let wanted = paths ?? Self.eventDevices()
                    for path in wanted where devices[path] == nil {
                        do {
                            if let device = try Self.open(path) {
                                devices[path] = device
                                failed.remove(path)
                                logger.info("key input opened", ["device": path, "name": String(cString: libevdev_get_name(device.handle))])
                            }
                        } catch {
                            if failed.insert(path).inserted { logger.warning("key input cannot be opened; tried again every second", ["device": path, "error": "\(error)"]) }
                        }
                    }
                    for (path, device) in devices where !FileManager.default.fileExists(atPath: path) {
                        Self.release(device, onKey)
                        devices[path] = nil
                        logger.info("key input removed", ["device": path])
                    }
                    thread.count.store(devices.count, ordering: .relaxed)
                }
                var fds = devices.values.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
                if fds.isEmpty {
                    thread.idle(0.25)
                    continue
                }
                let ready = poll(&fds, nfds_t(fds.count), 250)
                guard ready > 0 else { continue }
                for entry in fds where entry.revents != 0 {
                    guard let (path, device) = devices.first(where: { $0.value.fd == entry.fd }) else { continue }
                    if !Self.drain(device, onKey) {
                        Self.release(device, onKey)
                        devices[path] = nil
                        thread.count.store(devices.count, ordering: .relaxed)
                        logger.info("key input gone", ["device": path])
                    }
                }
            }
        }
    }

    /// Stops reading and closes the devices (waits up to a second for the thread).
    public func stop() { thread.stop() }

    deinit { thread.stopping.store(true, ordering: .relaxed) }

    static func eventDevices() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/input")) ?? []
        return names.filter { $0.hasPrefix("event") }.sorted().map { "/dev/input/" + $0 }
    }

    /// Opens `path`; nil when it has no keys (a mouse, a sensor).
    static func open(_ path: String) throws(InputError) -> Device? {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw InputError.errno("key input \(path)", "open", errno) }
        var handle: OpaquePointer?
        let rc = libevdev_new_from_fd(fd, &handle)
        guard rc == 0, let handle else {
            close(fd)
            throw InputError.errno("key input \(path)", "libevdev_new_from_fd", rc)
        }
        let device = Device(path: path, fd: fd, handle: handle)
        return libevdev_has_event_type(handle, UInt32(EV_KEY)) == 1 ? device : nil
    }

    /// Reads every pending event; false when the device is gone.
    static func drain(_ device: Device, _ onKey: (Int, InputLevel, Double) -> Void) -> Bool {
        var event = input_event()
        var flags = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue)
        // Bounded: a device cannot keep this thread here (the kernel's buffer holds a few hundred).
        for _ in 0..<4096 {
            let rc = libevdev_next_event(device.handle, flags, &event)
            if rc == -EAGAIN {
                if flags == UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue) { flags = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue); continue }
                return true
            }
            if rc < 0 { return false }  // ENODEV: unplugged
            // SYN_DROPPED: the kernel's buffer overflowed; the sync events bring the state back.
            if rc == Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue) { flags = UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue) }
            guard event.type == UInt16(EV_KEY), event.value == 0 || event.value == 1 else { continue }  // 2: auto-repeat
            let code = Int(event.code), pressed = event.value == 1
            if pressed { device.held.insert(code) } else { device.held.remove(code) }
            onKey(code, pressed ? .pressed : .released, inputClockSeconds())
        }
        return true
    }

    /// A device that went while keys were down: they are lost (up, without a release's press).
    static func release(_ device: Device, _ onKey: (Int, InputLevel, Double) -> Void) {
        for code in device.held.sorted() { onKey(code, .lost, inputClockSeconds()) }
        device.held = []
    }
}
