import Foundation
import Media
import Network
import Playback

extension KioskConfig {
    /// The URL of an item's `path`: a network URL as written, else the file.
    public static func mediaURL(_ path: String) -> URL {
        NetworkURL.hasNetworkScheme(path) ? URL(string: path) ?? URL(fileURLWithPath: path) : URL(fileURLWithPath: path)
    }
}

/// `network`: which network sources may play (`allow`, denied by default) and how long opening
/// and reading one may wait.
public struct NetworkSettings: Sendable, Equatable {
    public var allow = NetworkAllowList.none
    /// Opening a network source: connecting, reading its header and stream parameters (seconds).
    public var openTimeout = 10.0
    /// One read of a network source waiting for data (seconds).
    public var readTimeout = 5.0
    /// The longest a live source's picture may be shown after its data came (`LiveLatency`,
    /// seconds): later frames are dropped until it is back under this.
    public var liveLatency = 1.0
    /// `cache`: remote files kept on disk and played from there (RemoteMediaCache.swift); nil: none.
    public var cache: RemoteCacheSettings?

    /// The media I/O limits these settings give FFmpeg.
    public var limits: MediaIOLimits {
        var limits = MediaIOLimits(open: openTimeout, read: readTimeout)
        limits.network = allow
        return limits
    }
}

/// Longest open or read limit for a network source, in seconds.
let longestNetworkWait = 600.0

extension ConfigReader {
    mutating func readNetwork(_ value: JSONValue) -> NetworkSettings {
        var settings = NetworkSettings()
        guard let fields = members(value, at: "network", allowed: ["allow", "openTimeout", "readTimeout", "liveLatency", "cache"]) else { return settings }
        for (key, v) in fields {
            let path = "network.\(key)"
            switch key {
            case "allow":
                guard case .array(let entries) = v else {
                    problem(path, "expected an array of scheme://host entries, found \(v.typeName)")
                    continue
                }
                var rules: [NetworkAllowList.Rule] = []
                for (index, entry) in entries.enumerated() {
                    guard let text = string(entry, at: "\(path)[\(index)]") else { continue }
                    do {
                        rules.append(try NetworkAllowList.rule(text))
                    } catch {
                        problem("\(path)[\(index)]", error.reason)
                    }
                }
                settings.allow = NetworkAllowList(rules: rules)
            case "openTimeout", "readTimeout":
                guard case .number(let n) = v else {
                    problem(path, "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do {
                    let s = try checkedNumber(n, in: 0.1...longestNetworkWait, field: path)
                    if key == "openTimeout" { settings.openTimeout = s } else { settings.readTimeout = s }
                } catch {
                    problem(error)
                }
            case "liveLatency":
                guard case .number(let n) = v else {
                    problem(path, "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do {
                    settings.liveLatency = try checkedNumber(n, in: 0.01...60, field: path)
                } catch {
                    problem(error)
                }
            case "cache":
                settings.cache = readCache(v, at: path)
            default: break
            }
        }
        return settings
    }

    /// `network.cache`: `folder`, `maxSize` (megabytes), `refresh` (seconds).
    mutating func readCache(_ value: JSONValue, at path: String) -> RemoteCacheSettings? {
        guard let fields = members(value, at: path, allowed: ["folder", "maxSize", "refresh"]) else { return nil }
        var cache = RemoteCacheSettings()
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "folder":
                guard let text = string(v, at: field) else { continue }
                guard text.hasPrefix("/") else { problem(field, "\"\(Self.clipped(text))\" is not an absolute folder path"); continue }
                cache.folder = text
            case "maxSize", "refresh":
                guard case .number(let n) = v else {
                    problem(field, key == "maxSize" ? "expected a number of megabytes, found \(v.typeName)" : "expected a number of seconds, found \(v.typeName)")
                    continue
                }
                do {
                    if key == "maxSize" {
                        cache.maxSize = Int64(try checkedNumber(n, in: 1...1_000_000, field: field) * 1_048_576)
                    } else {
                        cache.refresh = try checkedNumber(n, in: 1...86_400, field: field)
                    }
                } catch {
                    problem(error)
                }
            default: break
            }
        }
        return cache
    }

    /// Every network item's scheme must be in `network.allow` (its host is checked, with DNS, each
    /// time it opens): a config naming a stream it may not play says so at once.
    mutating func checkNetworkItems(_ config: KioskConfig) {
        let schemes = Set(config.network.allow.rules.map(\.scheme))
        for (index, item) in config.playlist.enumerated() where NetworkURL.hasNetworkScheme(item.uri) {
            let path = "playlist[\(index)].uri"
            do {
                let url = try NetworkURL(parsing: item.uri)
                if !schemes.contains(url.scheme) {
                    problem(path, "\"\(Self.clipped(item.uri))\": \(url.scheme) is not in network.allow (network sources are denied unless listed, docs/network.md)")
                }
            } catch {
                problem(path, error.reason)
            }
        }
    }
}
