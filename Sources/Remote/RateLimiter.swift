/// Requests per client address: a token bucket each (`rate` a second, bursts of `burst`), for at
/// most `maxClients` addresses (the least recently seen is forgotten first). Time is given by the
/// caller, in seconds on a monotonic clock.
public struct RateLimiter: Sendable {
    public let rate: Double
    public let burst: Double
    public let maxClients: Int
    private var buckets: [String: (tokens: Double, last: Double)] = [:]

    public init(rate: Double, burst: Double? = nil, maxClients: Int = 1024) {
        self.rate = rate
        self.burst = max(1, burst ?? rate * 2)
        self.maxClients = maxClients
    }

    /// Takes one request for `client` at `now`; false when it is over its rate.
    public mutating func allow(_ client: String, now: Double) -> Bool {
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.last) * rate)
        bucket.last = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        if buckets[client] == nil && buckets.count >= maxClients, let oldest = buckets.min(by: { $0.value.last < $1.value.last }) {
            buckets[oldest.key] = nil
        }
        buckets[client] = bucket
        return allowed
    }

    public var clientCount: Int { buckets.count }
}
