import CFFmpeg
import CShim
import Network
import Synchronization

/// `network.allow` enforced on one network input. FFmpeg opens every URL of an input through its
/// format context's `io_open`: the item's own URL, and what the demuxer reaches from it (HLS
/// variant playlists, segments, keys). This gate takes that hook: each URL is checked, and its
/// host's DNS answers, before FFmpeg may connect; a refused URL is never opened. Redirects are
/// not followed (`max_redirects` 0), so no server can send FFmpeg to a host the list does not
/// name; the protocols are only those the listed schemes need (`protocol_whitelist`, never
/// `file`). FFmpeg resolves the name again when it connects: a DNS answer that changes between
/// the two lookups is not seen.
final class NetworkGate: @unchecked Sendable {
    // @unchecked: `defaultOpen` is set once before FFmpeg may call `open`; the rest is a Mutex.
    typealias OpenFunction = @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
                                             UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32

    let allow: NetworkAllowList
    let limits: MediaIOLimits
    private let resolve: @Sendable (String) throws -> [IPAddress]
    /// FFmpeg's own `io_open`, called for the URLs allowed.
    private var defaultOpen: OpenFunction?

    struct Record: Sendable {
        var opened: [String] = []
        var refused: [String] = []
    }
    /// What was opened and refused, in order (for messages and tests).
    let record = Mutex(Record())

    init(allow: NetworkAllowList, limits: MediaIOLimits,
         resolve: @escaping @Sendable (String) throws -> [IPAddress] = { try SystemResolver.addresses(of: $0) }) {
        self.allow = allow
        self.limits = limits
        self.resolve = resolve
    }

    /// The options of the input's open: the protocols the list needs, no redirects, a socket
    /// timeout as well as the interrupt callback, and a new connection per HLS segment (a kept-alive
    /// connection would fetch the next URL without passing through `io_open`).
    func openOptions(_ options: inout OpaquePointer?) {
        av_dict_set(&options, "protocol_whitelist", allow.protocolWhitelist, 0)
        av_dict_set(&options, "http_persistent", "0", 0)
        av_dict_set(&options, "http_multiple", "0", 0)
        Self.protocolOptions(&options, limits: limits)
    }

    /// The options each connection gets: no redirects, and socket timeouts (microseconds) at twice
    /// the read limit, behind the interrupt callback's deadlines (whose errors say which wait).
    static func protocolOptions(_ options: inout OpaquePointer?, limits: MediaIOLimits) {
        av_dict_set(&options, "max_redirects", "0", 0)
        let micros = String(InputGuard.nanoseconds(limits.read * 2) / 1000)
        av_dict_set(&options, "rw_timeout", micros, 0)
        av_dict_set(&options, "timeout", micros, 0)  // RTSP's socket timeout
    }

    /// Checks the input's own URL before anything opens. Needed beside `io_open`: formats that open
    /// their own connections (RTSP, RTP) never call it for their URL.
    func admit(_ url: String) -> String? {
        switch allow.check(url, resolve: resolve) {
        case .refused(let reason):
            record.withLock { $0.refused.append(reason) }
            return reason
        case .allowed:
            return nil
        }
    }

    /// Takes `context`'s `io_open`; `context.opaque` must point to this gate while the context lives.
    func install(on context: UnsafeMutablePointer<AVFormatContext>) {
        defaultOpen = context.pointee.io_open
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.io_open = { s, pb, url, flags, options in
            guard let s, let opaque = s.pointee.opaque, let url else { return mq_averror(EINVAL) }
            return Unmanaged<NetworkGate>.fromOpaque(opaque).takeUnretainedValue().open(s, pb, String(cString: url), flags, options)
        }
    }

    private func open(_ s: UnsafeMutablePointer<AVFormatContext>, _ pb: UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
                      _ url: String, _ flags: Int32, _ options: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
        guard flags & AVIO_FLAG_WRITE == 0 else {
            record.withLock { $0.refused.append("\(url): writing is never allowed") }
            return mq_averror(EPERM)
        }
        switch allow.check(url, resolve: resolve) {
        case .refused(let reason):
            record.withLock { $0.refused.append(reason) }
            return mq_averror(EPERM)
        case .allowed:
            record.withLock { $0.opened.append(url) }
        }
        guard let defaultOpen else { return mq_averror(EINVAL) }
        if let options {
            Self.protocolOptions(&options.pointee, limits: limits)
            return defaultOpen(s, pb, url, flags, options)
        }
        var local: OpaquePointer?
        Self.protocolOptions(&local, limits: limits)
        defer { av_dict_free(&local) }
        return defaultOpen(s, pb, url, flags, &local)
    }

    /// The latest refusal, for the error of an open that failed.
    var lastRefusal: String? { record.withLock { $0.refused.last } }
}
