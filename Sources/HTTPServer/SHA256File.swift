import CMicroHTTPD
import Foundation

/// A file could not be hashed: the call that failed and its errno or GnuTLS return code.
public struct FileHashError: Error, CustomStringConvertible {
    public let path: String
    public let call: String
    public let code: Int32
    public var description: String { "\(path): \(call) failed (\(code == 0 ? "" : "\(code): ")\(reason))" }
    let reason: String
}

/// SHA-256 of the file at `path`, read in one pass through a 64 KiB buffer (memory stays bounded
/// whatever the file's size), through GnuTLS's streaming hash.
public func sha256(ofFile path: String) throws(FileHashError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw FileHashError(path: path, call: "open", code: errno, reason: String(cString: strerror(errno))) }
    defer { close(fd) }
    var handle: gnutls_hash_hd_t?
    let started = gnutls_hash_init(&handle, GNUTLS_DIG_SHA256)
    guard started == 0, let handle else {
        throw FileHashError(path: path, call: "gnutls_hash_init", code: started, reason: String(cString: gnutls_strerror(started)))
    }
    var digest = [UInt8](repeating: 0, count: 32)
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var failure: FileHashError?
    while failure == nil {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            failure = FileHashError(path: path, call: "read", code: errno, reason: String(cString: strerror(errno)))
        } else if count == 0 {
            break
        } else {
            let added = buffer.withUnsafeBytes { gnutls_hash(handle, $0.baseAddress, count) }
            if added != 0 { failure = FileHashError(path: path, call: "gnutls_hash", code: added, reason: String(cString: gnutls_strerror(added))) }
        }
    }
    // Deinit frees the handle whether or not the digest is wanted.
    digest.withUnsafeMutableBytes { gnutls_hash_deinit(handle, $0.baseAddress) }
    if let failure { throw failure }
    return digest
}
