import CDRM
import Foundation
import Playback

/// Whether a kernel uevent (NUL-separated `KEY=value` lines after an `action@devpath` header) is
/// a DRM hotplug: `SUBSYSTEM=drm` and `HOTPLUG=1`.
public func isDRMHotplug(uevent bytes: some Collection<UInt8>) -> Bool {
    var drm = false, hotplug = false
    for field in bytes.split(separator: 0) {
        let text = String(decoding: field, as: UTF8.self)
        if text == "SUBSYSTEM=drm" { drm = true }
        if text == "HOTPLUG=1" { hotplug = true }
    }
    return drm && hotplug
}

/// Whether a kernel uevent concerns a DRM device (`SUBSYSTEM=drm`): a card or a connector added,
/// changed or removed.
public func isDRMDeviceEvent(uevent bytes: some Collection<UInt8>) -> Bool {
    bytes.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == "SUBSYSTEM=drm" }
}

/// Which uevents a `NetlinkHotplugEvents` reports.
public enum UeventMatch: Sendable {
    /// Display hotplugs (`isDRMHotplug`).
    case hotplug
    /// Any DRM device event (`isDRMDeviceEvent`): a card that appears.
    case drmDevice
}

/// A socket error: names the call and errno.
public struct HotplugError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call) failed (errno \(errno): \(String(cString: strerror(errno))))" }
}

/// The kernel's uevents on a `NETLINK_KOBJECT_UEVENT` socket (the kernel's multicast group, no
/// udev needed), filtered to DRM hotplugs. Owns the socket (closed in deinit).
public final class NetlinkHotplugEvents: HotplugEvents {
    private let fd: Int32
    private let match: UeventMatch

    public init(matching match: UeventMatch = .hotplug) throws {
        self.match = match
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                        NETLINK_KOBJECT_UEVENT)
        guard fd >= 0 else { throw HotplugError(call: "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", errno: errno) }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_pid = 0
        address.nl_groups = 1   // the kernel's uevents
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw HotplugError(call: "bind(NETLINK_KOBJECT_UEVENT, group 1)", errno: code)
        }
        self.fd = fd   // closed in deinit from here on
    }

    deinit { Glibc.close(fd) }

    public func wait(timeout: Double) -> Bool {
        let deadline = MonotonicTime().now() + Int64(max(0, timeout) * 1e9)
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            // Drain what is there; several notices count as one.
            var seen = false
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count < 0 { break }   // EAGAIN: drained (other errors: nothing to read either)
                let event = buffer.prefix(count)
                if match == .hotplug ? isDRMHotplug(uevent: event) : isDRMDeviceEvent(uevent: event) { seen = true }
            }
            if seen { return true }
            let remaining = deadline - MonotonicTime().now()
            guard remaining > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, remaining / 1_000_000)))
            if ready == 0 { return false }
            if ready < 0 && errno != EINTR { return false }
        }
    }
}

/// The slow fallback where netlink cannot be opened: reads the connectors' sysfs `status` files
/// every `interval` seconds and reports a change as a notice.
public final class SysfsPollHotplugEvents: HotplugEvents {
    public let sysfs: String
    public let interval: Double
    private var last: [String: String]
    private var lastPoll: Int64
    private let time: any PresentationTime

    public init(sysfs: String = "/sys/class/drm", interval: Double = 2, time: any PresentationTime = MonotonicTime()) {
        self.sysfs = sysfs
        self.interval = interval
        self.time = time
        last = connectorStatuses(sysfs: sysfs)
        lastPoll = time.now()
    }

    public func wait(timeout: Double) -> Bool {
        let deadline = time.now() + Int64(max(0, timeout) * 1e9)
        while true {
            let due = lastPoll + Int64(interval * 1e9)
            if time.now() >= due {
                lastPoll = time.now()
                let now = connectorStatuses(sysfs: sysfs)
                defer { last = now }
                if now != last { return true }
                continue
            }
            guard due <= deadline else {
                time.sleep(until: deadline)
                return false
            }
            time.sleep(until: due)
        }
    }
}

/// Every connector's sysfs status (`connected`, `disconnected`, `unknown`), by `card-connector`.
func connectorStatuses(sysfs: String) -> [String: String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    var statuses: [String: String] = [:]
    for entry in entries where entry.hasPrefix("card") && entry.contains("-") {
        let status = try? String(contentsOfFile: "\(sysfs)/\(entry)/status", encoding: .utf8)
        statuses[entry] = status?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }
    return statuses
}

/// Hotplug notices from netlink, or the sysfs poll where netlink cannot be opened (`why` says so).
public func systemHotplugEvents() -> (events: any HotplugEvents, why: String) {
    do {
        return (try NetlinkHotplugEvents(), "netlink uevents")
    } catch {
        return (SysfsPollHotplugEvents(), "sysfs status every 2 s (\(error))")
    }
}
