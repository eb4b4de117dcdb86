#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16, network order).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public var isIPv4: Bool { bytes.count == 4 }

    /// Parses a literal address (`192.0.2.1`, `2001:db8::1`); nil for anything else, host names
    /// included.
    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            let all = withUnsafeBytes(of: v6) { Array($0) }
            // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address: one rule covers both.
            bytes = all[0..<10].allSatisfy { $0 == 0 } && all[10] == 0xff && all[11] == 0xff ? Array(all[12...]) : all
        } else {
            return nil
        }
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv4 ? AF_INET : AF_INET6
        let text = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard text != nil else { return bytes.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Loopback, link-local (cloud metadata at 169.254.169.254 among them), unspecified or
    /// multicast: addresses a host name must not lead to unless a rule names them by address.
    public var isSpecial: Bool {
        if isIPv4 {
            return bytes[0] == 127 || (bytes[0] == 169 && bytes[1] == 254) || bytes.allSatisfy { $0 == 0 }
                || (224...239).contains(bytes[0])
        }
        let loopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
        return loopback || bytes.allSatisfy { $0 == 0 } || bytes[0] == 0xff || (bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80)
    }
}

/// An address block: `10.0.0.0/8`, `fd00::/8`; a lone address is a block of one.
public struct CIDRBlock: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    public var description: String { "\(network)/\(prefixLength)" }

    /// Parses `address/length` or a lone address. Nil when the address is not a literal or the
    /// length is outside 0...32 (IPv4) or 0...128 (IPv6).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        let bits = parts[0].contains(":") ? 128 : 32
        var length = bits
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                  let n = Int(parts[1]), (0...bits).contains(n) else { return nil }
            // An IPv4-mapped block is written with IPv6 lengths: /96 and up keep their IPv4 part.
            length = parts[0].contains(":") && address.isIPv4 ? n - 96 : n
            guard length >= 0 else { return nil }
        }
        network = address
        prefixLength = length
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address.bytes, network.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> UInt8(remaining))
            guard a & mask == b & mask else { return false }
            remaining -= 8
        }
        return true
    }
}
