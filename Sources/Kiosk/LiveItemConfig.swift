import Network
import Playback

/// The tallest HLS variant height `live.maxHeight` may name (8K and then some).
let largestVariantHeight = 8640.0

extension ConfigReader {
    /// An item's `live`: `transport` ("tcp", "udp": RTSP only), `mode` ("smooth",
    /// "low-latency"), `latency` (seconds, over `network.liveLatency`), `maxHeight` (pixels, HLS).
    /// `uri`: the item's, when known (the keys that fit only some sources are checked against it).
    mutating func liveOptions(_ value: JSONValue, at path: String, uri: String?) -> LiveSourceOptions? {
        guard let fields = members(value, at: path, allowed: ["transport", "mode", "latency", "maxHeight"]) else { return nil }
        let scheme = uri.flatMap { try? NetworkURL(parsing: $0) }?.scheme
        if let uri, scheme == nil {
            problem(path, "\"\(Self.clipped(uri))\" is not a network source: live options are for rtsp://, HLS, udp:// and other streams")
            return nil
        }
        var options = LiveSourceOptions()
        var ok = true
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "transport":
                guard let t: LiveSourceOptions.Transport = choice(v, at: field) else { ok = false; continue }
                if let scheme, scheme != "rtsp" {
                    problem(field, "RTSP's transport, and this item is \(scheme)://")
                    ok = false
                }
                options.transport = t
            case "mode":
                guard let m: LiveSourceOptions.Mode = choice(v, at: field) else { ok = false; continue }
                options.mode = m
            case "latency":
                guard case .number(let n) = v else {
                    problem(field, "expected a number of seconds, found \(v.typeName)")
                    ok = false
                    continue
                }
                do { options.latency = try checkedNumber(n, in: 0.01...60, field: field) } catch {
                    problem(error)
                    ok = false
                }
            case "maxHeight":
                guard case .number(let n) = v else {
                    problem(field, "expected a number of pixels, found \(v.typeName)")
                    ok = false
                    continue
                }
                do {
                    let h = try checkedNumber(n, in: 1...largestVariantHeight, field: field)
                    guard h == h.rounded() else {
                        problem(field, "\(n) is not a whole number of pixels")
                        ok = false
                        continue
                    }
                    options.maxHeight = Int(h)
                } catch {
                    problem(error)
                    ok = false
                }
            default: break
            }
        }
        return ok ? options : nil
    }
}
