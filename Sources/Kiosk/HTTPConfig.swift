import HTTPServer
import Playback

/// `http`: the HTTP API (docs/http.md). Off unless `listen` is given; then `tokens` must be too:
/// there is no default secret.
public struct HTTPSettings: Sendable, Equatable {
    /// `http.listen`: `address:port` or a Unix socket's path; nil: no HTTP server.
    public var listen: HTTPListenAddress?
    /// `http.tokens`: the token file (one `role sha256:HEX name` a line), resolved against the
    /// config's folder.
    public var tokens: String?
    /// `http.tls.certificate` and `http.tls.key`: PEM files; nil: plain HTTP.
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// `http.allowedHosts`: names the `Host` header may give besides the listen address and
    /// `localhost` (the names the box is reached by; anything else is a DNS rebinding).
    public var allowedHosts: [String] = []
    /// `http.dashboard`: the folder of the web dashboard's files (the repository's `dashboard/`),
    /// served at `/` without a token (they hold no data); nil: no dashboard.
    public var dashboard: String?
    /// `http.healthz`: answer `GET /healthz` without a token (status only, for uptime monitors).
    public var healthz = false
    /// `http.maxConnections`, `http.maxConnectionsPerClient`, `http.idleTimeout`, `http.maxHeaderBytes`.
    public var limits = HTTPServerLimits()
    /// `http.maxBodyBytes`: the largest JSON body (a config put).
    public var maxBodyBytes = 4 << 20
    /// `http.requestsPerSecond`: per client address, with bursts of twice that.
    public var requestsPerSecond = 20.0
    /// `http.uploads.directory`: where uploads go; nil: uploads are refused.
    public var uploadDirectory: String?
    /// `http.uploads.maxBytes`: the largest upload.
    public var maxUploadBytes = 1 << 30
    /// `http.uploads.minFreeBytes`: an upload that would leave less free space is refused (and
    /// stopped when the disk fills under it).
    public var minFreeBytes = 256 << 20

    public init() {}
}

extension ConfigReader {
    mutating func readHTTP(_ value: JSONValue, baseDirectory: String) -> HTTPSettings {
        var settings = HTTPSettings()
        guard let fields = members(value, at: "http", allowed: ["listen", "tokens", "tls", "allowedHosts", "healthz", "maxConnections",
                                                                "maxConnectionsPerClient", "idleTimeout", "maxHeaderBytes", "maxBodyBytes",
                                                                "requestsPerSecond", "uploads", "dashboard"]) else { return settings }
        func integer(_ v: JSONValue, _ path: String, _ range: ClosedRange<Int>, _ reader: inout ConfigReader) -> Int? {
            guard case .number(let n) = v else {
                reader.problem(path, "expected a whole number from \(range.lowerBound) to \(range.upperBound), found \(v.typeName)")
                return nil
            }
            do { return try checkedInteger(n, in: range, field: path) } catch {
                reader.problem(error)
                return nil
            }
        }
        for (field, v) in fields {
            let path = "http.\(field)"
            switch field {
            case "listen":
                guard let s = string(v, at: path) else { continue }
                do { settings.listen = try HTTPListenAddress(parsing: s) } catch { problem(path, error.message) }
            case "tokens":
                settings.tokens = fileName(v, at: path, baseDirectory: baseDirectory)
            case "tls":
                guard let tls = members(v, at: path, allowed: ["certificate", "key"]) else { continue }
                for (key, entry) in tls {
                    let name = fileName(entry, at: "\(path).\(key)", baseDirectory: baseDirectory)
                    if key == "certificate" { settings.tlsCertificate = name } else { settings.tlsKey = name }
                }
                if (settings.tlsCertificate == nil) != (settings.tlsKey == nil) && !tls.isEmpty {
                    problem(path, "give both certificate and key")
                }
            case "allowedHosts":
                guard case .array(let list) = v else {
                    problem(path, "expected a list of host names, found \(v.typeName)")
                    continue
                }
                for (i, entry) in list.enumerated() {
                    guard let s = string(entry, at: "\(path)[\(i)]") else { continue }
                    if s.isEmpty || s.utf8.count > 253 || s.contains(where: { $0 == "/" || $0 == " " || $0 == "@" }) {
                        problem("\(path)[\(i)]", "\"\(Self.clipped(s))\" is not a host name")
                    } else {
                        settings.allowedHosts.append(s.lowercased())
                    }
                }
            case "healthz":
                if let b = bool(v, at: path) { settings.healthz = b }
            case "dashboard":
                settings.dashboard = fileName(v, at: path, baseDirectory: baseDirectory)
            case "maxConnections":
                if let n = integer(v, path, 1...1024, &self) { settings.limits.maxConnections = n }
            case "maxConnectionsPerClient":
                if let n = integer(v, path, 1...1024, &self) { settings.limits.maxConnectionsPerClient = n }
            case "idleTimeout":
                if let n = integer(v, path, 1...3600, &self) { settings.limits.idleTimeout = n }
            case "maxHeaderBytes":
                if let n = integer(v, path, 4096...(1 << 20), &self) { settings.limits.maxHeaderBytes = n }
            case "maxBodyBytes":
                if let n = integer(v, path, 1024...largestConfigFile, &self) { settings.maxBodyBytes = n }
            case "requestsPerSecond":
                guard case .number(let n) = v else {
                    problem(path, "expected a number from 0.1 to 10000, found \(v.typeName)")
                    continue
                }
                do { settings.requestsPerSecond = try checkedNumber(n, in: 0.1...10_000, field: path) } catch { problem(error) }
            case "uploads":
                guard let uploads = members(v, at: path, allowed: ["directory", "maxBytes", "minFreeBytes"]) else { continue }
                for (key, u) in uploads {
                    switch key {
                    case "directory": settings.uploadDirectory = fileName(u, at: "\(path).directory", baseDirectory: baseDirectory)
                    case "maxBytes": if let n = integer(u, "\(path).maxBytes", 1...(1 << 50), &self) { settings.maxUploadBytes = n }
                    default: if let n = integer(u, "\(path).minFreeBytes", 0...(1 << 50), &self) { settings.minFreeBytes = n }
                    }
                }
            default: break
            }
        }
        if settings.listen != nil && settings.tokens == nil {
            problem("http.tokens", "missing: the HTTP API has no default secret; give a token file (docs/http.md)")
        }
        return settings
    }
}
