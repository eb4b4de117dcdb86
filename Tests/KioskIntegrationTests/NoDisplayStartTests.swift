import Display
import Foundation
import Kiosk
import Testing
import TestSupport
@testable import KioskTests

/// Issue 32: on a machine with no display controller (a server, a VM without a GPU), `auto` used to
/// wait `display.waitForCard` (10 s) for a card that could never come before playing headless.
@Suite struct NoDisplayStartTests {
    @Test func autoOnAMachineWithoutADisplayControllerPlaysHeadlessWithoutWaiting() throws {
        guard displayHardware() == .none else {
            print("skipped: this machine has display hardware (\(displayHardware())), so auto rightly waits for its card")
            return
        }
        let clip = try TestMedia.clip(seconds: 1, fps: 30)
        let files = ConfigFileKindTests()
        let config = try files.config(#"{"playlist": [{"uri": "\#(clip)"}]}"#)
        let (status, output) = try files.marquee(["--config", config, "--exit-after", "1"], timeout: 9)
        #expect(status == 0, "marquee did not end within 9 s (the card wait is 10 s): \(output)")
        #expect(output.contains("headless without waiting") && !output.contains("msg=\"waiting for a display card\""), "\(output)")
    }
}

/// Issue 32: headless `auto` on a machine without a GPU draws without GL (`HeadlessPlanesOutput`),
/// so Mesa's driver and LLVM (about 50 MB resident) are never loaded; `gl` still loads them.
@Suite(.serialized) struct HeadlessScanoutProcessTests {
    typealias Running = MarqueeProcessTests.Running

    /// Marquee's mappings of Mesa's DRI driver and of LLVM while it plays `scanout`, with the
    /// `outputs` property's scan-out and a screenshot's top-left pixel.
    func play(scanout: String) throws -> (glMappings: Int, scanout: String?, reason: String, corner: [UInt8]) {
        let clip = try TestMedia.clip(seconds: 1, fps: 30, width: 240, height: 180)
        let config = TestMedia.folder + "/scanout-\(scanout)-\(UUID().uuidString.prefix(8)).json"
        try TestConfig.write(##"{"playlist": [{"uri": "\##(clip)"}], "display": {"scanout": "\##(scanout)", "background": "#204060"}}"##, to: config)
        let running = try Running(config: config, exitAfter: 20)
        let client = try running.connect()
        let outputs = client.request(["get_property", "outputs"], id: 1)?["data"]?.arrayValue?.first
        let shot = client.request(["screenshot"], id: 2)
        let maps = try String(contentsOfFile: "/proc/\(running.process.processIdentifier)/maps", encoding: .utf8)
        let gl = maps.split(separator: "\n").filter { $0.hasSuffix("_dri.so") || $0.contains("libLLVM") }.count
        let corner = Array(try decodePNG(try MarqueeProcessTests().png(shot)).prefix(3))
        return (gl, outputs?["scanout"]?.stringValue, outputs?["scanoutReason"]?.stringValue ?? "", corner)
    }

    @Test func autoWithoutARenderNodeLoadsNoGLAndGLLoadsIt() throws {
        guard renderNodes().isEmpty else {
            print("skipped: this machine has a GPU render node (\(renderNodes())), so headless auto rightly draws with GL")
            return
        }
        let auto = try play(scanout: "auto")
        #expect(auto.scanout == "planes" && auto.reason.contains("no GPU render node"), "\(auto)")
        #expect(auto.glMappings == 0, "\(auto.glMappings) mappings of Mesa's driver or LLVM")
        let gl = try play(scanout: "gl")
        #expect(gl.scanout == "gl")
        #expect(gl.glMappings > 0, "the gl path maps Mesa's driver and LLVM, so the check above can fail")
        // The 4:3 clip pillarboxed in 320x180 leaves the corner to the background on both paths.
        for (path, corner) in [("planes", auto.corner), ("gl", gl.corner)] {
            #expect(zip(corner, [0x20, 0x40, 0x60]).allSatisfy { abs(Int($0) - $1) <= 2 }, "\(path): \(corner)")
        }
    }
}
