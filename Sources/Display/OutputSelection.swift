import Foundation

/// Which kind of output to drive.
public enum OutputKind: String, Sendable, CaseIterable {
    /// KMS when a DRM device has a connected connector, else headless.
    case auto
    case kms
    case headless
}

public struct OutputUnavailable: Error, CustomStringConvertible {
    public let description: String
}

/// A DRM card with a connected connector, as sysfs reports it (`/sys/class/drm/card0-HDMI-A-1/status`).
public struct ConnectedConnector: Sendable, Equatable {
    public let card: String
    public let connector: String
    public init(card: String, connector: String) {
        self.card = card
        self.connector = connector
    }
}

/// Connected connectors of display-capable cards, from sysfs (no device is opened).
public func connectedConnectors(sysfs: String = "/sys/class/drm") -> [ConnectedConnector] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    return entries.sorted().compactMap { entry in
        // Connector entries are "<card>-<connector>", e.g. "card0-Virtual-1"; render nodes have none.
        guard entry.hasPrefix("card"), let dash = entry.firstIndex(of: "-") else { return nil }
        let status = try? String(contentsOfFile: "\(sysfs)/\(entry)/status", encoding: .utf8)
        guard status?.trimmingCharacters(in: .whitespacesAndNewlines) == "connected" else { return nil }
        return ConnectedConnector(card: String(entry[..<dash]), connector: String(entry[entry.index(after: dash)...]))
    }
}

/// Resolves `auto` once, at start-up: the one place where the output backend is chosen.
/// Returns the kind and why it was chosen.
public func resolveOutputKind(_ requested: OutputKind, connectors: [ConnectedConnector] = connectedConnectors()) throws -> (OutputKind, reason: String) {
    let found = connectors.map { "\($0.card)/\($0.connector)" }.joined(separator: ", ")
    switch requested {
    case .headless:
        return (.headless, "requested")
    case .kms:
        if drmCards().isEmpty {
            throw OutputUnavailable(description: "--output kms: no DRM device (/dev/dri/card* does not exist); use --output headless")
        }
        if found.isEmpty {
            throw OutputUnavailable(description: "--output kms: no DRM card has a connected connector (see /sys/class/drm/card*-*/status); use --output headless")
        }
        return (.kms, "requested; connected \(found)")
    case .auto:
        if found.isEmpty { return (.headless, "no DRM device with a connected connector") }
        let usable = connectors.filter { access("/dev/dri/\($0.card)", R_OK | W_OK) == 0 }
        if usable.isEmpty { return (.headless, "connected \(found), but no permission to open the card") }
        return (.kms, "connected \(found)")
    }
}
