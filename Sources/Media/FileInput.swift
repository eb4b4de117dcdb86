import CFFmpeg
import CShim
import Foundation
import Network
import Playback
import Synchronization
import SystemCalls

/// How long opening and reading a media file may block. A file that stalls longer fails its item
/// (naming the file and the wait) and its decode thread ends: a FIFO nobody writes to, a device
/// node, a stalled pipe or socket. A read of a regular file that the kernel itself blocks in (a hard
/// NFS mount, a dying USB stick) cannot be interrupted from here: only that item's thread waits.
public struct MediaIOLimits: Sendable {
    /// Opening a file: reading its header and its streams' parameters, all told (seconds).
    public var open: Double
    /// One read waiting for data that does not come (seconds).
    public var read: Double
    /// The network sources that may be opened (`NetworkGate`): none unless given.
    public var network = NetworkAllowList.none
    /// How a network source is opened (its item's `live` options): FFmpeg's demuxer options and
    /// the HLS variant played.
    public var source = LiveSourceOptions()
    /// The height the source's picture is shown at (pixels), for the HLS variant that fits it;
    /// nil: not known.
    public var fitHeight: Int?
    /// A reopened live source's frame rate, from its first open: the probe does not measure it
    /// again (20 to 40 frames, 0.8 to 1.6 s of a 25 fps stream, before the picture is back).
    var knownFrameRate: AVRational?

    public init(open: Double = 10, read: Double = 5) {
        self.open = open
        self.read = read
    }

    public static let standard = MediaIOLimits()
}

/// The state FFmpeg's callbacks read: the file descriptor, the deadline of the open, and whether a
/// wait timed out or the input was cancelled. Shared with C callbacks through an unretained pointer;
/// `FileInput` keeps it alive for as long as FFmpeg holds the pointer.
final class InputGuard: @unchecked Sendable {
    // @unchecked: `file`, `regular` and `limits` are set once; the rest are atomics.
    /// The file, closed when the guard goes (after FFmpeg's I/O context, which holds the guard).
    let file: FileDescriptor
    var fd: Int32 { file.rawValue }
    let regular: Bool
    /// A network URL, read by FFmpeg's own protocols: no descriptor of ours; each read has a
    /// deadline (`readDeadline`) that the interrupt callback enforces.
    let isNetwork: Bool
    let limits: MediaIOLimits
    /// Monotonic nanoseconds after which FFmpeg's interrupt callback stops the operation; 0: none.
    let deadline = Atomic<UInt64>(0)
    let cancelled = Atomic(false)
    /// Monotonic nanoseconds by which the read under way must return (network inputs); 0: none.
    let readDeadline = Atomic<UInt64>(0)
    /// Stops the read under way only (its reader was cancelled while others share the file:
    /// `Demuxer`); cleared before each read.
    let interruptRead = Atomic(false)
    /// Asked with the other reasons to stop: a caller's own deadline or cancel (a live source's).
    let interrupt: (@Sendable () -> Bool)?
    /// Set when a read waited `limits.read` for data, or the open passed its deadline.
    let readTimedOut = Atomic(false)
    let openTimedOut = Atomic(false)

    init(file: consuming FileDescriptor, regular: Bool, limits: MediaIOLimits, interrupt: (@Sendable () -> Bool)? = nil) {
        self.file = file
        self.regular = regular
        self.limits = limits
        self.interrupt = interrupt
        isNetwork = false
    }

    /// The guard of a network input. It owns no descriptor (-1: closing it does nothing).
    init(networkLimits limits: MediaIOLimits, interrupt: (@Sendable () -> Bool)? = nil) {
        file = FileDescriptor(adopting: -1)
        regular = false
        self.limits = limits
        self.interrupt = interrupt
        isNetwork = true
    }

    /// Gives the read about to start (network inputs) its deadline; `false` clears it.
    func armRead(_ on: Bool) {
        guard isNetwork else { return }
        readDeadline.store(on ? Self.now() &+ Self.nanoseconds(limits.read) : 0, ordering: .relaxed)
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return seconds >= 1e9 ? UInt64(1e18) : UInt64(seconds * 1e9)
    }

    /// Whether FFmpeg should stop what it is doing (AVIOInterruptCB).
    var shouldInterrupt: Bool {
        if cancelled.load(ordering: .relaxed) || readTimedOut.load(ordering: .relaxed)
            || interruptRead.load(ordering: .relaxed) || interrupt?() == true { return true }
        let readEnd = readDeadline.load(ordering: .relaxed)
        if readEnd != 0 && Self.now() > readEnd {
            readTimedOut.store(true, ordering: .relaxed)
            return true
        }
        let end = deadline.load(ordering: .relaxed)
        if end != 0 && Self.now() > end {
            openTimedOut.store(true, ordering: .relaxed)
            return true
        }
        return false
    }

    /// Reads up to `size` bytes into `buffer`: at once from a regular file; from anything else
    /// (a FIFO, a device, a socket) after waiting at most `limits.read` for data, in slices so that
    /// a cancel is seen within 50 ms. Returns the count, or a negative AVERROR.
    func read(into buffer: UnsafeMutablePointer<UInt8>, size: Int32) -> Int32 {
        guard size > 0 else { return 0 }
        if readTimedOut.load(ordering: .relaxed) { return mq_averror(ETIMEDOUT) }
        let waitEnd = Self.now() &+ Self.nanoseconds(limits.read)
        while true {
            if cancelled.load(ordering: .relaxed) || interruptRead.load(ordering: .relaxed) || interrupt?() == true {
                return mq_averror_exit()
            }
            if !regular {
                let now = Self.now()
                guard now < waitEnd else {
                    readTimedOut.store(true, ordering: .relaxed)
                    return mq_averror(ETIMEDOUT)
                }
                let slice = min(Double(waitEnd - now) / 1e9, 0.05)
                do {
                    guard try file.poll(timeout: slice) else { continue }
                } catch {
                    return mq_averror(error.errno)
                }
            }
            let fd = self.fd
            do {
                let n = try systemCall("read") { Glibc.read(fd, buffer, Int(size)) }
                return n > 0 ? Int32(clamping: n) : averrorEOF
            } catch where error.wouldBlock {
                continue
            } catch {
                return mq_averror(error.errno)
            }
        }
    }

    /// lseek for a regular file; `AVSEEK_SIZE` asks for its size.
    func seek(offset: Int64, whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 {
            var info = stat()
            return fstat(fd, &info) == 0 ? Int64(info.st_size) : Int64(mq_averror(errno))
        }
        let position = lseek(fd, off_t(offset), whence & ~AVSEEK_FORCE)
        return position < 0 ? Int64(mq_averror(errno)) : Int64(position)
    }
}

/// The file descriptor and the I/O context that reads it through `InputGuard`; frees both.
final class GuardedIO {
    let state: InputGuard
    let context: UnsafeMutablePointer<AVIOContext>

    init(path: String, limits: MediaIOLimits, interrupt: (@Sendable () -> Bool)? = nil) throws {
        // Named as the step it stands for (FFmpeg's own open), so a missing file reads as before.
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
        } catch {
            throw MediaError(uri: path, call: "avformat_open_input", code: mq_averror(error.errno), reason: error.reason)
        }
        var info = stat()
        let fd = file.rawValue
        do {
            try systemCall("fstat") { fstat(fd, &info) }
        } catch {
            throw MediaError(uri: path, call: "fstat", code: mq_averror(error.errno), reason: error.reason)
        }
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFDIR else {
            throw MediaError(uri: path, call: "avformat_open_input", code: mq_averror(EISDIR), reason: "is a directory")
        }
        let state = InputGuard(file: file, regular: kind == S_IFREG, limits: limits, interrupt: interrupt)
        let bufferSize: Int32 = 64 << 10
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(uri: path, call: "av_malloc", reason: "out of memory")
        }
        let read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, buffer, size in
            guard let opaque, let buffer else { return mq_averror(EINVAL) }
            return Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue().read(into: buffer, size: size)
        }
        let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
            guard let opaque else { return Int64(mq_averror(EINVAL)) }
            return Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue().seek(offset: offset, whence: whence)
        }
        let opaque = Unmanaged.passUnretained(state).toOpaque()
        guard let context = avio_alloc_context(buffer, bufferSize, 0, opaque, read, nil, state.regular ? seek : nil) else {
            av_free(buffer)
            throw MediaError(uri: path, call: "avio_alloc_context", reason: "out of memory")
        }
        if !state.regular { context.pointee.seekable = 0 }
        self.state = state
        self.context = context
    }

    deinit {
        av_freep(&context.pointee.buffer)  // FFmpeg may have replaced the buffer given
        var io: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&io)
        // The file closes with `state`, once nothing holds it.
    }
}

/// How many times each path was opened for demuxing (`FileInput`) in this process: tests count
/// an item's opens by it.
package enum FileOpens {
    private static let opened = Mutex<[String: Int]>([:])

    static func count(_ path: String) { opened.withLock { $0[path, default: 0] += 1 } }

    package static func of(_ path: String) -> Int { opened.withLock { $0[path] ?? 0 } }
}

/// One opened media file: its demuxer (`format`) reading through an I/O context of our own, so that
/// no open or read blocks past `MediaIOLimits`, with the header and stream parameters read.
/// FFmpeg may open further files only over the `file` protocol (`protocol_whitelist`), and images
/// are read as one picture, never as a numbered sequence (`pattern_type none`: `c%d.png` is a
/// file name). Owns the format context, the I/O context and the file descriptor; closes them in
/// that order.
final class FileInput {
    let path: String
    /// nil for a network URL: FFmpeg's protocols read it, through `gate`.
    private let io: GuardedIO?
    private let gate: NetworkGate?
    let format: UnsafeMutablePointer<AVFormatContext>
    let state: InputGuard

    /// Opens `path` and reads its header and stream parameters. Throws a `MediaError` naming the
    /// file, the step and the reason (a timeout says which wait and how long). `interrupt`, asked
    /// as FFmpeg works, stops the open and every read when it says true.
    init(path: String, limits: MediaIOLimits = .standard, interrupt: (@Sendable () -> Bool)? = nil) throws {
        self.path = path
        FileOpens.count(path)
        let network = NetworkURL.hasNetworkScheme(path)
        // Freed by its deinit when this init throws.
        let io = network ? nil : try GuardedIO(path: path, limits: limits, interrupt: interrupt)
        self.io = io
        let state = io?.state ?? InputGuard(networkLimits: limits, interrupt: interrupt)
        self.state = state
        let gate = network ? NetworkGate(allow: limits.network, limits: limits) : nil
        self.gate = gate
        if let refusal = gate?.admit(path) {
            throw MediaError(uri: path, call: "avformat_open_input", code: mq_averror(EPERM), reason: "refused by network.allow: \(refusal)")
        }
        guard let context = avformat_alloc_context() else {
            throw MediaError(uri: path, call: "avformat_alloc_context", reason: "out of memory")
        }
        if let io {
            context.pointee.pb = io.context
            context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        }
        context.pointee.interrupt_callback = AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt ? 1 : 0
        }, opaque: Unmanaged.passUnretained(state).toOpaque())
        var options: OpaquePointer?
        if let gate {
            gate.install(on: context)
            gate.openOptions(&options)
            let scheme = (try? NetworkURL(parsing: path))?.scheme ?? ""
            for (key, value) in limits.source.demuxerOptions(scheme: scheme) { av_dict_set(&options, key, value, 0) }
            if limits.knownFrameRate != nil { av_dict_set(&options, "fpsprobesize", "0", 0) }
        } else {
            av_dict_set(&options, "protocol_whitelist", "file", 0)
            av_dict_set(&options, "pattern_type", "none", 0)
        }
        defer { av_dict_free(&options) }
        state.deadline.store(InputGuard.now() &+ InputGuard.nanoseconds(limits.open), ordering: .relaxed)
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let r = avformat_open_input(&opened, path, nil, &options)
        // On failure avformat_open_input has freed the context.
        guard r >= 0, let opened else { throw Self.error(path, state, call: "avformat_open_input", code: r, gate: gate) }
        format = opened  // every property is set: deinit closes it from here on
        probeStarted = Double(InputGuard.now()) / 1e9
        let found = avformat_find_stream_info(opened, nil)
        guard found >= 0 else { throw Self.error(path, state, call: "avformat_find_stream_info", code: found, gate: gate) }
        if let rate = limits.knownFrameRate { Self.setFrameRate(rate, ofVideoIn: opened) }
        state.deadline.store(0, ordering: .relaxed)
        if network { chosenVariant = HLSVariants.choose(in: opened, options: limits.source, fitHeight: limits.fitHeight) }
    }

    /// Gives `rate` (`knownFrameRate`) to the video streams whose rate the probe left unknown or
    /// unusable (an RTP stream's is not zero, yet FFmpeg's guess from it is no frame rate).
    private static func setFrameRate(_ rate: AVRational, ofVideoIn format: UnsafeMutablePointer<AVFormatContext>) {
        for i in 0..<Int(format.pointee.nb_streams) {
            guard let stream = format.pointee.streams[i], stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO,
                  ContainerValue.framesPerSecond(av_guess_frame_rate(format, stream, nil)) == nil else { continue }
            stream.pointee.avg_frame_rate = rate
            stream.pointee.r_frame_rate = rate
        }
    }

    /// When the stream probe began (monotonic seconds, as `DispatchTime`): a live source's packets
    /// come from about then (an RTSP server plays from the open), and the probe's are played first
    /// (`LiveLatency.opened`).
    private(set) var probeStarted = 0.0

    /// The HLS variant played (`HLSVariants`), if the source has several.
    private(set) var chosenVariant: LiveSourceOptions.Variant?

    /// The URLs a network input opened and was refused (none for a file).
    var networkRecord: NetworkGate.Record { gate?.record.withLock { $0 } ?? NetworkGate.Record() }

    /// A failure of `call`, saying when it was a timeout.
    static func error(_ path: String, _ state: InputGuard, call: String, code: Int32, gate: NetworkGate? = nil) -> MediaError {
        if let refusal = gate?.lastRefusal {
            return MediaError(uri: path, call: call, code: code, reason: "refused by network.allow: \(refusal)")
        }
        if state.isNetwork && state.readTimedOut.load(ordering: .relaxed) {
            return MediaError(uri: path, call: call, code: code,
                              reason: "timed out: no data from the server for \(state.limits.read.formatted(decimals: 1)) s")
        }
        if state.readTimedOut.load(ordering: .relaxed) {
            let kind = state.regular ? "stalled storage?" : "not a regular file: a FIFO or device nobody writes to?"
            return MediaError(uri: path, call: call, code: code,
                              reason: "timed out: no data for \(state.limits.read.formatted(decimals: 1)) s (\(kind))")
        }
        if state.openTimedOut.load(ordering: .relaxed) {
            return MediaError(uri: path, call: call, code: code,
                              reason: "timed out: opening took over \(state.limits.open.formatted(decimals: 1)) s")
        }
        if state.cancelled.load(ordering: .relaxed) || state.interruptRead.load(ordering: .relaxed) {
            return MediaError(uri: path, call: call, code: code, reason: "cancelled")
        }
        return MediaError(uri: path, call: call, averror: code)
    }

    /// Whether a wait timed out or the input was cancelled: the item fails at once (a retry would
    /// only wait again).
    var isStopped: Bool {
        state.readTimedOut.load(ordering: .relaxed) || state.openTimedOut.load(ordering: .relaxed)
            || state.cancelled.load(ordering: .relaxed)
    }

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = format
        avformat_close_input(&context)
    }
}
