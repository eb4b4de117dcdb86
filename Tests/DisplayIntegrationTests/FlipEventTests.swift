@testable import Display
import Foundation
import Playback
import Testing
@testable import DisplayTests

/// `DRMDevice.readFlipEvent` through libdrm's `drmHandleEvent`, on a FIFO standing in for the card:
/// the test writes the kernel's `struct drm_event_vblank` records into it.
@Suite("Page-flip events through drmHandleEvent (a FIFO as the card)")
struct FlipEventWaitTests {
    typealias Rig = FlipEventTests.Rig

    @Test("no event in time: a WaitTimeout naming what was waited for, after about the timeout")
    func timeoutNamesTheWait() throws {
        let rig = try Rig()
        let started = Date()
        let error = #expect(throws: WaitTimeout.self) {
            _ = try rig.device.readFlipEvent(crtc: 41, timeout: 0.3, waitingFor: "the page-flip event of CRTC 41")
        }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.3 && waited < 3, "waited \(waited) s")
        #expect(error?.description.contains("the page-flip event of CRTC 41") == true, "\(String(describing: error))")
    }

    @Test("a flip queued without the device's user data is left out, not handed to a wrong waiter")
    func foreignUserDataIsIgnored() throws {
        let rig = try Rig()
        rig.writer.write(rig.flip(crtc: 41, sequence: 1, seconds: 1, microseconds: 0, userData: 0))
        #expect(throws: WaitTimeout.self) { _ = try rig.device.readFlipEvent(crtc: 41, timeout: 0.3, waitingFor: "CRTC 41") }
        rig.writer.write(rig.flip(crtc: 41, sequence: 2, seconds: 1, microseconds: 0))
        #expect(try rig.device.readFlipEvent(crtc: 41, timeout: 5, waitingFor: "CRTC 41").sequence == 2)
    }

    @Test("two outputs' threads wait on one card at once: each gets its own CRTC's events, none is lost")
    func twoWaitersShareTheCard() throws {
        let rig = try Rig()
        let results = Results()
        let threads = [(41 as UInt32), 52].map { crtc in
            Thread {
                var got: [UInt32] = []
                for _ in 0..<20 {
                    guard let event = try? rig.device.readFlipEvent(crtc: crtc, timeout: 10, waitingFor: "CRTC \(crtc)") else { break }
                    #expect(event.crtc == crtc)
                    got.append(event.sequence)
                }
                results.add(crtc, got)
            }
        }
        threads.forEach { $0.start() }
        for sequence in 0..<20 as Range<UInt32> {
            usleep(2_000)
            rig.writer.write(rig.flip(crtc: sequence % 3 == 0 ? 52 : 41, sequence: sequence, seconds: 1, microseconds: 0))
            rig.writer.write(rig.flip(crtc: sequence % 3 == 0 ? 41 : 52, sequence: sequence, seconds: 1, microseconds: 0))
        }
        let all = try #require(results.wait(count: 2, timeout: 20), "the waiting threads did not finish")
        #expect(all[41] == Array(0..<20), "\(all)")
        #expect(all[52] == Array(0..<20), "\(all)")
    }
}
