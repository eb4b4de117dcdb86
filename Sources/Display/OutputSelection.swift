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

/// Cards that can drive a display: those with connector entries in sysfs (`card0-Virtual-1`),
/// connected or not; render-only and display-less cards have none.
public func displayCards(sysfs: String = "/sys/class/drm") -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    let cards = entries.compactMap { entry -> String? in
        guard entry.hasPrefix("card"), let dash = entry.firstIndex(of: "-") else { return nil }
        return String(entry[..<dash])
    }
    return Array(Set(cards)).sorted()
}

/// Resolves `auto` once, at start-up: the one place where the output backend is chosen.
/// Returns the kind and why it was chosen. A display-capable card with nothing connected yet is
/// KMS (the output waits for a display); with no such card at all, `auto` is headless and `kms`
/// fails naming what is missing.
public func resolveOutputKind(_ requested: OutputKind, connectors: [ConnectedConnector] = connectedConnectors(),
                              cards: [String] = displayCards()) throws -> (OutputKind, reason: String) {
    let found = connectors.map { "\($0.card)/\($0.connector)" }.joined(separator: ", ")
    let usable = Set(connectors.map(\.card)).union(cards).sorted().filter { access("/dev/dri/\($0)", R_OK | W_OK) == 0 }
    switch requested {
    case .headless:
        return (.headless, "requested")
    case .kms:
        if cards.isEmpty && connectors.isEmpty && drmCards().isEmpty {
            throw OutputUnavailable(description: "--output kms: no DRM device (/dev/dri/card* does not exist); use --output headless")
        }
        if found.isEmpty {
            return (.kms, "requested; no display connected yet (cards: \(cards.joined(separator: ", "))): waiting for one")
        }
        return (.kms, "requested; connected \(found)")
    case .auto:
        if cards.isEmpty && connectors.isEmpty { return (.headless, "no DRM device that can drive a display") }
        if usable.isEmpty { return (.headless, "display cards \(Set(connectors.map(\.card)).union(cards).sorted().joined(separator: ", ")), but no permission to open them") }
        if found.isEmpty { return (.kms, "no display connected yet on \(usable.joined(separator: ", ")): waiting for one") }
        return (.kms, "connected \(found)")
    }
}
