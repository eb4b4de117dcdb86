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
        throw OutputUnavailable(description: "--output kms: the KMS output is not available in this version of Marquee"
            + (found.isEmpty ? " (no connected DRM connector was found either)" : " (connected: \(found))")
            + "; use --output headless")
    case .auto:
        if found.isEmpty { return (.headless, "no DRM device with a connected connector") }
        return (.headless, "connected \(found), but this version has no KMS output")
    }
}
