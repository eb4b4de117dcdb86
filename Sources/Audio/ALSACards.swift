import CALSA
import Foundation

/// The system's sound cards as ALSA lists them, and their HDMI/DisplayPort playback devices with
/// the ELD each pin reports (the `ELD` control of interface PCM, device = the PCM's number,
/// which HDA, vc4 and other HDMI drivers expose).
public struct ALSACards: Sendable {
    /// Card numbers ALSA lists.
    public var cards: [Int] = []
    public var hdmi: [HDMIPlayback] = []
    /// Calls that failed on the way (a card whose controls could not be read is left out).
    public var problems: [AudioError] = []

    /// Lists the cards and reads their ELD controls (each control handle is opened and closed here).
    public static func scan() -> ALSACards {
        var result = ALSACards()
        var card: Int32 = -1
        for _ in 0..<64 {
            let r = snd_card_next(&card)
            if r < 0 {
                result.problems.append(AudioError(device: "cards", call: "snd_card_next", alsa: r))
                break
            }
            if card < 0 { break }
            result.cards.append(Int(card))
            do { result.hdmi += try readELDs(card: card) } catch let error as AudioError { result.problems.append(error) } catch {}
        }
        return result
    }

    private static func readELDs(card: Int32) throws -> [HDMIPlayback] {
        let name = "hw:\(card)"
        var ctl: OpaquePointer?
        let opened = snd_ctl_open(&ctl, name, 0)
        guard opened >= 0, let ctl else { throw AudioError(device: name, call: "snd_ctl_open", alsa: opened) }
        defer { snd_ctl_close(ctl) }
        var info: OpaquePointer?
        guard snd_ctl_card_info_malloc(&info) >= 0, let info else { throw AudioError(device: name, call: "snd_ctl_card_info_malloc", code: -ENOMEM, reason: "out of memory") }
        defer { snd_ctl_card_info_free(info) }
        let got = snd_ctl_card_info(ctl, info)
        guard got >= 0 else { throw AudioError(device: name, call: "snd_ctl_card_info", alsa: got) }
        let cardID = snd_ctl_card_info_get_id(info).map { String(cString: $0) } ?? "\(card)"

        var list: OpaquePointer?, id: OpaquePointer?, elemInfo: OpaquePointer?, value: OpaquePointer?
        guard snd_ctl_elem_list_malloc(&list) >= 0, let list else { throw AudioError(device: name, call: "snd_ctl_elem_list_malloc", code: -ENOMEM, reason: "out of memory") }
        defer { snd_ctl_elem_list_free(list) }
        guard snd_ctl_elem_id_malloc(&id) >= 0, let id else { throw AudioError(device: name, call: "snd_ctl_elem_id_malloc", code: -ENOMEM, reason: "out of memory") }
        defer { snd_ctl_elem_id_free(id) }
        guard snd_ctl_elem_info_malloc(&elemInfo) >= 0, let elemInfo else { throw AudioError(device: name, call: "snd_ctl_elem_info_malloc", code: -ENOMEM, reason: "out of memory") }
        defer { snd_ctl_elem_info_free(elemInfo) }
        guard snd_ctl_elem_value_malloc(&value) >= 0, let value else { throw AudioError(device: name, call: "snd_ctl_elem_value_malloc", code: -ENOMEM, reason: "out of memory") }
        defer { snd_ctl_elem_value_free(value) }

        var r = snd_ctl_elem_list(ctl, list)
        guard r >= 0 else { throw AudioError(device: name, call: "snd_ctl_elem_list", alsa: r) }
        let count = snd_ctl_elem_list_get_count(list)
        guard count > 0 else { return [] }
        r = snd_ctl_elem_list_alloc_space(list, count)
        guard r >= 0 else { throw AudioError(device: name, call: "snd_ctl_elem_list_alloc_space", alsa: r) }
        defer { snd_ctl_elem_list_free_space(list) }
        r = snd_ctl_elem_list(ctl, list)
        guard r >= 0 else { throw AudioError(device: name, call: "snd_ctl_elem_list", alsa: r) }

        var found: [HDMIPlayback] = []
        for index in 0..<snd_ctl_elem_list_get_used(list) {
            snd_ctl_elem_list_get_id(list, index, id)
            guard snd_ctl_elem_id_get_interface(id) == SND_CTL_ELEM_IFACE_PCM,
                  let elemName = snd_ctl_elem_id_get_name(id), String(cString: elemName) == "ELD" else { continue }
            let device = Int(snd_ctl_elem_id_get_device(id))
            snd_ctl_elem_info_set_id(elemInfo, id)
            guard snd_ctl_elem_info(ctl, elemInfo) >= 0 else { continue }
            let bytes = min(max(Int(snd_ctl_elem_info_get_count(elemInfo)), 0), 512)
            snd_ctl_elem_value_set_id(value, id)
            var eld: [UInt8] = []
            if snd_ctl_elem_read(ctl, value) >= 0, bytes > 0, let raw = snd_ctl_elem_value_get_bytes(value) {
                eld = Array(UnsafeRawBufferPointer(start: raw, count: bytes))
            }
            found.append(HDMIPlayback(card: Int(card), cardID: cardID, device: device, eld: eld))
        }
        return found
    }
}

/// The EDID of DRM connector `connector` (e.g. `HDMI-A-1`) as sysfs has it
/// (`/sys/class/drm/card*-<connector>/edid`); nil where there is none (no such connector, a
/// virtual one without EDID, nothing plugged in).
public func connectorEDID(_ connector: String, sysfs: String = "/sys/class/drm") -> [UInt8]? {
    guard !connector.contains("/"), let entries = try? FileManager.default.contentsOfDirectory(atPath: sysfs) else { return nil }
    for entry in entries.sorted() where entry.hasPrefix("card") && entry.hasSuffix("-" + connector) {
        if let data = FileManager.default.contents(atPath: "\(sysfs)/\(entry)/edid"), !data.isEmpty { return [UInt8](data) }
    }
    return nil
}
