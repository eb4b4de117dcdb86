import Foundation
import HTTPServer
import SystemCalls

/// Where uploads go and how big they may be.
public struct UploadPolicy: Sendable {
    public let directory: String
    public let maxBytes: Int
    public let minFreeBytes: Int

    public init(directory: String, maxBytes: Int, minFreeBytes: Int) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
    }

    /// Why `name` cannot be an uploaded file's name, or nil. Plain names only: letters, digits,
    /// `.`, `_`, `-`, not starting with `.` (no hidden files, no `..`, no folders).
    public static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "the file name is empty" }
        if name.utf8.count > 128 { return "the file name is longer than 128 bytes" }
        if name.hasPrefix(".") { return "the file name starts with a dot" }
        let allowed = name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "._-".unicodeScalars.contains($0) }
        if !allowed { return "the file name may have only letters, digits, '.', '_' and '-' (no '/')" }
        return nil
    }

    /// Bytes free for this process in `directory`, or nil when it cannot be told.
    func freeBytes() -> Int? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let free = Double(info.f_bavail) * Double(info.f_frsize)
        return free >= Double(Int.max) ? Int.max : Int(free)
    }

    /// Checks an upload's name and declared length, then opens its temporary file; or the response
    /// that refuses it.
    func begin(name: String, declaredLength: String?) -> Result<UploadReceiver, RefusedRequest> {
        if let problem = Self.nameProblem(name) { return .failure(.init(400, "upload \(name.prefix(64)): \(problem)")) }
        var declared: Int?
        if let text = declaredLength {
            guard let n = Int(text), n >= 0 else { return .failure(.init(400, "upload \(name): Content-Length \(text.prefix(32)) is not a length")) }
            declared = n
        }
        if let declared, declared > maxBytes {
            return .failure(.init(413, "upload \(name): \(declared) bytes is over http.uploads.maxBytes (\(maxBytes))"))
        }
        if let free = freeBytes(), free - (declared ?? 0) < minFreeBytes {
            return .failure(.init(507, "upload \(name): it would leave less than http.uploads.minFreeBytes (\(minFreeBytes)) free (\(free) bytes free)"))
        }
        let temporary = "\(directory)/.upload-\(UUID().uuidString).part"
        do {
            let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, permissions: 0o640)
            return .success(UploadReceiver(policy: self, name: name, temporary: temporary, fd: file.relinquish()))
        } catch {
            return .failure(.init(500, "upload \(name): cannot write to http.uploads.directory: \(error)"))
        }
    }
}

/// A refusal: status and what to tell the client.
public struct RefusedRequest: Error, Sendable {
    public let status: Int
    public let message: String
    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// An upload's body streamed to a temporary file in the upload folder (a hidden `.part` name no
/// playlist plays), renamed to its name once whole: a partial upload never appears under its name.
final class UploadReceiver: HTTPBodyReceiver {
    let policy: UploadPolicy
    let name: String
    let temporary: String
    private var fd: Int32
    private var written = 0
    private var checkedFreeAt = 0
    /// What to answer when whole (set by the API: the response says where the file went).
    var respond: (Result<(name: String, bytes: Int), RefusedRequest>) -> HTTPResponse = { _ in .text(500, "no responder") }

    init(policy: UploadPolicy, name: String, temporary: String, fd: Int32) {
        self.policy = policy
        self.name = name
        self.temporary = temporary
        self.fd = fd
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard written + chunk.count <= policy.maxBytes else {
            return respond(.failure(.init(413, "upload \(name): over http.uploads.maxBytes (\(policy.maxBytes)); stopped after \(written) bytes")))
        }
        // The disk may fill from elsewhere while the body comes: checked every 8 MB.
        if written - checkedFreeAt >= 8 << 20 {
            checkedFreeAt = written
            if let free = policy.freeBytes(), free < policy.minFreeBytes {
                return respond(.failure(.init(507, "upload \(name): the disk is down to \(free) bytes free; stopped after \(written) bytes")))
            }
        }
        var offset = 0
        while offset < chunk.count {
            let n = Glibc.write(fd, chunk.baseAddress! + offset, chunk.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                let why = String(cString: strerror(errno))
                return respond(.failure(.init(507, "upload \(name): write failed: \(why)")))
            }
            offset += n
        }
        written += chunk.count
        return nil
    }

    func finish() -> HTTPResponse {
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        fd = -1
        guard synced, rename(temporary, "\(policy.directory)/\(name)") == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary)
            return respond(.failure(.init(500, "upload \(name): cannot store it: \(why)")))
        }
        return respond(.success((name, written)))
    }

    func abandon() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
            unlink(temporary)
        }
    }

    deinit { abandon() }
}
