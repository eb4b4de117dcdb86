import Foundation

/// Who a display is, as its EDID (the connector's) or an HDMI/DisplayPort audio pin's ELD (the
/// sink's description the graphics driver hands the sound driver) tells it: the monitor name,
/// and the manufacturer and product codes both carry in the same form.
public struct MonitorIdentity: Sendable, Equatable, CustomStringConvertible {
    public var name: String?
    /// The EDID's PNP manufacturer ID (bytes 8-9, big-endian) and product code (bytes 10-11,
    /// little-endian), as ELD bytes 16-19 copy them.
    public var manufacturer: UInt16?
    public var product: UInt16?

    public init(name: String?, manufacturer: UInt16?, product: UInt16?) {
        self.name = name
        self.manufacturer = manufacturer
        self.product = product
    }

    /// The three-letter PNP ID ("DEL", "GSM", ...).
    public var manufacturerID: String? {
        guard let m = manufacturer else { return nil }
        let letters = [(m >> 10) & 31, (m >> 5) & 31, m & 31]
        guard letters.allSatisfy({ $0 >= 1 && $0 <= 26 }) else { return nil }
        return String(letters.map { Character(UnicodeScalar(UInt8(64 + $0))) })
    }

    public var description: String {
        let code = [manufacturerID, product.map { String(format: "%04x", $0) }].compactMap { $0 }.joined(separator: ":")
        return "\"\(name ?? "")\"" + (code.isEmpty ? "" : " (\(code))")
    }

    /// The same monitor: names equal (case and padding aside) where both have one, and
    /// manufacturer and product equal where both have them; at least one of the two compared.
    public func matches(_ other: MonitorIdentity) -> Bool {
        var compared = false
        if let a = name.map(Self.normalized), let b = other.name.map(Self.normalized), !a.isEmpty, !b.isEmpty {
            guard a == b else { return false }
            compared = true
        }
        if let m1 = manufacturer, let m2 = other.manufacturer, let p1 = product, let p2 = other.product {
            guard m1 == m2 && p1 == p2 else { return false }
            compared = true
        }
        return compared
    }

    static func normalized(_ s: String) -> String { s.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }

    /// The identity in an EDID base block (128 bytes or more): the header, the manufacturer and
    /// product codes, and the monitor name descriptor (tag 0xFC), if any; nil for bytes that are
    /// not an EDID.
    public static func fromEDID(_ edid: [UInt8]) -> MonitorIdentity? {
        guard edid.count >= 128, edid[0..<8] == [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00] else { return nil }
        let manufacturer = UInt16(edid[8]) << 8 | UInt16(edid[9])
        let product = UInt16(edid[10]) | UInt16(edid[11]) << 8
        var name: String?
        for offset in [54, 72, 90, 108] where edid[offset] == 0 && edid[offset + 1] == 0 && edid[offset + 3] == 0xFC {
            let text = edid[(offset + 5)..<(offset + 18)].prefix { $0 != 0x0A && $0 != 0 }
            name = String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
        return MonitorIdentity(name: name, manufacturer: manufacturer, product: product)
    }

    /// The identity in an ELD (CEA-861/HDA: a 4-byte header, then the baseline block: monitor
    /// name length in byte 4's low 5 bits, manufacturer and product at 16-19, the name from 20);
    /// nil when the ELD is empty (no monitor on that pin) or too short for what it says.
    public static func fromELD(_ eld: [UInt8]) -> MonitorIdentity? {
        guard eld.count >= 20 else { return nil }
        let nameLength = Int(eld[4] & 0x1F)
        guard eld.count >= 20 + nameLength else { return nil }
        // The EDID's bytes 8-11 as they are (the kernel copies them: eld[16] = edid[8], ...).
        let manufacturer = UInt16(eld[16]) << 8 | UInt16(eld[17])
        let product = UInt16(eld[18]) | UInt16(eld[19]) << 8
        let text = eld[20..<(20 + nameLength)].prefix { $0 != 0 }
        let name = String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if name.isEmpty && manufacturer == 0 && product == 0 { return nil }
        return MonitorIdentity(name: name.isEmpty ? nil : name, manufacturer: manufacturer, product: product)
    }
}

/// An HDMI/DisplayPort playback device ALSA exposes, with the ELD its pin reports (empty: no
/// monitor, or a monitor without sound).
public struct HDMIPlayback: Sendable, Equatable {
    public var card: Int
    /// The card's ALSA id (`PCH`, `HDMI`, `vc4hdmi0`, ...).
    public var cardID: String
    /// The PCM device number on the card.
    public var device: Int
    public var eld: [UInt8]

    public init(card: Int, cardID: String, device: Int, eld: [UInt8]) {
        self.card = card
        self.cardID = cardID
        self.device = device
        self.eld = eld
    }

    /// The ALSA name to open it by (through `plug`, which converts to what the pin takes).
    public var alsaName: String { "plughw:CARD=\(cardID),DEV=\(device)" }
}

/// What `audio.device: auto` plays on, and why.
public struct AudioDeviceChoice: Sendable, Equatable {
    /// The ALSA device name, or nil: no sound here (no sound card at all).
    public var device: String?
    public var reason: String

    /// `auto`: the HDMI/DisplayPort PCM whose ELD names the monitor on the output's connector
    /// (`monitor`, from the connector's EDID), when exactly one does; otherwise ALSA's
    /// `default` (or no sound where the system has no sound card), saying why.
    public static func auto(connector: String?, monitor: MonitorIdentity?, hdmi: [HDMIPlayback], hasCard: Bool) -> AudioDeviceChoice {
        guard hasCard else { return AudioDeviceChoice(device: nil, reason: "no sound card") }
        guard let connector else { return AudioDeviceChoice(device: "default", reason: "the output has no connector (not KMS): ALSA's default") }
        guard let monitor else {
            return AudioDeviceChoice(device: "default", reason: "no EDID on connector \(connector): ALSA's default")
        }
        let reported = hdmi.compactMap { pcm in MonitorIdentity.fromELD(pcm.eld).map { (pcm, $0) } }
        if hdmi.isEmpty {
            return AudioDeviceChoice(device: "default", reason: "no HDMI/DisplayPort PCM with an ELD control: ALSA's default")
        }
        let matching = reported.filter { $0.1.matches(monitor) }
        if matching.count == 1, let (pcm, eld) = matching.first {
            return AudioDeviceChoice(device: pcm.alsaName,
                                     reason: "the ELD of card \(pcm.cardID) device \(pcm.device) names \(eld), the monitor on \(connector)")
        }
        let seen = reported.map { "\($0.0.cardID),\($0.0.device): \($0.1)" }.joined(separator: "; ")
        if matching.count > 1 {
            return AudioDeviceChoice(device: "default",
                                     reason: "\(matching.count) HDMI/DisplayPort PCMs report \(monitor) (the same monitor twice): ALSA's default")
        }
        return AudioDeviceChoice(device: "default",
                                 reason: "no HDMI/DisplayPort PCM reports \(monitor) on \(connector) (\(reported.isEmpty ? "no ELD reports a monitor" : seen)): ALSA's default")
    }
}
