/// A display refresh rate as an exact fraction of hertz (`60000/1001` for 59.94 Hz).
public struct RefreshRate: Sendable, Hashable, CustomStringConvertible {
    /// Vsyncs per `denominator` seconds.
    public let numerator: Int64
    public let denominator: Int64

    public init(numerator: Int64, denominator: Int64 = 1) {
        precondition(numerator > 0 && denominator > 0, "a refresh rate is positive")
        let g = gcd(numerator, denominator)
        self.numerator = numerator / g
        self.denominator = denominator / g
    }

    /// Parses `60`, `50`, `59.94`, `23.976`. The NTSC rates (x.94, x.97, x.976) mean N*1000/1001, as
    /// displays report them; other decimals are taken exactly.
    public init?(parsing text: String) {
        guard let hz = Double(text), hz.isFinite, hz > 0, hz <= 1000 else { return nil }
        let ntsc = (hz * 1.001).rounded()
        if abs(hz - ntsc / 1.001) < 0.005 && abs(hz - hz.rounded()) > 0.001 {
            self.init(numerator: Int64(ntsc) * 1000, denominator: 1001)
            return
        }
        guard let dot = text.firstIndex(of: ".") else {
            guard let whole = Int64(text) else { return nil }
            self.init(numerator: whole)
            return
        }
        let decimals = text.distance(from: dot, to: text.endIndex) - 1
        guard decimals <= 6 else { return nil }
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        guard let scaled = Int64(text.replacingOccurrences(of: ".", with: "")) else { return nil }
        self.init(numerator: scaled, denominator: scale)
    }

    public var hertz: Double { Double(numerator) / Double(denominator) }

    /// The length of one vsync interval.
    public var interval: MediaTime { MediaTime(value: denominator, timescale: Int32(clamping: numerator)) }

    public var description: String {
        denominator == 1 ? "\(numerator)" : String(hertz.formatted(decimals: 3))
    }
}

/// A video mode: size in pixels and refresh rate, written `1920x1080@60` or `1920x1080@59.94`.
public struct DisplayMode: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var refresh: RefreshRate

    public init(width: Int, height: Int, refresh: RefreshRate) {
        self.width = width
        self.height = height
        self.refresh = refresh
    }

    public static let fullHD = DisplayMode(width: 1920, height: 1080, refresh: RefreshRate(numerator: 60))

    /// Parses `WxH@Hz`; without `@Hz` the refresh is 60.
    public init?(parsing text: String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let size = parts[0].split(separator: "x", omittingEmptySubsequences: false)
        guard size.count == 2, let w = Int(size[0]), let h = Int(size[1]),
              (1...16384).contains(w), (1...16384).contains(h) else { return nil }
        var refresh = RefreshRate(numerator: 60)
        if parts.count == 2 {
            guard let parsed = RefreshRate(parsing: String(parts[1])) else { return nil }
            refresh = parsed
        }
        self.init(width: w, height: h, refresh: refresh)
    }

    public var description: String { "\(width)x\(height)@\(refresh)" }
}

func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    var (a, b) = (abs(a), abs(b))
    while b != 0 { (a, b) = (b, a % b) }
    return max(a, 1)
}

extension Double {
    /// Fixed-point text without trailing zeros: `2.0`, `1.966667`, `59.94`.
    public func formatted(decimals: Int) -> String {
        var text = String(format: "%.\(decimals)f", self)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text += "0" }
        }
        return text
    }
}
