import Foundation
import HTTPServer
@testable import Kiosk
@testable import Remote
import Testing

@Suite struct TokenStoreTests {
    @Test func sha256MatchesTheStandardVector() {
        #expect(hexString(sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hexString(sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func constantTimeEqualComparesWholeValues() {
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(!constantTimeEqual([], []))
    }

    @Test func aTokenFileGivesRolesAndOnlyItsTokensAuthenticate() throws {
        let text = """
        # ops team
        \(TokenStore.line(role: .control, token: "c-secret", name: "ops"))

        \(TokenStore.line(role: .view, token: "v-secret", name: "wall monitor"))
        """
        let store = try TokenStore(parsing: text)
        #expect(store.entries.map(\.role) == [.control, .view])
        #expect(store.authenticate(authorization: "Bearer c-secret")?.name == "ops")
        #expect(store.authenticate(authorization: "bearer v-secret")?.role == .view)
        #expect(store.authenticate(authorization: "Bearer v-secret")?.name == "wall monitor")
        for bad in [nil, "", "Bearer", "Bearer ", "Bearer wrong", "Basic c-secret", "c-secret", "Bearer " + String(repeating: "x", count: 5000)] {
            #expect(store.authenticate(authorization: bad) == nil, "\(bad ?? "nil")")
        }
        #expect(!text.contains("c-secret"), "the file holds only hashes")
    }

    @Test func aBadTokenFileNamesItsLine() {
        let hash = "sha256:" + String(repeating: "ab", count: 32)
        let cases: [(String, TokenStore.FileError)] = [
            ("", .init(line: 0, message: "no tokens: give at least one ROLE sha256:HEX line")),
            ("# only a comment\n", .init(line: 0, message: "no tokens: give at least one ROLE sha256:HEX line")),
            ("admin \(hash)", .init(line: 1, message: "\"admin\" is not a role (view, control)")),
            ("view \(hash)\ncontrol my-plain-token", .init(line: 2, message: "the token must be given as sha256:<64 hex digits> (its hash, never the token itself)")),
            ("view sha256:abcd", .init(line: 1, message: "the token must be given as sha256:<64 hex digits> (its hash, never the token itself)")),
            ("view", .init(line: 1, message: "expected ROLE sha256:HEX [NAME], e.g. control sha256:9f86d0... ops")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try TokenStore(parsing: text) }
        }
    }

    @Test func rolesAreOrdered() {
        #expect(Role.view < Role.control)
        #expect(Role.control >= Role.view)
        #expect(!(Role.view >= Role.control))
    }
}

@Suite struct RequestGuardTests {
    let guardrail = RequestGuard(allowedHosts: ["Screen1.example"])

    func request(_ method: String = "GET", host: String? = "127.0.0.1:8080", _ extra: [String: String] = [:]) -> HTTPRequest {
        var headers = extra
        if let host { headers["host"] = host }
        return HTTPRequest(method: method, path: "/api/v1/status", headers: headers, client: "127.0.0.1")
    }

    @Test func hostsThatNameThisPlayerPass() {
        for host in ["127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "screen1.example:443", "screen1.example.", "[::1]:8080", "192.168.1.20:80"] {
            #expect(guardrail.refusal(request(host: host)) == nil, "\(host)")
        }
    }

    @Test func anyOtherNameIsARebindingAndRefused() {
        for host in ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "[::1", "[zz]:80",
                     "127.0.0.1:99999", "1.2.3", "999.1.1.1", ""] {
            #expect(guardrail.refusal(request(host: host)) != nil, "\(host)")
        }
        #expect(guardrail.refusal(request(host: nil)) == "no Host header")
    }

    @Test func crossSiteStateChangesAreRefusedAndSameSiteOnesPass() {
        #expect(guardrail.refusal(request("POST", ["origin": "http://evil.example"])) != nil)
        #expect(guardrail.refusal(request("PUT", ["origin": "null"])) != nil)
        #expect(guardrail.refusal(request("POST", ["origin": "https://evil.example:8080"])) != nil)
        #expect(guardrail.refusal(request("POST", ["sec-fetch-site": "cross-site"])) != nil)
        #expect(guardrail.refusal(request("POST", ["origin": "http://127.0.0.1:8080"])) == nil)
        #expect(guardrail.refusal(request("POST", ["origin": "https://screen1.example"])) == nil)
        #expect(guardrail.refusal(request("POST", ["sec-fetch-site": "same-origin"])) == nil)
        // No Origin: not a browser's cross-site request (curl, scripts).
        #expect(guardrail.refusal(request("POST")) == nil)
        // Reading is not refused by Origin: the token guards it, and no CORS header lets a page read it.
        #expect(guardrail.refusal(request("GET", ["origin": "http://evil.example"])) == nil)
    }
}

@Suite struct RateLimiterTests {
    @Test func aBurstThenTheRate() {
        var limiter = RateLimiter(rate: 10)
        let burst = (0..<30).filter { _ in limiter.allow("a", now: 100) }.count
        #expect(burst == 20)
        // 10 a second: half a request after 0.05 s (refused), one and a half after 0.15 s; another client has its own bucket.
        let steps = [("a", 100.05), ("a", 100.15), ("a", 100.15), ("b", 100.15)].map { limiter.allow($0.0, now: $0.1) }
        #expect(steps == [false, true, false, true])
        // Idle for long: back to a full burst, no more.
        let later = (0..<30).filter { _ in limiter.allow("a", now: 1000) }.count
        #expect(later == 20)
    }

    @Test func theClientTableIsBounded() {
        var limiter = RateLimiter(rate: 1, maxClients: 8)
        for i in 0..<100 { _ = limiter.allow("10.0.0.\(i)", now: Double(i)) }
        #expect(limiter.clientCount == 8)
    }
}

@Suite struct UploadNameTests {
    @Test func plainNamesOnly() {
        for good in ["clip.mp4", "Spring_2026-v2.webm", "a"] { #expect(UploadPolicy.nameProblem(good) == nil, "\(good)") }
        for bad in ["", ".hidden", "..", "../etc/passwd", "a/b.mp4", "a\\b", "clip .mp4", "clip\u{0}.mp4", "ünï.mp4",
                    String(repeating: "a", count: 129), "%2e%2e"] {
            #expect(UploadPolicy.nameProblem(bad) != nil, "\(bad)")
        }
    }
}
