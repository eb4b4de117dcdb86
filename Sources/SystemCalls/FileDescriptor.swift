#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor with one owner: closed when its owner lets it go (deinit), or by
/// `close()`, which reports the error. Not copyable, so no two owners can close it; `rawValue` is
/// for the C calls that take it, borrowed for the length of the call.
public struct FileDescriptor: ~Copyable, Sendable {
    public let rawValue: Int32

    /// Takes ownership of `rawValue` (a descriptor that nothing else closes).
    public init(adopting rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        // Linux releases the descriptor even when close(2) fails (EINTR included): never retried.
        _ = Glibc.close(rawValue)
    }

    /// Closes the descriptor; throws when the kernel reports an error (a delayed write error on
    /// a file, for example). The descriptor is released either way.
    public consuming func close() throws(SystemCallError) {
        let fd = rawValue
        discard self
        if Glibc.close(fd) == -1 && errno != EINTR {
            throw SystemCallError(call: "close(fd \(fd))", errno: errno)
        }
    }

    /// Gives up ownership without closing: the caller (or a C library it hands it to) closes it.
    public consuming func relinquish() -> Int32 {
        let fd = rawValue
        discard self
        return fd
    }

    // MARK: Opening

    /// `open(2)` with `O_CLOEXEC` added.
    public static func open(_ path: String, _ flags: Int32, permissions: mode_t = 0) throws(SystemCallError) -> FileDescriptor {
        FileDescriptor(adopting: try systemCall("open(\(path))") { Glibc.open(path, flags | O_CLOEXEC, permissions) })
    }

    /// `socket(2)` with `SOCK_CLOEXEC` added; `call` names it in errors.
    public static func socket(domain: Int32, type: Int32, protocol: Int32 = 0,
                              call: @autoclosure () -> String = "socket") throws(SystemCallError) -> FileDescriptor {
        FileDescriptor(adopting: try systemCall(call()) { Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`) })
    }

    /// A pipe's two ends, close-on-exec; `flags` may add `O_NONBLOCK` to both. (Glibc's module
    /// has no `pipe2`: the flags are set right after, before anything can start a program.)
    public static func pipe(flags: Int32 = 0) throws(SystemCallError) -> Pipe {
        var ends: [Int32] = [-1, -1]
        try systemCall("pipe") { Glibc.pipe(&ends) }
        let pipe = Pipe(readEnd: FileDescriptor(adopting: ends[0]), writeEnd: FileDescriptor(adopting: ends[1]))
        for fd in ends {
            try systemCall("fcntl(fd \(fd), F_SETFD, FD_CLOEXEC)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
            if flags & O_NONBLOCK != 0 {
                let current = try systemCall("fcntl(fd \(fd), F_GETFL)") { fcntl(fd, F_GETFL) }
                try systemCall("fcntl(fd \(fd), F_SETFL)") { fcntl(fd, F_SETFL, current | O_NONBLOCK) }
            }
        }
        return pipe
    }

    /// A new descriptor for the same open file (`F_DUPFD_CLOEXEC`).
    public func duplicate() throws(SystemCallError) -> FileDescriptor {
        let fd = rawValue
        return FileDescriptor(adopting: try systemCall("fcntl(fd \(fd), F_DUPFD_CLOEXEC)") { fcntl(fd, F_DUPFD_CLOEXEC, 0) })
    }

    /// Sets or clears `O_NONBLOCK`.
    public func setNonBlocking(_ on: Bool = true) throws(SystemCallError) {
        let fd = rawValue
        let flags = try systemCall("fcntl(fd \(fd), F_GETFL)") { fcntl(fd, F_GETFL) }
        try systemCall("fcntl(fd \(fd), F_SETFL)") { fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) }
    }

    // MARK: Reading and writing

    /// `read(2)` into `buffer`, retried on EINTR: the count read (0 at the end of the file).
    /// Throws `SystemCallError` (`wouldBlock` on a non-blocking descriptor with nothing to read).
    public func read(into buffer: UnsafeMutableRawBufferPointer, call: @autoclosure () -> String = "read") throws(SystemCallError) -> Int {
        let fd = rawValue
        return try systemCall("\(call())(fd \(fd))") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `write(2)` of `bytes`, retried on EINTR: the count written (possibly fewer than asked).
    public func write(_ bytes: UnsafeRawBufferPointer, call: @autoclosure () -> String = "write") throws(SystemCallError) -> Int {
        let fd = rawValue
        return try systemCall("\(call())(fd \(fd))") { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    // MARK: Waiting

    /// Waits up to `timeout` seconds (0: only looks; negative counts as 0) until the descriptor is
    /// ready for `events` (`POLLIN` by default); true when it is (or has an error or hang-up to
    /// report: the next read says which), false when the time ran out. EINTR waits on for the
    /// time that is left.
    public func poll(_ events: Int16 = Int16(POLLIN), timeout: Double) throws(SystemCallError) -> Bool {
        try FileDescriptor.poll(rawValue, events, timeout: timeout)
    }

    /// `poll` on a descriptor this process holds elsewhere (one a C library owns).
    public static func poll(_ fd: Int32, _ events: Int16 = Int16(POLLIN), timeout: Double) throws(SystemCallError) -> Bool {
        let seconds = timeout.isFinite ? min(max(timeout, 0), 86_400) : 86_400
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        while true {
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let left = max(0, deadline - monotonicNanoseconds())
            // Rounded up, so that a wait never ends before its deadline.
            let milliseconds = Int32((left + 999_999) / 1_000_000)
            let ready = Glibc.poll(&entry, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 {
                if monotonicNanoseconds() >= deadline { return false }
                continue
            }
            let code = errno
            if code == EINTR { continue }
            throw SystemCallError(call: "poll(fd \(fd))", errno: code)
        }
    }
}

extension FileDescriptor {
    /// The two ends of a pipe, each with its own owner.
    @frozen public struct Pipe: ~Copyable, Sendable {
        public var readEnd: FileDescriptor
        public var writeEnd: FileDescriptor
    }
}

extension Optional where Wrapped == FileDescriptor {
    /// The descriptor's number, borrowed (nil when there is none).
    public var rawValue: Int32? {
        switch self {
        case .some(let fd): fd.rawValue
        case .none: nil
        }
    }
}
