import Network
import Testing

/// A copy's validators: taken from response headers, sent back as conditions, kept on disk and read
/// back; only what may safely go back into a request.
@Suite struct RemoteValidatorsTests {
    @Test func takenFromHeadersSentBackAndKept() {
        var v = RemoteValidators()
        for line in ["HTTP/1.1 200 OK\r\n", "ETag: \"abc\"\r\n", "Content-Length: 10\r\n", "last-modified:  Sat, 05 Dec 2026 09:00:00 GMT \r\n"] {
            v.take(headerLine: line)
        }
        #expect(v.etag == "\"abc\"" && v.lastModified == "Sat, 05 Dec 2026 09:00:00 GMT")
        #expect(v.conditionalHeaders == ["If-None-Match: \"abc\"", "If-Modified-Since: Sat, 05 Dec 2026 09:00:00 GMT"])
        #expect(v.ifRange == "\"abc\"")
        #expect(RemoteValidators(fileText: v.fileText) == v)
        #expect(RemoteValidators().isEmpty && RemoteValidators().conditionalHeaders.isEmpty)
    }

    @Test func aWeakETagResumesByDateOrNotAtAll() {
        #expect(RemoteValidators(etag: "W/\"x\"", lastModified: "Sat, 05 Dec 2026 09:00:00 GMT").ifRange == "Sat, 05 Dec 2026 09:00:00 GMT")
        #expect(RemoteValidators(etag: "W/\"x\"").ifRange == nil, "a weak tag cannot guard a range")
        #expect(RemoteValidators(etag: "W/\"x\"").conditionalHeaders == ["If-None-Match: W/\"x\""], "but it can a 304")
    }

    @Test func nothingThatCouldBreakARequestIsKept() {
        #expect(RemoteValidators(etag: "\"a\"\r\nX-Injected: 1").etag == nil)
        #expect(RemoteValidators(etag: String(repeating: "a", count: 513)).etag == nil)
        #expect(RemoteValidators(etag: "   ").isEmpty)
        #expect(RemoteValidators(fileText: "junk\nserver: x\n").isEmpty)
    }
}
