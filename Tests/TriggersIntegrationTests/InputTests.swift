import Foundation
import Inputs
import Playback
import PlaybackTestSupport
import Synchronization
import Testing
import Triggers

/// Inputs for real: OSC over loopback UDP (messages, garbage and floods), key devices that are
/// missing or not devices, GPIO chips that are not there.
@Suite("Trigger inputs", .serialized)
struct InputTests {
    /// A logger whose lines the test reads.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger(level: .debug, sink: { [self] line in lines.withLock { $0.append(line) } }) }
        func count(_ text: String) -> Int { lines.withLock { $0.filter { $0.contains(text) }.count } }
    }

    /// Waits up to `seconds` for `condition`, polling every 10 ms.
    func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @Test("OSC on loopback: a message arrives with its arguments; a datagram to the port fires the rule")
    func oscMessageArrives() throws {
        let got = Mutex<[OSCMessage]>([])
        let receiver = try OSCReceiver(endpoint: UDPEndpoint(parsing: "127.0.0.1:1")!.withPort(0), logger: quiet) { message in
            got.withLock { $0.append(message) }
        }
        defer { receiver.stop() }
        let sender = try OSCSender(endpoint: UDPEndpoint(parsing: "127.0.0.1:\(receiver.boundPort)")!)
        try sender.send(OSCMessage(address: "/marquee/play", arguments: [.int(2)]))
        #expect(within(5) { !got.withLock { $0.isEmpty } })
        #expect(got.withLock { $0 } == [OSCMessage(address: "/marquee/play", arguments: [.int(2)])])
    }

    @Test("a flood of 20,000 garbage and valid packets: no crash, garbage counted and logged once, the engine drops past its limit, and a message after it still arrives")
    func oscFloodAndGarbage() throws {
        let lines = Lines()
        let engine = Mutex(TriggerEngine(rules: [TriggerRule(source: .osc("/go"), plays: false)]))
        let fired = Atomic(0)
        let marker = Atomic(false)
        let receiver = try OSCReceiver(endpoint: UDPEndpoint(parsing: "127.0.0.1:1")!.withPort(0), logger: lines.logger) { message in
            if message.address == "/marker" { marker.store(true, ordering: .relaxed); return }
            let effects = engine.withLock { $0.pulse(.osc(message.address), at: inputClockSeconds()) }
            fired.add(effects.filter { if case .fire = $0 { true } else { false } }.count, ordering: .relaxed)
        }
        defer { receiver.stop() }
        let target = UDPEndpoint(parsing: "127.0.0.1:\(receiver.boundPort)")!
        let sender = try OSCSender(endpoint: target)
        let raw = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(raw) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = receiver.boundPort.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var garbageSent = 0
        let started = ContinuousClock.now
        for i in 0..<10_000 {
            var junk = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 1 + i % 200)
            if i % 3 == 0 { junk[0] = 0x2f }  // starts like an address
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(raw, junk, junk.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if sent > 0 { garbageSent += 1 }
            try? sender.send(OSCMessage(address: "/go"))
        }
        let floodSeconds = (ContinuousClock.now - started).seconds
        usleep(200_000)
        try sender.send(OSCMessage(address: "/marker"))
        #expect(within(10) { marker.load(ordering: .relaxed) }, "a message after the flood arrives")
        let counters = engine.withLock { $0.counters }
        print("OSC flood: \(garbageSent) garbage + 10000 valid in \(floodSeconds.formatted(decimals: 2)) s; received \(receiver.received), malformed \(receiver.malformed), engine presses \(counters.presses) fired \(fired.load(ordering: .relaxed)) dropped \(counters.dropped)")
        #expect(receiver.malformed > 0)
        #expect(lines.count("malformed OSC packet") == 1, "the garbage is logged once")
        // At most the limit a second passes the engine (the flood lasted floodSeconds + the wait).
        #expect(fired.load(ordering: .relaxed) <= TriggerEngine.pressLimit * (Int(floodSeconds) + 2))
        #expect(counters.dropped == counters.presses - fired.load(ordering: .relaxed))
    }

    @Test("binding an address in use fails with an error naming bind and its errno")
    func bindFailureIsAnError() throws {
        let first = try OSCReceiver(endpoint: UDPEndpoint(parsing: "127.0.0.1:1")!.withPort(0), logger: quiet) { _ in }
        defer { first.stop() }
        #expect {
            _ = try OSCReceiver(endpoint: UDPEndpoint(parsing: "127.0.0.1:\(first.boundPort)")!, logger: quiet) { _ in }
        } throws: { error in
            (error as? InputError)?.call == "bind" && (error as? InputError)?.code == EADDRINUSE
        }
    }

    @Test("key devices that are missing or not input devices: logged once each, never fatal; the thread goes on")
    func keyDevicesThatFail() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("marquee-keys-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let notADevice = folder.appendingPathComponent("event0").path
        FileManager.default.createFile(atPath: notADevice, contents: Data([1, 2, 3]))
        let lines = Lines()
        let keys = KeyInputs(paths: [notADevice, folder.appendingPathComponent("event9").path], logger: lines.logger) { _, _, _ in }
        #expect(within(5) { lines.count("cannot be opened") == 2 })
        usleep(UInt32(KeyInputs.rescanInterval * 2.5e6))  // two rescans more
        keys.stop()
        #expect(lines.count("cannot be opened") == 2, "logged once each, not at every rescan")
        #expect(lines.count("libevdev_new_from_fd") == 1 && lines.count("open failed") == 1)
        #expect(keys.openDevices == 0)
    }

    @Test("a GPIO chip that is not there: logged once, retried, never fatal")
    func missingGPIOChip() throws {
        let lines = Lines()
        let gpio = GPIOInputs(lines: [GPIOLine(chip: "gpiochip-marquee-test", line: 3)], logger: lines.logger) { _, _, _ in }
        #expect(within(5) { lines.count("GPIO input cannot be opened") == 1 })
        #expect(lines.count("gpiod_chip_open_lookup") == 1)
        gpio.stop()
        #expect(gpio.openLines == 0)
    }

    @Test("a real chip's line is requested for edges", .disabled(if: !GPIOInputs.chipsPresent, "this machine has no GPIO chip (/dev/gpiochip*); gpio-sim in the VM would give one"))
    func gpioLineOpens() throws {
        let gpio = GPIOInputs(lines: [GPIOLine(chip: "gpiochip0", line: 0)], logger: quiet) { _, _, _ in }
        defer { gpio.stop() }
        #expect(within(5) { gpio.openLines == 1 })
    }
}

extension UDPEndpoint {
    func withPort(_ port: UInt16) -> UDPEndpoint {
        var copy = self
        copy.port = port
        return copy
    }
}
