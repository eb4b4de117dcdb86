import CDRM
import Foundation
import Playback
import SystemCalls

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

/// The kernel's uevents on a `NETLINK_KOBJECT_UEVENT` socket (the kernel's multicast group, no
/// udev needed), filtered to DRM hotplugs. Owns the socket.
public final class NetlinkHotplugEvents: HotplugEvents {
    private let socket: FileDescriptor
    private let match: UeventMatch

    /// Throws `SystemCallError` naming the call that failed (no netlink in a sandbox, for one).
    public init(matching match: UeventMatch = .hotplug) throws(SystemCallError) {
        self.match = match
        let socket = try FileDescriptor.socket(domain: AF_NETLINK, type: Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                                               protocol: NETLINK_KOBJECT_UEVENT, call: "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)")
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_pid = 0
        address.nl_groups = 1   // the kernel's uevents
        let fd = socket.rawValue
        try systemCall("bind(NETLINK_KOBJECT_UEVENT, group 1)") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
            }
        }
        self.socket = socket
    }

    public func wait(timeout: Double) -> Bool {
        let deadline = MonotonicTime().now() + Int64(max(0, min(timeout, 86_400)) * 1e9)
        var buffer = [UInt8](repeating: 0, count: 8192)
        let fd = socket.rawValue
        while true {
            // Drain what is there; several notices count as one. EAGAIN: drained (other errors:
            // nothing to read either).
            var seen = false
            while let count = try? buffer.withUnsafeMutableBytes({ bytes throws(SystemCallError) in
                try systemCall("recv(netlink uevents)") { recv(fd, bytes.baseAddress, bytes.count, 0) }
            }) {
                let event = buffer.prefix(count)
                if match == .hotplug ? isDRMHotplug(uevent: event) : isDRMDeviceEvent(uevent: event) { seen = true }
            }
            if seen { return true }
            let remaining = deadline - MonotonicTime().now()
            guard remaining > 0 else { return false }
            // A failing poll is no notice (the re-probe interval still finds a display).
            guard (try? socket.poll(timeout: Double(remaining) / 1e9)) == true else { return false }
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
