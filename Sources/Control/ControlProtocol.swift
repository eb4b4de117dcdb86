import Foundation

/// Marquee's protocol version: major * 65536 + minor.
public let marqueeVersionNumber = 0 * 65536 + 1

/// What `get_version` reports: mpv's client API version as mpv 0.35 reports it (2.0 = 2 * 65536),
/// the version of the protocol Marquee follows.
public let mpvClientAPIVersion = 2 * 65536 + 0

/// Where the control socket lives unless `--socket` says otherwise: `$RUNTIME_DIRECTORY/marquee.sock`
/// (systemd's RuntimeDirectory=), else `/run/marquee/marquee.sock` as root, else
/// `$XDG_RUNTIME_DIR/marquee.sock`, else a file in the temporary folder.
public func defaultControlSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
    if let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first, !runtime.isEmpty {
        return "\(runtime)/marquee.sock"
    }
    if getuid() == 0 { return "/run/marquee/marquee.sock" }
    if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return "\(xdg)/marquee.sock" }
    return NSTemporaryDirectory() + "marquee-\(getuid()).sock"
}
