import Network
import Testing

/// A resolver answering from a table, so the checks are about the rules, not the machine's DNS.
struct FakeResolver: Error, CustomStringConvertible {
    var description: String { "no such host" }
    static let table: [String: [String]] = [
        "cdn.example.com": ["203.0.113.7"],
        "cams.example.org": ["192.168.10.20", "fd00::20"],
        "rebind.example.com": ["127.0.0.1"],
        "metadata.example.com": ["169.254.169.254"],
        "mixed.example.net": ["192.168.10.21", "198.51.100.1"],
        "lan.example.net": ["192.168.10.22"],
    ]
    static func resolve(_ host: String) throws -> [IPAddress] {
        guard let answers = table[host] else { throw FakeResolver() }
        return answers.compactMap(IPAddress.init)
    }
}

@Suite struct AllowListTests {
    func list(_ entries: [String]) throws -> NetworkAllowList { try NetworkAllowList(entries: entries) }

    func allowed(_ list: NetworkAllowList, _ uri: String) -> Bool { list.check(uri, resolve: FakeResolver.resolve).isAllowed }

    @Test func nothingIsAllowedByDefault() {
        let decision = NetworkAllowList.none.check("http://127.0.0.1/a.mp4", resolve: FakeResolver.resolve)
        #expect(decision == .refused("http://127.0.0.1: the scheme http is not in network.allow"))
        #expect(NetworkAllowList.none.protocolWhitelist == "")
    }

    @Test func schemesMustBeListed() throws {
        let l = try list(["https://cdn.example.com"])
        #expect(allowed(l, "https://cdn.example.com/live/index.m3u8"))
        #expect(!allowed(l, "http://cdn.example.com/live/index.m3u8"))
        #expect(!allowed(l, "rtsp://cdn.example.com/cam"))
        #expect(!allowed(l, "file:///etc/passwd"))
        #expect(l.protocolWhitelist == "crypto,https,tcp,tls")
        #expect(!l.protocolWhitelist.contains("file"))
    }

    @Test func hostNamesAndDomains() throws {
        let l = try list(["https://cdn.example.com", "https://*.example.org"])
        #expect(allowed(l, "https://CDN.example.com/a.mp4"))
        #expect(allowed(l, "https://user:pw@cdn.example.com:443/a.mp4"))
        #expect(!allowed(l, "https://cdn.example.com.evil.net/a.mp4"))
        #expect(!allowed(l, "https://evil.net/a.mp4?x=cdn.example.com"))
        #expect(!allowed(l, "https://evil.net#@cdn.example.com/"))
        #expect(allowed(l, "https://cams.example.org/x"))
        #expect(!allowed(l, "https://example.org/x"), "*.example.org is below the domain, not the domain")
        #expect(!allowed(l, "https://notexample.org/x"))
    }

    @Test func ipv4Blocks() throws {
        let l = try list(["rtsp://192.168.10.0/24", "udp://239.0.0.0/8", "http://127.0.0.1"])
        #expect(allowed(l, "rtsp://192.168.10.20:8554/cam"))
        #expect(!allowed(l, "rtsp://192.168.11.20/cam"))
        #expect(allowed(l, "udp://239.1.2.3:1234"))
        #expect(allowed(l, "udp://@239.1.2.3:1234"))
        #expect(!allowed(l, "udp://@:1234"), "an empty host listens everywhere: it must be named")
        #expect(allowed(l, "http://127.0.0.1:8000/a.ts"))
        #expect(!allowed(l, "http://127.0.0.2:8000/a.ts"))
        #expect(!allowed(l, "http://127.1:8000/a.ts"), "a shortened address is a name, and resolves to nothing here")
    }

    @Test func ipv6Blocks() throws {
        let l = try list(["rtsp://[fd00::]/8", "http://[::1]:8080"])
        #expect(allowed(l, "rtsp://[fd12:3456::1]/cam"))
        #expect(!allowed(l, "rtsp://[fe80::1]/cam"))
        #expect(allowed(l, "http://[::1]:8080/x"))
        #expect(!allowed(l, "http://[::1]:8081/x"))
        #expect(!allowed(l, "http://[::2]:8080/x"))
        #expect(allowed(l, "rtsp://cams.example.org/x") == false, "192.168.10.20 is outside fd00::/8")
    }

    @Test func mappedAddressesAreTheirIPv4() throws {
        let l = try list(["http://127.0.0.1"])
        #expect(allowed(l, "http://[::ffff:127.0.0.1]/x"))
        #expect(!allowed(l, "http://[::ffff:127.0.0.2]/x"))
        #expect(CIDRBlock("::ffff:10.0.0.0/104")?.contains(IPAddress("10.1.2.3")!) == true)
    }

    @Test func ports() throws {
        let l = try list(["http://127.0.0.1:8000", "https://cdn.example.com:8443", "rtsp://cams.example.org"])
        #expect(allowed(l, "http://127.0.0.1:8000/"))
        #expect(!allowed(l, "http://127.0.0.1/"), "port 80 is not 8000")
        #expect(!allowed(l, "http://127.0.0.1:8001/"))
        #expect(allowed(l, "https://cdn.example.com:8443/"))
        #expect(!allowed(l, "https://cdn.example.com/"))
        #expect(allowed(l, "rtsp://cams.example.org:8554/a"), "no port in the entry: any port")
    }

    @Test func dnsAnswersAreChecked() throws {
        let l = try list(["https://rebind.example.com", "https://metadata.example.com", "http://192.168.10.0/24", "https://lan.example.net"])
        // A listed name that resolves to loopback or link-local needs its address listed.
        #expect(!allowed(l, "https://rebind.example.com/x"))
        #expect(!allowed(l, "https://metadata.example.com/latest"))
        // A name not listed plays when all its answers are in a listed block of its scheme.
        #expect(allowed(l, "http://lan.example.net/x"))
        #expect(!allowed(l, "http://mixed.example.net/x"), "one answer outside the block")
        #expect(!allowed(l, "http://nowhere.example.net/x"))
        if case .refused(let why) = l.check("http://nowhere.example.net/x", resolve: FakeResolver.resolve) {
            #expect(why.contains("did not resolve") && why.contains("nowhere.example.net"))
        } else {
            Issue.record("an unresolvable name was allowed")
        }
        let withLoopback = try list(["https://rebind.example.com", "https://127.0.0.1"])
        #expect(allowed(withLoopback, "https://rebind.example.com/x"))
    }

    @Test func cryptoPrefixIsItsURL() throws {
        let l = try list(["https://cdn.example.com"])
        #expect(allowed(l, "crypto+https://cdn.example.com/seg1.ts"))
        #expect(!allowed(l, "crypto+https://127.0.0.2/seg1.ts"))
        #expect(!allowed(l, "crypto:seg1.ts"), "a relative crypto URL is a file")
    }

    @Test func badEntriesNameThemselves() {
        let cases: [(String, String)] = [
            ("cdn.example.com", "is not scheme://host"),
            ("ftp://cdn.example.com", "the scheme \"ftp\" is not one of"),
            ("file:///srv", "the scheme \"file\""),
            ("http://", "names no host"),
            ("http://10.0.0.0/33", "is not an address block"),
            ("http://10.0.0.0/x", "is not an address block"),
            ("http://[fd00::]/129", "is not an address block"),
            ("http://host:99999", "is not 1 to 65535"),
            ("http://host:0", "is not 1 to 65535"),
            ("http://-bad-.example", "is not a host name"),
            ("http://a b", "is not a host name"),
        ]
        for (entry, expected) in cases {
            do {
                _ = try NetworkAllowList(entries: ["https://ok.example", entry])
                Issue.record("\(entry) was accepted")
            } catch {
                #expect(error.reason.hasPrefix("[1]: "), "\(error.reason)")
                #expect(error.reason.contains(expected), "\(entry): \(error.reason)")
            }
        }
    }

    @Test func entriesReadBack() throws {
        let l = try list(["RTSP://[fd00::]/8:554", "https://*.Example.org", "udp://239.0.0.0/8", "http://10.1.2.3/"])
        #expect(l.rules.map(\.description) == ["rtsp://[fd00::]/8:554", "https://*.example.org", "udp://239.0.0.0/8", "http://10.1.2.3/32"])
    }
}

@Suite struct NetworkURLTests {
    @Test func parts() throws {
        #expect(try NetworkURL(parsing: "rtsp://admin:se:cr@et@Cam1.local:8554/stream?x=1") == NetworkURL(scheme: "rtsp", host: "cam1.local", port: 8554))
        #expect(try NetworkURL(parsing: "http://[2001:db8::1]:80/a") == NetworkURL(scheme: "http", host: "2001:db8::1", port: 80))
        #expect(try NetworkURL(parsing: "udp://@239.0.0.1:5000") == NetworkURL(scheme: "udp", host: "239.0.0.1", port: 5000))
        #expect(try NetworkURL(parsing: "https://h?q=http://127.0.0.2/") == NetworkURL(scheme: "https", host: "h", port: nil))
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "http://h:70000/") }
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "http://[::1/") }
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "http://h%2e:1/") }
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "http://h\u{1b}[2J/") }
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "http://hé.example/") }
        #expect(throws: NetworkURL.ParseError.self) { try NetworkURL(parsing: "/srv/a.mp4") }
    }

    @Test func networkSchemes() {
        #expect(NetworkURL.hasNetworkScheme("https://cdn.example.com/a.m3u8"))
        #expect(NetworkURL.hasNetworkScheme("rtsp://cam/x"))
        #expect(NetworkURL.hasNetworkScheme("crypto:seg.ts"))
        #expect(!NetworkURL.hasNetworkScheme("file:///srv/a.mp4"))
        #expect(!NetworkURL.hasNetworkScheme("/srv/a:b.mp4"))
        #expect(!NetworkURL.hasNetworkScheme("media/a.mp4"))
        #expect(!NetworkURL.hasNetworkScheme("C:a.mp4"))
    }

    @Test func addresses() {
        #expect(IPAddress("10.0.0.1")?.bytes == [10, 0, 0, 1])
        #expect(IPAddress("::1")?.description == "::1")
        #expect(IPAddress("example.com") == nil)
        #expect(IPAddress("127.0.0.1")?.isSpecial == true)
        #expect(IPAddress("169.254.169.254")?.isSpecial == true)
        #expect(IPAddress("fe80::1")?.isSpecial == true)
        #expect(IPAddress("8.8.8.8")?.isSpecial == false)
        #expect(CIDRBlock("10.0.0.0/8")?.contains(IPAddress("10.255.0.1")!) == true)
        #expect(CIDRBlock("10.0.0.0/8")?.contains(IPAddress("11.0.0.1")!) == false)
        #expect(CIDRBlock("192.168.1.128/25")?.contains(IPAddress("192.168.1.200")!) == true)
        #expect(CIDRBlock("192.168.1.128/25")?.contains(IPAddress("192.168.1.100")!) == false)
        #expect(CIDRBlock("0.0.0.0/0")?.contains(IPAddress("1.2.3.4")!) == true)
        #expect(CIDRBlock("0.0.0.0/0")?.contains(IPAddress("::1")!) == false, "families never mix")
        #expect(CIDRBlock("2001:db8::/33")?.contains(IPAddress("2001:db8:7fff::1")!) == true)
        #expect(CIDRBlock("2001:db8::/33")?.contains(IPAddress("2001:db8:8000::1")!) == false)
    }
}
