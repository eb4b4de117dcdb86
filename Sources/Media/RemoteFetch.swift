import CFFmpeg
import CShim
import Dispatch
import Foundation
import Network
import SystemCalls

/// Downloads one remote file (`http`/`https`) into a local file through FFmpeg's own protocols,
/// with the checks every network input gets: the URL and its host's DNS answers against
/// `network.allow` before connecting, no redirects, only the listed schemes' protocols, a socket
/// timeout, and a deadline for the whole download in the interrupt callback.
public enum RemoteFetch {
    public struct Limits: Sendable {
        public var io: MediaIOLimits
        /// The most bytes one file may have.
        public var maxBytes: Int64
        /// The longest a whole download may take (seconds).
        public var maxSeconds: Double

        public init(io: MediaIOLimits, maxBytes: Int64, maxSeconds: Double) {
            (self.io, self.maxBytes, self.maxSeconds) = (io, maxBytes, maxSeconds)
        }
    }

    /// Writes `url`'s body to `path` (created or truncated) and returns its length. Throws naming
    /// the URL and why: refused by the list, the server's error, larger than allowed, too slow,
    /// or shorter than the length the server announced (a cut connection).
    public static func download(_ url: String, to path: String, limits: Limits,
                                resolve: @Sendable (String) throws -> [IPAddress] = { try SystemResolver.addresses(of: $0) }) throws -> Int64 {
        if case .refused(let reason) = limits.io.network.check(url, resolve: resolve) {
            throw MediaError(uri: url, call: "avio_open2", code: mq_averror(EPERM), reason: "refused by network.allow: \(reason)")
        }
        let deadline = Deadline(seconds: limits.maxSeconds)
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "protocol_whitelist", limits.io.network.protocolWhitelist, 0)
        NetworkGate.protocolOptions(&options, limits: limits.io)
        var interrupt = AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<Deadline>.fromOpaque(opaque).takeUnretainedValue().passed ? 1 : 0
        }, opaque: Unmanaged.passUnretained(deadline).toOpaque())
        var context: UnsafeMutablePointer<AVIOContext>?
        let opened = withExtendedLifetime(deadline) { avio_open2(&context, url, AVIO_FLAG_READ, &interrupt, &options) }
        guard opened >= 0, context != nil else {
            throw MediaError(uri: url, call: "avio_open2", code: opened,
                             reason: deadline.passed ? "no answer within \(limits.maxSeconds) s" : ffmpegErrorString(opened))
        }
        defer { avio_closep(&context) }
        let announced = avio_size(context)  // Content-Length; negative when the server gave none
        if announced > limits.maxBytes {
            throw MediaError(uri: url, call: "avio_size", reason: "\(announced) bytes, more than the cache allows per file (\(limits.maxBytes))")
        }
        guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
            throw MediaError(uri: path, call: "open", code: errno, reason: "cannot write the download: \(String(cString: strerror(errno)))")
        }
        defer { try? out.close() }
        var total: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = withExtendedLifetime(deadline) { buffer.withUnsafeMutableBufferPointer { avio_read(context, $0.baseAddress, Int32($0.count)) } }
            if n == averrorEOF || n == 0 { break }
            guard n > 0 else {
                let why = deadline.passed ? "not complete within \(limits.maxSeconds) s" : ffmpegErrorString(n)
                throw MediaError(uri: url, call: "avio_read", code: n,
                                 reason: announced >= 0 ? "the body ended after \(total) of the \(announced) bytes announced (\(why))" : "\(why) after \(total) bytes")
            }
            total += Int64(n)
            guard total <= limits.maxBytes else {
                throw MediaError(uri: url, call: "avio_read", reason: "more than the cache allows per file (\(limits.maxBytes) bytes)")
            }
            do { try out.write(contentsOf: Data(buffer[0..<Int(n)])) } catch {
                throw MediaError(uri: path, call: "write", reason: "cannot write the download: \(error)")
            }
        }
        if announced >= 0, total != announced {
            throw MediaError(uri: url, call: "avio_read", reason: "the body ended after \(total) of the \(announced) bytes announced")
        }
        return total
    }

    /// A monotonic deadline FFmpeg's interrupt callback reads.
    final class Deadline: Sendable {
        let end: UInt64
        init(seconds: Double) {
            let nanos = UInt64(min(max(seconds, 0), 1e6) * 1e9)
            end = DispatchTime.now().uptimeNanoseconds &+ nanos
        }
        var passed: Bool { DispatchTime.now().uptimeNanoseconds >= end }
    }
}
