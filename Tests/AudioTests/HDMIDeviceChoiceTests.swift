import Audio
import Foundation
import Testing

/// Fixtures laid out as the kernel makes them: an EDID base block (header, PNP manufacturer
/// ID, product code, a monitor name descriptor) and the ELD drm_edid_to_eld builds from it.
enum MonitorFixtures {
    /// "DEL" as the EDID packs it (5 bits a letter, big-endian).
    static func pnp(_ id: String) -> UInt16 {
        id.unicodeScalars.reduce(0) { $0 << 5 | UInt16($1.value - 64) }
    }

    static func edid(name: String?, manufacturer: String, product: UInt16) -> [UInt8] {
        var e = [UInt8](repeating: 0, count: 128)
        e[0..<8] = [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00]
        let m = pnp(manufacturer)
        e[8] = UInt8(m >> 8); e[9] = UInt8(m & 0xFF)
        e[10] = UInt8(product & 0xFF); e[11] = UInt8(product >> 8)
        e[18] = 1; e[19] = 3
        // Descriptor 1: a detailed timing (pixel clock non-zero); 2: serial text; 3: the name.
        e[54] = 0x02; e[55] = 0x3A
        e[72..<77] = [0, 0, 0, 0xFF, 0]
        for (i, b) in "SERIAL42\n".utf8.enumerated() { e[77 + i] = b }
        if let name {
            e[90..<95] = [0, 0, 0, 0xFC, 0]
            var text = Array(name.utf8.prefix(13))
            if text.count < 13 { text.append(0x0A) }
            while text.count < 13 { text.append(0x20) }
            e[95..<108] = text[0..<13]
        }
        e[127] = UInt8((256 - e[0..<127].reduce(0) { ($0 + Int($1)) } % 256) % 256)
        return e
    }

    static func eld(name: String, manufacturer: String, product: UInt16) -> [UInt8] {
        let nameBytes = Array(name.utf8.prefix(16))
        var e = [UInt8](repeating: 0, count: 20 + nameBytes.count + 3)
        e[0] = 2 << 3  // ELD version 2
        e[2] = UInt8((e.count - 4 + 3) / 4)
        e[4] = UInt8(3 << 5) | UInt8(nameBytes.count)  // CEA-861-D, monitor name length
        e[5] = 1 << 4  // one SAD, HDMI
        let m = pnp(manufacturer)
        e[16] = UInt8(m >> 8); e[17] = UInt8(m & 0xFF)
        e[18] = UInt8(product & 0xFF); e[19] = UInt8(product >> 8)
        e[20..<(20 + nameBytes.count)] = nameBytes[...]
        e[(20 + nameBytes.count)...] = [0x09, 0x07, 0x07]  // LPCM 2 ch, 32-48 kHz, 16-24 bit
        return e
    }
}

@Suite struct HDMIDeviceChoiceTests {
    typealias F = MonitorFixtures

    @Test func anEDIDAndItsELDNameTheSameMonitor() throws {
        let edid = try #require(MonitorIdentity.fromEDID(F.edid(name: "DELL U2415", manufacturer: "DEL", product: 0xA0B1)))
        #expect(edid.name == "DELL U2415")
        #expect(edid.manufacturerID == "DEL")
        #expect(edid.product == 0xA0B1)
        let eld = try #require(MonitorIdentity.fromELD(F.eld(name: "DELL U2415", manufacturer: "DEL", product: 0xA0B1)))
        #expect(eld == edid)
        #expect(eld.matches(edid))
        #expect(!eld.matches(MonitorIdentity(name: "DELL U2415", manufacturer: edid.manufacturer, product: 0xA0B2)))
        #expect(!eld.matches(MonitorIdentity(name: "LG TV", manufacturer: nil, product: nil)))
        // Names alone (case and padding aside) where the codes are unknown.
        #expect(eld.matches(MonitorIdentity(name: " dell u2415 ", manufacturer: nil, product: nil)))
        // Nothing to compare is no match.
        #expect(!MonitorIdentity(name: nil, manufacturer: nil, product: nil).matches(eld))
    }

    @Test func whatIsNotAnEDIDOrAnELDIsNothing() {
        #expect(MonitorIdentity.fromEDID([]) == nil)
        #expect(MonitorIdentity.fromEDID([UInt8](repeating: 0xFF, count: 128)) == nil)
        #expect(MonitorIdentity.fromELD([]) == nil)  // an empty ELD: nothing on that pin
        #expect(MonitorIdentity.fromELD([UInt8](repeating: 0, count: 64)) == nil)
        var short = F.eld(name: "A LONG MONITOR", manufacturer: "GSM", product: 1)
        short.removeLast(8)  // says 14 name bytes, holds fewer
        #expect(MonitorIdentity.fromELD(short) == nil)
        // An EDID without a name descriptor still has its codes.
        let unnamed = MonitorIdentity.fromEDID(F.edid(name: nil, manufacturer: "SAM", product: 7))
        #expect(unnamed?.name == nil && unnamed?.manufacturerID == "SAM")
    }

    /// Two HDMI pins on one card and one on another; the output's monitor is on card 1's device 7.
    @Test func autoPicksThePCMWhoseELDNamesTheConnectorsMonitor() {
        let monitor = MonitorIdentity.fromEDID(F.edid(name: "LG TV", manufacturer: "GSM", product: 0x5B7F))
        let pcms = [
            HDMIPlayback(card: 0, cardID: "PCH", device: 3, eld: F.eld(name: "DELL U2415", manufacturer: "DEL", product: 0xA0B1)),
            HDMIPlayback(card: 0, cardID: "PCH", device: 7, eld: []),
            HDMIPlayback(card: 1, cardID: "NVidia", device: 7, eld: F.eld(name: "LG TV", manufacturer: "GSM", product: 0x5B7F)),
        ]
        let choice = AudioDeviceChoice.auto(connector: "HDMI-A-2", monitor: monitor, hdmi: pcms, hasCard: true)
        #expect(choice.device == "plughw:CARD=NVidia,DEV=7", "\(choice)")
        #expect(choice.reason.contains("LG TV") && choice.reason.contains("HDMI-A-2"), "\(choice.reason)")
    }

    @Test func autoFallsBackToDefaultAndSaysWhy() {
        let dell = F.eld(name: "DELL U2415", manufacturer: "DEL", product: 0xA0B1)
        let lg = MonitorIdentity.fromEDID(F.edid(name: "LG TV", manufacturer: "GSM", product: 0x5B7F))
        let cases: [(AudioDeviceChoice, String?, String)] = [
            (.auto(connector: "HDMI-A-1", monitor: lg, hdmi: [], hasCard: false), nil, "no sound card"),
            (.auto(connector: nil, monitor: nil, hdmi: [], hasCard: true), "default", "no connector"),
            (.auto(connector: "Virtual-1", monitor: nil, hdmi: [], hasCard: true), "default", "no EDID on connector Virtual-1"),
            (.auto(connector: "HDMI-A-1", monitor: lg, hdmi: [], hasCard: true), "default", "no HDMI/DisplayPort PCM with an ELD"),
            (.auto(connector: "HDMI-A-1", monitor: lg, hdmi: [HDMIPlayback(card: 0, cardID: "PCH", device: 3, eld: dell)], hasCard: true),
             "default", "DELL U2415"),
            // Two identical monitors: which pin is which cannot be told from the ELDs.
            (.auto(connector: "DP-1", monitor: MonitorIdentity.fromELD(dell),
                   hdmi: [HDMIPlayback(card: 0, cardID: "PCH", device: 3, eld: dell), HDMIPlayback(card: 0, cardID: "PCH", device: 7, eld: dell)],
                   hasCard: true), "default", "the same monitor twice"),
        ]
        for (choice, device, why) in cases {
            #expect(choice.device == device, "\(choice)")
            #expect(choice.reason.contains(why), "\(choice.reason) should say \(why)")
        }
    }

    /// On this machine (no sound card here; the VM's snd-aloop has no HDMI pins): the scan lists
    /// what /proc/asound lists, and no HDMI PCM without an ELD control.
    @Test func theScanAgreesWithProcAsound() {
        let scan = ALSACards.scan()
        let proc = (try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8)) ?? ""
        let listed = proc.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }) }
        #expect(scan.cards == listed, "\(scan.cards) vs /proc/asound/cards \(listed); problems \(scan.problems)")
    }
}
