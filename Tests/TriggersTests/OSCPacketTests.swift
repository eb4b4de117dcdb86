import Inputs
import Testing

/// OSC packets through liblo, without a socket: messages round-trip, and garbage is refused with
/// an error naming the call, never a crash.
@Suite("OSC packets")
struct OSCPacketTests {
    @Test("a message with an int, a float, a string and a boolean round-trips")
    func roundTrip() throws {
        let message = OSCMessage(address: "/marquee/play", arguments: [.int(2), .float(0.5), .string("film"), .bool(true)])
        let packet = try message.encoded()
        #expect(packet.count % 4 == 0)
        let parsed = try OSCMessage.parse(packet)
        #expect(parsed == message, "\(parsed)")
        #expect(message.arguments.map(\.description) == ["2", "0.5", "film", "true"])
    }

    @Test("every truncation of a packet and 10,000 random packets are refused or parsed, never a crash")
    func garbageIsRefused() throws {
        let packet = try OSCMessage(address: "/a/b", arguments: [.string("xyz"), .int(7)]).encoded()
        for length in 1..<packet.count {
            #expect(throws: InputError.self) { try OSCMessage.parse(Array(packet[..<length])) }
        }
        var state: UInt64 = 29
        var refused = 0
        for _ in 0..<10_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let length = Int(state >> 54) + 1  // 1 to 1024 bytes
            var bytes: [UInt8] = []
            for _ in 0..<length {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            // Half of them start like a message, so the parser gets past the address.
            if state & 1 == 0 { bytes.replaceSubrange(0..<min(4, bytes.count), with: Array("/x\0\0".utf8).prefix(min(4, bytes.count))) }
            do { _ = try OSCMessage.parse(bytes) } catch {
                refused += 1
                #expect(error.call == "lo_message_deserialise")
            }
        }
        #expect(refused > 9_000, "refused \(refused) of 10,000")
        #expect(throws: InputError.self) { try OSCMessage.parse([UInt8](repeating: 0x2f, count: OSCMessage.largestPacket + 1)) }
    }

    @Test("endpoints: IPv4 and a port, loopback told apart")
    func endpoints() {
        #expect(UDPEndpoint(parsing: "127.0.0.1:9000")?.isLoopback == true)
        #expect(UDPEndpoint(parsing: "0.0.0.0:9000")?.isLoopback == false)
        #expect(UDPEndpoint(parsing: "localhost:9000") == nil)
        #expect(UDPEndpoint(parsing: "127.0.0.1:0") == nil)
        #expect(UDPEndpoint(parsing: "127.0.0.1:70000") == nil)
    }

    @Test("key names are libevdev's")
    func keyNames() {
        #expect(KeyCodes.code(named: "KEY_SPACE") == 57)
        #expect(KeyCodes.code(named: "BTN_0") == 0x100)
        #expect(KeyCodes.code(named: "KEY_NOPE") == nil)
    }
}
