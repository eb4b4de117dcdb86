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

/// The affine map from 8-bit-normalised Y'CbCr samples to R'G'B': `rgb = matrix * (yuv - offset)`.
/// `matrix` is column-major, as GL's `glUniformMatrix3fv` takes it.
struct YUVToRGB: Equatable {
    var matrix: [Float]
    var offset: [Float]

    init(_ colorMatrix: ColorMatrix, _ range: ColorRange) {
        let (kr, kb): (Double, Double)
        switch colorMatrix {
        case .bt601: (kr, kb) = (0.299, 0.114)
        case .bt709: (kr, kb) = (0.2126, 0.0722)
        case .bt2020: (kr, kb) = (0.2627, 0.0593)
        }
        let kg = 1 - kr - kb
        // Scale from the coded range to [0, 1] luma and [-0.5, 0.5] chroma.
        let (ys, cs, yOffset): (Double, Double, Double) = range == .limited
            ? (255.0 / 219.0, 255.0 / 224.0, 16.0 / 255.0)
            : (1.0, 1.0, 0.0)
        let crR = 2 * (1 - kr), cbB = 2 * (1 - kb)
        let cbG = -2 * kb * (1 - kb) / kg, crG = -2 * kr * (1 - kr) / kg
        // Columns: Y, Cb, Cr.
        matrix = [ys, ys, ys, 0, cbG * cs, cbB * cs, crR * cs, crG * cs, 0].map { Float($0) }
        offset = [Float(yOffset), Float(128.0 / 255.0), Float(128.0 / 255.0)]
    }
}
