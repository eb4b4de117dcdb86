import Foundation
import Playback

/// Which kind of output to drive.
public enum OutputKind: String, Sendable, CaseIterable {
    /// KMS when a DRM device has a connected connector, else headless.
    case auto
    case kms
    case headless
}

public struct OutputUnavailable: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { description }
    public let description: String
    /// The error it was made from (the same, before the wait for a card), if any.
    public let cause: (any Error)?

    init(description: String, cause: (any Error)? = nil) {
        self.description = description
        self.cause = cause
    }
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
                              cards: [String] = displayCards(),
                              usable isUsable: (String) -> Bool = CardProbe.system.usable) throws -> (OutputKind, reason: String) {
    let found = connectors.map { "\($0.card)/\($0.connector)" }.joined(separator: ", ")
    let usable = Set(connectors.map(\.card)).union(cards).sorted().filter(isUsable)
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

/// Whether a display card can still appear on this machine, from sysfs: a PCI device of the display
/// class (0x03) whose driver may still be loading, or a device tree (a board whose display controller
/// is a platform device, which sysfs does not tell apart). Neither: a server, a VM without a GPU, a
/// container; no card will come. A USB display adapter is neither; `output: kms` waits for it.
public enum DisplayHardware: Sendable, Equatable {
    case controllers([String])
    case unknown(String)
    case none

    public var mayAppear: Bool { self != .none }
}

/// Reads `DisplayHardware` from sysfs (`/sys/bus/pci/devices/*/class`, `/sys/firmware/devicetree`).
public func displayHardware(sysfs: String = "/sys") -> DisplayHardware {
    let pci = "\(sysfs)/bus/pci/devices"
    let devices = ((try? FileManager.default.contentsOfDirectory(atPath: pci)) ?? []).sorted()
    let displays = devices.filter { device in
        let hex = (try? String(contentsOfFile: "\(pci)/\(device)/class", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        return hex.map { $0.lowercased().hasPrefix("0x03") } ?? false
    }
    if !displays.isEmpty { return .controllers(displays) }
    if FileManager.default.fileExists(atPath: "\(sysfs)/firmware/devicetree") { return .unknown("a device tree (platform display controllers)") }
    return .none
}

/// What output selection reads of the system: connected connectors and display cards from sysfs,
/// whether this process may open a card (`/dev/dri/cardN` readable and writable), and whether a
/// card may still appear. Tests give their own.
public struct CardProbe: Sendable {
    public var connectors: @Sendable () -> [ConnectedConnector]
    public var cards: @Sendable () -> [String]
    public var usable: @Sendable (String) -> Bool
    public var hardware: @Sendable () -> DisplayHardware
    public init(connectors: @escaping @Sendable () -> [ConnectedConnector], cards: @escaping @Sendable () -> [String],
                usable: @escaping @Sendable (String) -> Bool,
                hardware: @escaping @Sendable () -> DisplayHardware = { .unknown("not probed") }) {
        self.connectors = connectors
        self.cards = cards
        self.usable = usable
        self.hardware = hardware
    }

    public static let system = CardProbe(connectors: { connectedConnectors() }, cards: { displayCards() },
                                         usable: { access("/dev/dri/\($0)", R_OK | W_OK) == 0 },
                                         hardware: { displayHardware() })

    /// Display cards this process can open now.
    public func usableCards() -> [String] {
        Set(connectors().map(\.card)).union(cards()).sorted().filter(usable)
    }
}

/// The longest `display.waitForCard`: the wait happens before the output opens, so before the
/// service's READY=1, which the unit waits for at most 60 s (`TimeoutStartSec`).
public let longestCardWait = 30.0

/// Waits up to `limit` seconds for a display card this process can open (`probe.usableCards()`),
/// for a boot where the GPU's driver loads after marquee starts. It looks again at each DRM
/// uevent (`events`: a card and its connectors are announced as `SUBSYSTEM=drm` devices) and every
/// `recheck` seconds besides (udev gives the device node its group and mode after the kernel's
/// event, which sends no uevent of its own). Returns the cards found (empty: none within `limit`,
/// or `shouldContinue` turned false) and the seconds waited.
public func waitForDisplayCard(limit: Double, probe: CardProbe, events: any HotplugEvents,
                               time: any PresentationTime = MonotonicTime(), recheck: Double = 0.25,
                               shouldContinue: () -> Bool = { true }) -> (cards: [String], waited: Double) {
    let start = time.now()
    let limit = limit.isFinite ? min(max(limit, 0), longestCardWait) : 0
    let deadline = start + Int64(limit * 1e9)
    while true {
        let cards = probe.usableCards()
        let now = time.now()
        let waited = Double(now - start) / 1e9
        if !cards.isEmpty { return (cards, waited) }
        guard now < deadline, shouldContinue() else { return ([], waited) }
        _ = events.wait(timeout: min(recheck, Double(deadline - now) / 1e9))
    }
}

/// Chooses the output at start: `resolveOutputKind`, but where `auto` or `kms` finds no display
/// card this process can open, first waits for one (`waitForDisplayCard`, up to `waitForCard`
/// seconds, logged). A card that comes later than that is not used until marquee starts again:
/// `auto` plays headless, `kms` fails (and systemd starts it again). `auto` does not wait where no
/// card can appear (`DisplayHardware.none`): it plays headless at once, saying why.
public func selectOutput(_ requested: OutputKind, waitForCard: Double, logger: Logger, probe: CardProbe = .system,
                         events: () -> any HotplugEvents = { systemCardEvents() }, time: any PresentationTime = MonotonicTime(),
                         shouldContinue: () -> Bool = { true }) throws -> (OutputKind, reason: String) {
    guard requested != .headless, waitForCard > 0, probe.usableCards().isEmpty else {
        return try resolveOutputKind(requested, connectors: probe.connectors(), cards: probe.cards(), usable: probe.usable)
    }
    if requested == .auto, case .none = probe.hardware(), probe.cards().isEmpty, probe.connectors().isEmpty {
        let why = "no display controller on this machine (no PCI display device, no device tree): headless without waiting"
        logger.info("no display card can appear; playing headless", ["why": why])
        return (.headless, why)
    }
    let limit = min(waitForCard, longestCardWait)
    logger.info("waiting for a display card", ["output": requested.rawValue, "limit": "\(limit.formatted(decimals: 1)) s"])
    let (cards, waited) = waitForDisplayCard(limit: limit, probe: probe, events: events(), time: time, shouldContinue: shouldContinue)
    if !cards.isEmpty {
        logger.info("display card found", ["cards": cards.joined(separator: ","), "waited": "\(waited.formatted(decimals: 2)) s"])
        return try resolveOutputKind(requested, connectors: probe.connectors(), cards: probe.cards(), usable: probe.usable)
    }
    do {
        let (kind, reason) = try resolveOutputKind(requested, connectors: probe.connectors(), cards: probe.cards(), usable: probe.usable)
        guard kind == .headless, shouldContinue() else { return (kind, reason) }   // stopped while waiting: nothing to say
        let why = "\(reason); none appeared within \(waited.formatted(decimals: 1)) s (display.waitForCard): headless until restarted"
        logger.warning("no display card; playing headless", ["why": why])
        return (kind, why)
    } catch let error as OutputUnavailable {
        throw OutputUnavailable(description: "\(error.description) (waited \(waited.formatted(decimals: 1)) s for one)", cause: error)
    }
}

/// DRM device uevents (a card or a connector added, changed or removed) from netlink, else a
/// slow sysfs poll.
public func systemCardEvents() -> any HotplugEvents {
    (try? NetlinkHotplugEvents(matching: .drmDevice)) ?? SysfsPollHotplugEvents()
}
