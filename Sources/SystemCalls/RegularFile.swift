#if canImport(Glibc)
import Glibc
#endif
// LocalizedError only: the module stays clear of the rest of Foundation.
import FoundationEssentials

/// Why a file could not be read as a regular file: its path and the reason, in words.
public struct RegularFileError: LocalizedError, CustomStringConvertible, Sendable, Equatable {
    public var errorDescription: String? { description }
    public let path: String
    /// "is a FIFO, not a regular file", "cannot be opened: No such file or directory", ...
    public let reason: String
    /// The errno behind it, when a call failed (ENOENT for a missing file); 0 otherwise.
    public let errno: Int32
    /// The failed system call behind it, when there was one.
    public let cause: SystemCallError?
    public var description: String { "\(path) \(reason)" }

    init(path: String, reason: String, errno: Int32, cause: SystemCallError? = nil) {
        self.path = path
        self.reason = reason
        self.errno = errno
        self.cause = cause
    }
}

/// The files a config names (the config itself, M3U lists, overlay pictures and fonts) are opened
/// the way a folder playlist's items are: regular files only, never waited on. A FIFO's `open`
/// waits for a writer and a device's `read` may wait for ever, so the open is non-blocking and the
/// kind is checked on the descriptor (no race with a file replaced between a `stat` and the open)
/// before anything is read; what is read is bounded by a size limit.
public enum RegularFile {
    /// What a file of mode `mode` is, in words, or nil for a regular file.
    public static func kind(of mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        default: "not a regular file"
        }
    }

    /// Opens `path` (links followed) for reading, without waiting, when it is a regular file.
    public static func open(_ path: String) throws(RegularFileError) -> FileDescriptor {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY)
        } catch {
            throw RegularFileError(path: path, reason: "cannot be opened: \(error.reason)", errno: error.errno, cause: error)
        }
        var info = stat()
        let fd = file.rawValue
        do {
            try systemCall("fstat") { fstat(fd, &info) }
        } catch {
            throw RegularFileError(path: path, reason: "cannot be examined: \(error.reason)", errno: error.errno, cause: error)
        }
        if let kind = kind(of: info.st_mode) {
            throw RegularFileError(path: path, reason: "is \(kind), not a regular file", errno: 0)
        }
        return file
    }

    /// The bytes of the regular file at `path`, at most `limit` of them (a larger file is an error).
    public static func read(_ path: String, limit: Int) throws(RegularFileError) -> [UInt8] {
        let file = try open(path)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let fd = file.rawValue
            let n = chunk.withUnsafeMutableBytes { buffer in
                while true {
                    let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
                    if n >= 0 || errno != EINTR { return n }
                }
            }
            if n < 0 {
                let code = errno
                throw RegularFileError(path: path, reason: "cannot be read: \(String(cString: strerror(code)))", errno: code)
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else {
                throw RegularFileError(path: path, reason: "is larger than \(Self.describe(limit)) (the most read for it)", errno: EFBIG)
            }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// `limit` bytes in words: "64 MB", "4 KB", "100 bytes".
    static func describe(_ limit: Int) -> String {
        if limit >= 1 << 20 && limit % (1 << 20) == 0 { return "\(limit >> 20) MB" }
        if limit >= 1 << 10 && limit % (1 << 10) == 0 { return "\(limit >> 10) KB" }
        return "\(limit) bytes"
    }
}
