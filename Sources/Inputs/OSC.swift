import CLiblo
import Foundation
import Playback
import SystemCalls
import Synchronization

/// One OSC argument as the trigger rules compare them.
public enum OSCArgument: Sendable, Equatable, CustomStringConvertible {
    case int(Int64)
    case float(Double)
    case string(String)
    case bool(Bool)
    /// A type the rules do not compare (blob, MIDI, time tag...): its type tag.
    case other(Character)

    /// As a rule writes it: `1`, `0.5`, `go`, `true`.
    public var description: String {
        switch self {
        case .int(let v): "\(v)"
        case .float(let v): v == v.rounded() && abs(v) < 1e15 ? "\(Int64(v))" : "\(v)"
        case .string(let s): s
        case .bool(let b): b ? "true" : "false"
        case .other(let tag): "<\(tag)>"
        }
    }
}

/// An OSC message: an address and its arguments.
public struct OSCMessage: Sendable, Equatable {
    public var address: String
    public var arguments: [OSCArgument]
    public init(address: String, arguments: [OSCArgument] = []) {
        self.address = address
        self.arguments = arguments
    }

    /// The largest packet read (larger datagrams are cut by the socket and refused by the parser).
    public static let largestPacket = 8192

    /// Parses one OSC packet (liblo); bundles and malformed packets throw.
    public static func parse(_ bytes: [UInt8]) throws(InputError) -> OSCMessage {
        guard !bytes.isEmpty, bytes.count <= largestPacket else {
            throw InputError(subject: "OSC packet", call: "lo_message_deserialise", code: 0, reason: "\(bytes.count) bytes (1 to \(largestPacket))")
        }
        var copy = bytes
        var result: Int32 = 0
        let parsed = copy.withUnsafeMutableBytes { raw in lo_message_deserialise(raw.baseAddress, raw.count, &result) }
        guard let message = parsed else {
            throw InputError(subject: "OSC packet", call: "lo_message_deserialise", code: result, reason: "not an OSC message (liblo error \(result))")
        }
        defer { lo_message_free(message) }
        // The address is the packet's first, NUL-terminated string (liblo checked it).
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        let address = String(decoding: bytes[..<end], as: UTF8.self)
        var arguments: [OSCArgument] = []
        let count = Int(lo_message_get_argc(message))
        if count > 0, let types = lo_message_get_types(message), let argv = lo_message_get_argv(message) {
            for i in 0..<count {
                let tag = UInt8(bitPattern: types[i])
                // True and false carry no data: their argument pointer may be null.
                if tag == UInt8(ascii: "T") || tag == UInt8(ascii: "F") {
                    arguments.append(.bool(tag == UInt8(ascii: "T")))
                    continue
                }
                guard let arg = argv[i] else {
                    arguments.append(.other(Character(Unicode.Scalar(tag))))
                    continue
                }
                switch tag {
                case UInt8(ascii: "i"): arguments.append(.int(Int64(arg.pointee.i)))
                case UInt8(ascii: "h"): arguments.append(.int(arg.pointee.h))
                case UInt8(ascii: "f"): arguments.append(.float(Double(arg.pointee.f)))
                case UInt8(ascii: "d"): arguments.append(.float(arg.pointee.d))
                case UInt8(ascii: "s"), UInt8(ascii: "S"):
                    let text = UnsafeRawPointer(arg).assumingMemoryBound(to: CChar.self)
                    arguments.append(.string(String(cString: text)))
                default: arguments.append(.other(Character(Unicode.Scalar(tag))))
                }
            }
        }
        return OSCMessage(address: address, arguments: arguments)
    }

    /// The packet for this message (liblo); ints, floats, strings and booleans only.
    public func encoded() throws(InputError) -> [UInt8] {
        guard let message = lo_message_new() else {
            throw InputError(subject: "OSC message \(address)", call: "lo_message_new", code: 0, reason: "out of memory")
        }
        defer { lo_message_free(message) }
        for argument in arguments {
            switch argument {
            case .int(let v): lo_message_add_int64(message, v)
            case .float(let v): lo_message_add_double(message, v)
            case .string(let s): lo_message_add_string(message, s)
            case .bool(let b): if b { lo_message_add_true(message) } else { lo_message_add_false(message) }
            case .other: break
            }
        }
        var size = 0
        guard let data = lo_message_serialise(message, address, nil, &size) else {
            throw InputError(subject: "OSC message \(address)", call: "lo_message_serialise", code: 0, reason: "the address or an argument is not valid OSC")
        }
        defer { free(data) }
        return Array(UnsafeRawBufferPointer(start: data, count: size))
    }
}

/// A UDP endpoint: an IPv4 address and port (`127.0.0.1:9000`).
public struct UDPEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    /// Parses `a.b.c.d:port`; nil when it is not one.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        let host = String(text[..<colon])
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        self.host = host
        self.port = port
    }

    public var isLoopback: Bool { host.hasPrefix("127.") }
    public var description: String { "\(host):\(port)" }

    func socketAddress() -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    /// A UDP socket bound to this endpoint, and the port it got (the system's choice for port 0);
    /// the caller owns the descriptor.
    func bound(subject: String) throws(InputError) -> (fd: Int32, port: UInt16) {
        let fd: Int32
        do {
            fd = try FileDescriptor.socket(domain: AF_INET, type: Int32(SOCK_DGRAM.rawValue), call: "socket(AF_INET, SOCK_DGRAM)").relinquish()
        } catch {
            throw InputError.errno(subject, error.call, error.errno)
        }
        guard withSocketAddress({ bind(fd, $0, $1) }) == 0 else {
            let code = errno
            close(fd)
            throw InputError.errno(subject, "bind", code)
        }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = socketAddress()
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}

/// Receives OSC messages on a UDP address on a thread of its own (**marquee-osc**). Packets are
/// read one at a time into one buffer and handled before the next: a flood fills the kernel's
/// socket buffer (whose overflow the kernel drops), never a queue here. Malformed packets are
/// counted and the first is logged.
public final class OSCReceiver: @unchecked Sendable {
    // @unchecked: the socket is owned by the thread; the rest are atomics and immutable.
    public let endpoint: UDPEndpoint
    /// The port bound (the one asked for, or the one the system chose for port 0 in tests).
    public let boundPort: UInt16
    private let thread = InputThreadState()
    /// Messages received and handed on.
    public var received: Int { thread.count.load(ordering: .relaxed) }
    /// Packets that were not OSC messages.
    public var malformed: Int { thread.refused.load(ordering: .relaxed) }

    /// Binds `endpoint` and starts reading; `onMessage` runs on the receiving thread.
    public init(endpoint: UDPEndpoint, logger: Logger, onMessage: @escaping @Sendable (OSCMessage) -> Void) throws(InputError) {
        self.endpoint = endpoint
        let (fd, port) = try endpoint.bound(subject: "OSC on \(endpoint)")
        boundPort = port
        let thread = thread
        startThread(named: "marquee-osc") {
            let descriptor = FileDescriptor(adopting: fd)
            defer { _ = thread.finished.set(true) }
            var buffer = [UInt8](repeating: 0, count: OSCMessage.largestPacket)
            var loggedMalformed = false
            while !thread.isStopping {
                guard (try? descriptor.poll(timeout: 0.25)) == true else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard count > 0 else { continue }
                do {
                    let message = try OSCMessage.parse(Array(buffer[..<count]))
                    thread.count.add(1, ordering: .relaxed)
                    onMessage(message)
                } catch {
                    thread.refused.add(1, ordering: .relaxed)
                    if !loggedMalformed {
                        loggedMalformed = true
                        logger.warning("malformed OSC packet ignored (further ones are counted, not logged)",
                                       ["endpoint": "\(endpoint)", "bytes": "\(count)", "error": "\(error)"])
                    }
                }
            }
        }
    }

    /// Stops reading and closes the socket (waits up to a second for the thread).
    public func stop() { thread.stop() }

    deinit { thread.stopping.store(true, ordering: .relaxed) }
}

/// Sends OSC messages to one UDP endpoint (a lamp, a lighting desk).
public final class OSCSender: Sendable {
    public let endpoint: UDPEndpoint
    private let fd: Int32

    public init(endpoint: UDPEndpoint) throws(InputError) {
        self.endpoint = endpoint
        do {
            fd = try FileDescriptor.socket(domain: AF_INET, type: Int32(SOCK_DGRAM.rawValue), call: "socket(AF_INET, SOCK_DGRAM)").relinquish()
        } catch {
            throw InputError.errno("OSC to \(endpoint)", error.call, error.errno)
        }
    }

    /// Sends `message` without waiting (a full socket buffer drops it, as UDP would).
    public func send(_ message: OSCMessage) throws(InputError) {
        let packet = try message.encoded()
        let sent = endpoint.withSocketAddress { address, length in
            packet.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), address, length) }
        }
        guard sent == packet.count else { throw InputError.errno("OSC to \(endpoint)", "sendto", errno) }
    }

    deinit { close(fd) }
}
