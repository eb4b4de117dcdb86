import Foundation
import HTTPServer
@testable import RemoteTests
import Testing
import TestSupport

/// The libmicrohttpd server on 127.0.0.1 (an ephemeral port) and on a Unix socket: requests,
/// bodies, TLS, and the bounds a hostile client meets.
@Suite(.serialized) struct HTTPServerTests {
    /// Answers every request with its method, path, client and body length.
    final class Echo: HTTPHandler {
        func begin(_ request: HTTPRequest) -> HTTPDecision {
            .receive(BufferedBody(limit: 1 << 20) { body in
                .text(200, "\(request.method) \(request.path) \(request.client) \(body.count) \(request.query["q"] ?? "-")")
            })
        }
    }

    func server(_ limits: HTTPServerLimits = .init(), tls: (String, String)? = nil, address: HTTPListenAddress = .inet(host: "127.0.0.1", port: 0)) throws -> HTTPServer {
        try HTTPServer(address: address, tls: tls.map { (certificate: $0.0, key: $0.1) }, limits: limits, handler: Echo())
    }

    @Test func answersRequestsWithTheirBodies() throws {
        let s = try server()
        defer { s.stop() }
        let port = try #require(s.port)
        #expect(port > 0)
        let get = try #require(RawHTTP.request(port: port, "GET", "/a/b?q=1"))
        #expect(get.status == 200 && get.text == "GET /a/b 127.0.0.1 0 1\n", "\(get.text)")
        let body = [UInt8](repeating: 7, count: 300_000), tooLong = [UInt8](repeating: 7, count: 2 << 20)
        let put = RawHTTP.request(port: port, "PUT", "/up", body: body)
        #expect(put?.text == "PUT /up 127.0.0.1 300000 -\n")
        // Refused in the middle of the body: MHD takes no response then, and closes the connection.
        let over = RawHTTP.request(port: port, "PUT", "/up", body: tooLong)?.status
        #expect(over == nil || over == 413, "\(over ?? 0)")
        #expect(RawHTTP.request(port: port, "GET", "/after")?.status == 200)
    }

    /// An IPv6 loopback listener on its own port (IPv6 only: `[::]` never takes IPv4 too).
    @Test func anIPv6LoopbackListenerAnswers() throws {
        let s = try server(address: .inet(host: "::1", port: 0))
        defer { s.stop() }
        let port = try #require(s.port)
        let curl = try Command.run("curl", ["-sS", "--max-time", "10", "-g", "http://[::1]:\(port)/six"], timeout: 20)
        #expect(curl.status == 0 && curl.text == "GET /six ::1 0 -\n", "\(curl.text) \(curl.errorText)")
        #expect(RawHTTP.request(port: port, "GET", "/four", timeout: 3) == nil, "nothing on 127.0.0.1 at that port")
    }

    @Test func aUnixSocketListenerAnswers() throws {
        let path = TestMedia.folder + "/http-\(UUID().uuidString.prefix(8)).sock"
        let s = try server(address: .unix(path: path))
        let reply = try #require(RawHTTP.request(unixPath: path, "GET", "/x"))
        #expect(reply.status == 200 && reply.text.hasPrefix("GET /x local 0"), "\(reply.text)")
        s.stop()
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed at stop")
    }

    /// A 1 MB header is refused (431) without reaching the handler, and the server answers on.
    @Test func aMegabyteHeaderIsRefused() throws {
        let s = try server()
        defer { s.stop() }
        let port = try #require(s.port)
        let huge = RawHTTP.request(port: port, "GET", "/", headers: ["X-Big": String(repeating: "a", count: 1 << 20)], timeout: 10)
        #expect(huge.map { [413, 414, 431].contains($0.status) } ?? true, "refused or closed: \(huge?.status ?? 0)")
        #expect(RawHTTP.request(port: port, "GET", "/after")?.status == 200)
    }

    /// 100 idle connections from one address: at most `maxConnectionsPerClient` stay open (the
    /// rest are closed at once), they are closed after `idleTimeout`, and another client is
    /// answered all along.
    @Test func aHundredIdleConnectionsAreBounded() throws {
        var limits = HTTPServerLimits()
        limits.maxConnectionsPerClient = 8
        limits.idleTimeout = 2
        let s = try server(limits)
        defer { s.stop() }
        let port = try #require(s.port)
        let idle = (0..<100).compactMap { _ in RawConnection(port: port) }
        #expect(idle.count == 100, "the kernel accepts them all into the backlog")
        let closedAtOnce = idle.filter { $0.closedByPeer(within: 0.05) }.count
        #expect(closedAtOnce >= 100 - 8 - 2, "closed at once: \(closedAtOnce)")
        #expect(RawHTTP.request(port: port, source: "127.0.0.2", "GET", "/other")?.status == 200)
        let open = idle.filter { !$0.closedByPeer(within: 0) }
        #expect(open.allSatisfy { $0.closedByPeer(within: 5) }, "idle ones are closed after idleTimeout")
    }

    /// Slow-loris: connections that send a header byte every 0.2 s. No more than the per-client
    /// bound stay open; the server answers another client meanwhile.
    @Test func slowLorisIsBoundedPerClient() throws {
        var limits = HTTPServerLimits()
        limits.maxConnectionsPerClient = 4
        let s = try server(limits)
        defer { s.stop() }
        let port = try #require(s.port)
        let slow = (0..<20).compactMap { _ in RawConnection(port: port) }
        let header = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 40)
        var alive = slow
        for i in 0..<header.count / 4 {
            alive = alive.filter { $0.send([header[i * 4], header[i * 4 + 1], header[i * 4 + 2], header[i * 4 + 3]]) && !$0.closedByPeer(within: 0) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(alive.count <= 4, "slow connections still open: \(alive.count)")
        let start = Date()
        #expect(RawHTTP.request(port: port, source: "127.0.0.2", "GET", "/other")?.status == 200)
        #expect(Date().timeIntervalSince(start) < 2)
    }

    /// HTTPS with a certificate made by openssl now; curl checks it against that certificate.
    @Test func tlsWithACertificateFromPEMFiles() throws {
        let folder = TestMedia.folder + "/tls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = try Command.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder + "/key.pem", "-out", folder + "/cert.pem",
                                               "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"], timeout: 60)
        try #require(made.status == 0, "openssl: \(made.errorText)")
        let certificate = try String(contentsOfFile: folder + "/cert.pem", encoding: .utf8)
        let key = try String(contentsOfFile: folder + "/key.pem", encoding: .utf8)
        let s = try server(tls: (certificate, key))
        defer { s.stop() }
        let port = try #require(s.port)
        let curl = try Command.run("curl", ["-sS", "--max-time", "10", "--cacert", folder + "/cert.pem", "https://127.0.0.1:\(port)/secure"], timeout: 20)
        #expect(curl.status == 0 && curl.text == "GET /secure 127.0.0.1 0 -\n", "\(curl.text) \(curl.errorText)")
        // Plain HTTP on the TLS port gets no answer.
        let plain = RawHTTP.request(port: port, "GET", "/", timeout: 3)
        #expect(plain == nil || plain?.status != 200)
        #expect(throws: HTTPServerError.self) { try server(tls: ("not a certificate", key)) }
    }
}
