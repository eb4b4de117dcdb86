import CMicroHTTPD

/// SHA-256 of `bytes` (GnuTLS, which the server's TLS links already).
public func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    let result = bytes.withUnsafeBytes { input in
        digest.withUnsafeMutableBytes { output in
            gnutls_hash_fast(GNUTLS_DIG_SHA256, input.baseAddress, input.count, output.baseAddress)
        }
    }
    // Fails only without SHA-256 in GnuTLS (a FIPS build still has it): no digest matches then.
    if result != 0 { return [] }
    return digest
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths (a token's hash is
/// compared without telling, by how long it takes, how much of it matched).
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count, !a.isEmpty else { return false }
    var difference: UInt8 = 0
    for i in a.indices { difference |= a[i] ^ b[i] }
    return difference == 0
}

/// Lower-case hexadecimal.
public func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}
