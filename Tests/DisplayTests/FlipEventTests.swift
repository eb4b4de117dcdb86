@testable import Display
import Foundation
import Playback
import Testing

/// `DRMDevice.readFlipEvent` through libdrm's `drmHandleEvent`, on a FIFO standing in for the card:
/// the test writes the kernel's `struct drm_event_vblank` records into it.
@Suite("Page-flip events through drmHandleEvent (a FIFO as the card)")
struct FlipEventTests {
    final class Rig: @unchecked Sendable {  // the device locks what its readers share
        let path: String
        let device: DRMDevice
        let writer: FileHandle

        init() throws {
            path = NSTemporaryDirectory() + "/marquee-flip-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            #expect(mkfifo(path, 0o600) == 0)
            device = try DRMDevice(path: path, wantAtomic: false)   // O_RDWR: opening a FIFO does not wait
            writer = try #require(FileHandle(forWritingAtPath: path))
        }

        deinit {
            try? writer.close()
            device.close()
            unlink(path)
        }

        /// A DRM_EVENT_FLIP_COMPLETE record as the kernel writes it, for a flip queued with the
        /// device's user data (`userData` nil: with none).
        func flip(crtc: UInt32, sequence: UInt32, seconds: UInt32, microseconds: UInt32, userData: UInt64? = nil) -> Data {
            var bytes = Data()
            func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
            u32(2)   // DRM_EVENT_FLIP_COMPLETE
            u32(32)
            withUnsafeBytes(of: (userData ?? UInt64(UInt(bitPattern: device.flipUserData))).littleEndian) { bytes.append(contentsOf: $0) }
            u32(seconds)
            u32(microseconds)
            u32(sequence)
            u32(crtc)
            return bytes
        }
    }

    @Test("an event is read with its CRTC, sequence and time; another CRTC's event is kept for it")
    func eventsAreSortedByCRTC() throws {
        let rig = try Rig()
        rig.writer.write(rig.flip(crtc: 52, sequence: 7, seconds: 3, microseconds: 250) + rig.flip(crtc: 41, sequence: 9, seconds: 4, microseconds: 500))
        let mine = try rig.device.readFlipEvent(crtc: 41, timeout: 5, waitingFor: "CRTC 41's flip")
        #expect(mine == FlipEvent(sequence: 9, time: 4_000_500_000, crtc: 41))
        // Already read for CRTC 52: no data needed.
        let theirs = try rig.device.readFlipEvent(crtc: 52, timeout: 0.5, waitingFor: "CRTC 52's flip")
        #expect(theirs == FlipEvent(sequence: 7, time: 3_000_250_000, crtc: 52))
    }

}

final class Results: @unchecked Sendable {
    private let condition = NSCondition()
    private var byCRTC: [UInt32: [UInt32]] = [:]
    func add(_ crtc: UInt32, _ sequences: [UInt32]) { condition.withLock { byCRTC[crtc] = sequences; condition.broadcast() } }
    func wait(count: Int, timeout: Double) -> [UInt32: [UInt32]]? {
        condition.withLock {
            let deadline = Date().addingTimeInterval(timeout)
            while byCRTC.count < count && condition.wait(until: deadline) {}
            return byCRTC.count == count ? byCRTC : nil
        }
    }
}
