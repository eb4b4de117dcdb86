import Media

/// An sRGB colour, as the config writes it: `#rrggbb`.
public struct RGBColor: Sendable, Equatable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    public static let black = RGBColor(red: 0, green: 0, blue: 0)

    public init?(hex: String) {
        guard hex.count == 7, hex.first == "#", let v = UInt32(hex.dropFirst(), radix: 16) else { return nil }
        self.init(red: UInt8(v >> 16 & 0xFF), green: UInt8(v >> 8 & 0xFF), blue: UInt8(v & 0xFF))
    }

    public var description: String {
        "#" + [red, green, blue].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// The affine map from sampled texture values to R'G'B': `rgb = matrix * (sample - offset)`.
/// `matrix` is column-major, as GL's `glUniformMatrix3fv` takes it.
///
/// A texture sample `s` (0-1, normalised over the texture's storage) is the code value
/// `c = s * sampleScale`: 255 for 8-bit textures, 65535 for 16-bit words holding their sample in the
/// low bits (yuv420p10le), 65535 / 64 for samples in the high bits (p010). The code value is turned
/// into E'Y (0-1) and E'Cb/E'Cr (-0.5-0.5) as H.273 defines it for `bits`-bit samples:
/// limited: (c - 16·2^(n-8)) / (219·2^(n-8)) and (c - 2^(n-1)) / (224·2^(n-8));
/// full: c / (2^n - 1) and (c - 2^(n-1)) / (2^n - 1). Both steps are folded into one matrix.
struct YUVToRGB: Equatable {
    var matrix: [Float]
    var offset: [Float]

    init(_ colorMatrix: ColorMatrix, _ range: ColorRange, bits: Int = 8, sampleScale: Double = 255) {
        let (kr, kb) = colorMatrix.coefficients
        let kg = 1 - kr - kb
        let step = Double(1 << (bits - 8))
        let (yOffset, yScale, cScale): (Double, Double, Double) = range == .limited
            ? (16 * step, 219 * step, 224 * step)
            : (0, Double((1 << bits) - 1), Double((1 << bits) - 1))
        let cOffset = Double(1 << (bits - 1))
        let crR = 2 * (1 - kr), cbB = 2 * (1 - kb)
        let cbG = -2 * kb * (1 - kb) / kg, crG = -2 * kr * (1 - kr) / kg
        let ys = sampleScale / yScale, cs = sampleScale / cScale
        // Columns: Y, Cb, Cr.
        matrix = [ys, ys, ys, 0, cbG * cs, cbB * cs, crR * cs, crG * cs, 0].map { Float($0) }
        offset = [yOffset / sampleScale, cOffset / sampleScale, cOffset / sampleScale].map { Float($0) }
    }
}
