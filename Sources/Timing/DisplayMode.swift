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

    /// The rate `numerator / denominator` Hz, or nil unless both are positive (for values from outside).
    public init?(checkedNumerator numerator: Int64, denominator: Int64 = 1) {
        guard numerator > 0, denominator > 0 else { return nil }
        self.init(numerator: numerator, denominator: denominator)
    }

    /// Parses `60`, `50`, `59.94`, `23.976`: digits, then at most 6 decimals, from 1 to 1000 Hz (nil
    /// for anything else). The NTSC rates (x.94, x.97, x.976) mean N*1000/1001, as displays report
    /// them; other decimals are taken exactly.
    public init?(parsing text: String) {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0], decimals = parts.count == 2 ? parts[1] : ""
        func isDigits(_ s: Substring) -> Bool { s.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
        guard (1...4).contains(whole.count), isDigits(whole), parts.count == 1 || (1...6).contains(decimals.count),
              isDigits(decimals), let hz = Double(text), hz >= 1, hz <= 1000 else { return nil }
        let ntsc = (hz * 1.001).rounded()
        if abs(hz - ntsc / 1.001) < 0.005 && abs(hz - hz.rounded()) > 0.001 {
            self.init(checkedNumerator: Int64(ntsc) * 1000, denominator: 1001)
            return
        }
        // At most 10 digits: fits Int64.
        guard let scaled = Int64(whole + decimals) else { return nil }
        var scale: Int64 = 1
        for _ in 0..<decimals.count { scale *= 10 }
        self.init(checkedNumerator: scaled, denominator: scale)
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

    /// Parses `WxH@Hz` (1 to 16384 pixels each way, 1 to 1000 Hz); without `@Hz` the refresh is 60.
    public init?(parsing text: String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let size = parts[0].split(separator: "x", omittingEmptySubsequences: false)
        // Int(_:) of text returns nil past Int's range; it never traps.
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
