import CCurl
import Foundation
import Network

/// Downloads one remote file (`http`/`https`) into a local file with libcurl, for `network.cache`.
/// libcurl, not FFmpeg's HTTP: FFmpeg shows neither the answer's status nor its `ETag` and
/// `Last-Modified`, which conditional checks (304) and safe resumes (`If-Range`) need. The same
/// rules as every network input: the URL and its host's DNS answers checked against
/// `network.allow` before connecting, and the connection pinned to the addresses checked; no
/// redirects; only the URL's own scheme; no proxy from the environment; TLS verified; limits on
/// connecting, on each wait for data, on the whole download and on its size.
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

    /// What a fetch found.
    public enum Outcome: Sendable, Equatable {
        /// 304: the copy whose validators were sent is current; no body came.
        case notModified
        /// The whole file is in the part file: its length, the validators it came with, and the
        /// bytes this request carried (fewer than `bytes` when it resumed a cut download).
        case downloaded(bytes: Int64, validators: RemoteValidators, transferred: Int64)
    }

    /// Where the validators of the file at `path` are kept (a copy's, or a cut download's).
    public static func validatorsFile(of path: String) -> String { path + ".meta" }

    /// The validators kept beside `path`, if any.
    public static func validators(of path: String) -> RemoteValidators? {
        guard let text = try? String(contentsOfFile: validatorsFile(of: path), encoding: .utf8) else { return nil }
        let v = RemoteValidators(fileText: text)
        return v.isEmpty ? nil : v
    }

    /// Keeps `validators` beside `path`, atomically (written aside, then renamed); none: removed.
    public static func keep(_ validators: RemoteValidators, beside path: String) throws {
        let file = validatorsFile(of: path)
        guard !validators.isEmpty else { unlink(file); return }
        let aside = file + ".new"
        try Data(validators.fileText.utf8).write(to: URL(fileURLWithPath: aside))
        guard rename(aside, file) == 0 else {
            throw MediaError(uri: file, call: "rename", code: errno, reason: String(cString: strerror(errno)))
        }
    }

    /// Fetches `url` into `part`. With `current` (the copy's validators) the request is conditional:
    /// `.notModified` when the server says the copy is current. A `part` left by a cut download,
    /// with validators beside it, is resumed from its length (`Range`, with `If-Range`: a file
    /// changed since restarts from zero, as does a server that ignores ranges). Throws naming the URL
    /// and why: refused by the list, the server's error, larger than allowed, too slow, or cut
    /// (the part is then kept, with its validators, where it can be resumed; else removed).
    public static func fetch(_ url: String, into part: String, current: RemoteValidators?, limits: Limits,
                             resolve: @Sendable (String) throws -> [IPAddress] = { try SystemResolver.addresses(of: $0) }) throws -> Outcome {
        let target: NetworkURL
        let addresses: [IPAddress]
        do { target = try NetworkURL(parsing: url) } catch {
            throw MediaError(uri: url, call: "curl_easy_perform", code: -1, reason: "not a network URL: \(error.reason)")
        }
        switch limits.io.network.check(url, resolve: resolve) {
        case .refused(let reason):
            throw MediaError(uri: url, call: "curl_easy_perform", code: -1, reason: "refused by network.allow: \(reason)")
        case .allowed(let a): addresses = a
        }
        guard target.scheme == "http" || target.scheme == "https" else {
            throw MediaError(uri: url, call: "curl_easy_perform", code: -1, reason: "only http and https files are cached")
        }
        // A cut download resumes only where it can be checked to be the same version.
        let had = fileSize(part)
        let resume = had > 0 ? validators(of: part).flatMap { v in v.ifRange.map { (from: had, ifRange: $0) } } : nil
        if resume == nil { resetPart(part) }

        guard let curl = curl_easy_init() else {
            throw MediaError(uri: url, call: "curl_easy_init", code: -1, reason: "out of memory")
        }
        defer { curl_easy_cleanup(curl) }
        let transfer = Transfer(part: part, expectedStart: resume?.from ?? 0, maxBytes: limits.maxBytes)
        var headers: UnsafeMutablePointer<curl_slist>?
        var pinned: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers); curl_slist_free_all(pinned) }
        for line in (current?.conditionalHeaders ?? []) + (resume.map { ["If-Range: \($0.ifRange)"] } ?? []) {
            headers = curl_slist_append(headers, line)
        }
        // The addresses checked are the ones connected to: no second lookup to disagree with.
        if IPAddress(target.host) == nil, !addresses.isEmpty {
            let port = target.port ?? (target.scheme == "https" ? 443 : 80)
            let list = addresses.map { $0.isIPv4 ? $0.description : "[\($0)]" }.joined(separator: ",")
            pinned = curl_slist_append(pinned, "\(target.host):\(port):\(list)")
        }
        var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let result: CURLcode = errorText.withUnsafeMutableBufferPointer { errorBuffer in
            let me = Unmanaged.passUnretained(transfer).toOpaque()
            var set = [
                mq_curl_set_string(curl, CURLOPT_URL, url),
                mq_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, target.scheme),
                mq_curl_set_string(curl, CURLOPT_REDIR_PROTOCOLS_STR, target.scheme),
                mq_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0),
                mq_curl_set_string(curl, CURLOPT_PROXY, ""),
                mq_curl_set_long(curl, CURLOPT_NOSIGNAL, 1),
                mq_curl_set_long(curl, CURLOPT_FAILONERROR, 1),
                mq_curl_set_long(curl, CURLOPT_SSL_VERIFYPEER, 1),
                mq_curl_set_long(curl, CURLOPT_SSL_VERIFYHOST, 2),
                mq_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(limits.io.open)),
                mq_curl_set_long(curl, CURLOPT_TIMEOUT_MS, milliseconds(limits.maxSeconds)),
                mq_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, 1),
                mq_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, max(1, milliseconds(limits.io.read) / 1000)),
                mq_curl_set_off(curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limits.maxBytes)),
                mq_curl_set_list(curl, CURLOPT_HTTPHEADER, headers),
                mq_curl_set_list(curl, CURLOPT_RESOLVE, pinned),
                mq_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errorBuffer.baseAddress),
                mq_curl_set_pointer(curl, CURLOPT_WRITEDATA, me),
                mq_curl_set_pointer(curl, CURLOPT_HEADERDATA, me),
                mq_curl_set_write(curl) { data, size, count, opaque in
                    guard let data, let opaque else { return 0 }
                    return Unmanaged<Transfer>.fromOpaque(opaque).takeUnretainedValue().body(data, size * count)
                },
                mq_curl_set_header(curl) { data, size, count, opaque in
                    guard let data, let opaque else { return 0 }
                    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
                    Unmanaged<Transfer>.fromOpaque(opaque).takeUnretainedValue().header(line)
                    return size * count
                },
            ]
            if let resume { set.append(mq_curl_set_string(curl, CURLOPT_RANGE, "\(resume.from)-")) }
            transfer.curl = curl
            if let bad = set.first(where: { $0 != CURLE_OK }) { return bad }
            return curl_easy_perform(curl)
        }
        var status = 0
        _ = mq_curl_get_long(curl, CURLINFO_RESPONSE_CODE, &status)
        transfer.close()
        guard result == CURLE_OK else {
            let detail = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var why = transfer.failure ?? (detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail)
            if result == CURLE_PARTIAL_FILE, let total = transfer.total, transfer.failure == nil {
                why = "the body ended after \(transfer.base + transfer.written) of the \(total) bytes announced (\(why))"
            }
            if status == 200 || status == 206, transfer.written > 0, transfer.validators.ifRange != nil, transfer.failure == nil {
                why += "; \(fileSize(part)) bytes kept, resumed at the next try"
            } else {
                resetPart(part)
            }
            throw MediaError(uri: url, call: "curl_easy_perform", code: Int32(result.rawValue), reason: why)
        }
        switch status {
        case 304 where current != nil:
            resetPart(part)
            return .notModified
        case 200, 206:
            let bytes = fileSize(part)
            if let total = transfer.total, bytes != total {
                throw MediaError(uri: url, call: "curl_easy_perform", code: -1, reason: "the body ended after \(bytes) of the \(total) bytes announced")
            }
            unlink(validatorsFile(of: part))
            return .downloaded(bytes: bytes, validators: transfer.validators, transferred: transfer.written)
        case 300..<400 where transfer.location != nil:
            resetPart(part)
            let to = String((transfer.location ?? "").prefix(200))
            throw MediaError(uri: url, call: "curl_easy_perform", code: -1,
                             reason: "the server redirects (\(status)) to \(to): redirects are not followed, name that URL")
        default:
            resetPart(part)
            throw MediaError(uri: url, call: "curl_easy_perform", code: -1, reason: "the server answered \(status), not a file")
        }
    }

    /// A part file and its validators, gone.
    public static func discardPart(_ part: String) {
        unlink(part)
        unlink(validatorsFile(of: part))
    }

    /// A part file emptied in place (its caller may hold it locked: `PartLock`), without validators.
    static func resetPart(_ part: String) {
        if fileSize(part) > 0 { truncate(part, 0) }
        unlink(validatorsFile(of: part))
    }

    /// The length of the regular file at `path`; 0: none.
    public static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return 0 }
        return Int64(info.st_size)
    }

    static func milliseconds(_ seconds: Double) -> Int {
        Int(min(max(seconds, 0.001), 1e6) * 1000)
    }

    /// One transfer's state, read by libcurl's callbacks on the calling thread.
    final class Transfer {
        let part: String
        let expectedStart: Int64
        let maxBytes: Int64
        var curl: UnsafeMutableRawPointer?
        private var fd: Int32 = -1
        private var started = false
        /// Bytes this request wrote, after the `base` bytes kept from a cut download.
        var written: Int64 = 0
        private(set) var base: Int64 = 0
        /// The whole file's length, where the answer said it.
        var total: Int64?
        var validators = RemoteValidators()
        private var contentRange: (start: Int64, total: Int64?)?
        /// Where a redirect pointed (never followed).
        private(set) var location: String?
        /// Why a callback stopped the transfer.
        var failure: String?

        init(part: String, expectedStart: Int64, maxBytes: Int64) {
            (self.part, self.expectedStart, self.maxBytes) = (part, expectedStart, maxBytes)
        }

        func header(_ line: String) {
            if line.hasPrefix("HTTP/") {  // a new answer (an interim one's headers do not count)
                validators = RemoteValidators()
                contentRange = nil
                return
            }
            validators.take(headerLine: line)
            let lower = line.lowercased()
            if lower.hasPrefix("content-range:") { contentRange = Self.contentRange(line) }
            if lower.hasPrefix("location:") { location = String(line.dropFirst(9)).trimmingCharacters(in: .whitespacesAndNewlines) }
        }

        /// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`).
        static func contentRange(_ line: String) -> (start: Int64, total: Int64?)? {
            guard let space = line.firstIndex(of: " ") else { return nil }
            let value = line[line.index(after: space)...].trimmingCharacters(in: .whitespacesAndNewlines)
            guard value.hasPrefix("bytes ") else { return nil }
            let parts = value.dropFirst(6).split(separator: "/")
            guard parts.count == 2, let dash = parts[0].firstIndex(of: "-"), let start = Int64(parts[0][..<dash]) else { return nil }
            return (start, Int64(parts[1]))
        }

        /// The body's bytes: the first decides, by the status, whether they follow the part's (206
        /// from where it ends) or replace it (200).
        func body(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
            if !started {
                started = true
                var status = 0
                if let curl { _ = mq_curl_get_long(curl, CURLINFO_RESPONSE_CODE, &status) }
                var append = false
                if status == 206 {
                    guard let range = contentRange, range.start == expectedStart, expectedStart > 0 else {
                        failure = "the server's range does not start where the kept part ends (\(expectedStart) bytes)"
                        return 0
                    }
                    append = true
                    base = expectedStart
                    total = range.total
                } else if status == 200 {
                    var length: curl_off_t = -1
                    if let curl { _ = mq_curl_get_off(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) }
                    total = length >= 0 ? Int64(length) : nil
                } else {
                    return count  // not a file: the status fails the fetch
                }
                if let total, total > maxBytes {
                    failure = "\(total) bytes, more than the cache allows per file (\(maxBytes))"
                    return 0
                }
                fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o644)
                guard fd >= 0 else {
                    failure = "cannot write the download \(part): \(String(cString: strerror(errno)))"
                    return 0
                }
                // Kept before the body: a cut download can then be resumed as this version.
                do {
                    if validators.ifRange != nil { try RemoteFetch.keep(validators, beside: part) } else { unlink(RemoteFetch.validatorsFile(of: part)) }
                } catch {
                    failure = "cannot keep the download's validators: \(error)"
                    return 0
                }
            }
            guard fd >= 0 else { return count }
            guard base + written + Int64(count) <= maxBytes else {
                failure = "more than the cache allows per file (\(maxBytes) bytes)"
                return 0
            }
            var done = 0
            while done < count {
                let n = write(fd, data + done, count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    failure = "cannot write the download \(part): \(String(cString: strerror(errno)))"
                    return 0
                }
                done += n
            }
            written += Int64(count)
            return count
        }

        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }

        deinit { close() }
    }
}
