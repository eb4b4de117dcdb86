/// An item's `live` options: how its network source is opened. RTSP's transport, latency against
/// smoothness, the lag bound (over `network.liveLatency`), and which HLS variant plays.
public struct LiveSourceOptions: Sendable, Equatable {
    /// RTSP's lower transport (`rtsp_transport`); nil: FFmpeg's own choice, UDP first and TCP when
    /// no UDP packet comes in time.
    public enum Transport: String, Sendable, CaseIterable { case tcp, udp }

    public enum Mode: String, Sendable, CaseIterable {
        /// As FFmpeg buffers by default: its probing and RTP's reordering queue (half a second).
        case smooth
        /// Nothing held that need not be: no demuxer buffering (`fflags nobuffer`), a short probe,
        /// and no RTP reordering queue (packets out of order are lost, not waited for).
        case lowLatency = "low-latency"
    }

    public var transport: Transport?
    public var mode: Mode
    /// The lag bound of this item's source (seconds, `LiveLatency`); nil: `network.liveLatency`.
    public var latency: Double?
    /// HLS: the tallest variant at most this many pixels high plays (the shortest if none is);
    /// nil: the one that best fits the output.
    public var maxHeight: Int?

    public init(transport: Transport? = nil, mode: Mode = .smooth, latency: Double? = nil, maxHeight: Int? = nil) {
        (self.transport, self.mode, self.latency, self.maxHeight) = (transport, mode, latency, maxHeight)
    }

    /// FFmpeg's demuxer options for a source of `scheme` (`avformat_open_input`'s dictionary).
    public func demuxerOptions(scheme: String) -> [(key: String, value: String)] {
        var options: [(key: String, value: String)] = []
        if scheme == "rtsp", let transport { options.append(("rtsp_transport", transport.rawValue)) }
        if mode == .lowLatency {
            options += [("fflags", "+nobuffer"), ("probesize", "262144"), ("analyzeduration", "500000")]
            if scheme == "rtsp" || scheme == "rtp" { options += [("reorder_queue_size", "0"), ("max_delay", "0")] }
        }
        return options
    }

    /// One variant of an HLS master playlist: its program, its picture's height and its bitrate.
    public struct Variant: Sendable, Equatable {
        public let program: Int
        public let height: Int
        public let bitrate: Int

        public init(program: Int, height: Int, bitrate: Int) {
            (self.program, self.height, self.bitrate) = (program, height, bitrate)
        }
    }

    /// The variant to play, of those with a known height: with `maxHeight`, the tallest at most
    /// that high (else the shortest); else the shortest at least `outputHeight` high, that is the
    /// smallest that is not scaled up (else the tallest). Same height: the higher bitrate. nil:
    /// no variant has a height, or no output height is known without `maxHeight` (FFmpeg's choice).
    public func variant(of variants: [Variant], outputHeight: Int?) -> Variant? {
        let known = variants.filter { $0.height > 0 }
        let byHeight = known.sorted { ($0.height, $0.bitrate) < ($1.height, $1.bitrate) }
        guard let shortest = byHeight.first, let tallest = byHeight.last else { return nil }
        let tallestAt: (Int) -> Variant? = { h in byHeight.filter { $0.height == h }.last }
        if let maxHeight {
            let fitting = byHeight.last { $0.height <= maxHeight }
            return fitting ?? tallestAt(shortest.height)
        }
        guard let outputHeight, outputHeight > 0 else { return nil }
        if let first = byHeight.first(where: { $0.height >= outputHeight }) { return tallestAt(first.height) }
        return tallest
    }
}
