import Foundation
import CFreeType

/// A FreeType call that failed: names the call and its `FT_Error`.
public struct FreeTypeError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let call: String
    public let code: Int32
    public let detail: String
    public init(call: String, code: Int32, detail: String = "") {
        self.call = call
        self.code = code
        self.detail = detail
    }
    public var description: String {
        "\(call) failed: FT_Error \(code)" + (FreeTypeError.name(of: code).map { " (\($0))" } ?? "") + (detail.isEmpty ? "" : ": \(detail)")
    }

    /// The meaning of the common codes (fterrdef.h).
    static func name(of code: Int32) -> String? {
        switch code {
        case 0x01: "cannot open resource"
        case 0x02: "unknown file format"
        case 0x03: "broken file"
        case 0x06: "invalid argument"
        case 0x10: "invalid glyph index"
        case 0x17: "invalid pixel size"
        case 0x40: "out of memory"
        default: nil
        }
    }
}

/// Renders lines of text with FreeType into overlay images: one font face (a file), anti-aliased
/// (256 grey levels), in one colour. The one owner of its FreeType library and face, which it
/// frees. Used from one thread at a time.
public final class TextRenderer {
    public let fontPath: String
    private var library: FT_Library?
    private var face: FT_Face?
    private var pixelHeight = 0
    /// The font file's bytes, when given as bytes: FreeType reads them for as long as the face lives.
    private let fontBytes: UnsafeMutableBufferPointer<UInt8>?

    /// Opens the font file (any format FreeType reads: TrueType, OpenType, Type 1 ...).
    public convenience init(fontPath: String) throws(FreeTypeError) {
        try self.init(fontPath: fontPath, bytes: nil)
    }

    /// A font from the bytes of its file (read by the caller, as it reads files from outside:
    /// regular files only, bounded); `fontPath` names it in errors.
    public convenience init(fontPath: String, fontData: [UInt8]) throws(FreeTypeError) {
        try self.init(fontPath: fontPath, bytes: fontData)
    }

    private init(fontPath: String, bytes: [UInt8]?) throws(FreeTypeError) {
        self.fontPath = fontPath
        if let bytes {
            let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
            _ = copy.initialize(from: bytes)
            fontBytes = copy
        } else {
            fontBytes = nil
        }
        var library: FT_Library?
        let r = FT_Init_FreeType(&library)
        // Every stored property is set from here on: a throw runs deinit, which frees the bytes.
        guard r == 0, let library else { throw FreeTypeError(call: "FT_Init_FreeType", code: r) }
        self.library = library
        var face: FT_Face?
        let f: FT_Error
        if let fontBytes {
            f = FT_New_Memory_Face(library, fontBytes.baseAddress, FT_Long(bytes?.count ?? 0), 0, &face)
        } else {
            f = FT_New_Face(library, fontPath, 0, &face)
        }
        guard f == 0, let face else {
            FT_Done_FreeType(library)
            self.library = nil
            throw FreeTypeError(call: "FT_New_Face(\(fontPath))", code: f)
        }
        self.face = face
    }

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
        fontBytes?.deallocate()
    }

    /// `text` (one line) at a font size of `pixelHeight` pixels (the em, as CSS's `font-size`), as
    /// an image as high as the font's ascent plus descent at that size and as wide as its glyphs
    /// advance, premultiplied `color` where the glyphs cover.
    /// Nil for text that draws nothing at all (empty, or only spaces).
    public func render(_ text: String, pixelHeight: Int, color: RGBColor) throws(FreeTypeError) -> OverlayImage? {
        guard let face else { throw FreeTypeError(call: "FT_New_Face(\(fontPath))", code: 0, detail: "no face") }
        guard (1...2048).contains(pixelHeight) else {
            throw FreeTypeError(call: "FT_Set_Pixel_Sizes", code: 0x17, detail: "\(pixelHeight) px is outside 1 to 2048")
        }
        if pixelHeight != self.pixelHeight {
            let r = FT_Set_Pixel_Sizes(face, 0, FT_UInt(pixelHeight))
            guard r == 0 else { throw FreeTypeError(call: "FT_Set_Pixel_Sizes(\(pixelHeight))", code: r) }
            self.pixelHeight = pixelHeight
        }
        // The font's ascent and descent at this size (26.6 fixed point): the line's box.
        let metrics = face.pointee.size.pointee.metrics
        // A font's own numbers: kept within four times the size, so that a broken font cannot ask
        // for a huge picture.
        let limit = Double(4 * pixelHeight)
        let baseline = Int(min(limit, max(1, (Double(metrics.ascender) / 64).rounded(.up))))
        let descent = Int(min(limit, max(0, (Double(-metrics.descender) / 64).rounded(.up))))
        // Each glyph's coverage, where it goes.
        var glyphs: [(x: Int, y: Int, width: Int, rows: Int, coverage: [UInt8])] = []
        var penX = 0, right = 0
        for scalar in text.unicodeScalars.prefix(1024) {
            let r = FT_Load_Char(face, FT_ULong(scalar.value), marquee_ft_load_render())
            guard r == 0 else { throw FreeTypeError(call: "FT_Load_Char(U+\(String(scalar.value, radix: 16, uppercase: true)))", code: r) }
            let slot = face.pointee.glyph.pointee
            let bitmap = slot.bitmap
            let width = Int(bitmap.width), rows = Int(bitmap.rows), pitch = Int(bitmap.pitch)
            if width > 0 && rows > 0 {
                guard bitmap.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue), let buffer = bitmap.buffer, abs(pitch) >= width else {
                    throw FreeTypeError(call: "FT_Load_Char(U+\(String(scalar.value, radix: 16, uppercase: true)))", code: 0,
                                        detail: "a glyph bitmap that is not 8-bit grey (pixel mode \(bitmap.pixel_mode))")
                }
                var coverage = [UInt8](repeating: 0, count: width * rows)
                for row in 0..<rows {
                    // A negative pitch: the rows go up from the buffer's start.
                    let start = pitch >= 0 ? row * pitch : (rows - 1 - row) * -pitch
                    for col in 0..<width { coverage[row * width + col] = buffer[start + col] }
                }
                let x = penX + Int(slot.bitmap_left), y = baseline - Int(slot.bitmap_top)
                glyphs.append((x, y, width, rows, coverage))
                right = max(right, x + width)
            }
            penX += Int(min(limit, max(0, (Double(slot.advance.x) / 64).rounded())))
            right = max(right, penX)
        }
        let left = min(0, glyphs.map(\.x).min() ?? 0)
        let imageWidth = right - left, imageHeight = baseline + descent
        guard !glyphs.isEmpty, imageWidth > 0, imageWidth <= 16384 else { return nil }
        var pixels = [UInt8](repeating: 0, count: imageWidth * imageHeight * 4)
        for glyph in glyphs {
            for row in 0..<glyph.rows {
                let y = glyph.y + row
                guard y >= 0, y < imageHeight else { continue }
                for col in 0..<glyph.width {
                    let c = glyph.coverage[row * glyph.width + col]
                    guard c > 0 else { continue }
                    let i = (y * imageWidth + glyph.x - left + col) * 4
                    // Overlapping glyphs: the larger coverage.
                    guard c > pixels[i + 3] else { continue }
                    let a = UInt16(c)
                    pixels[i] = UInt8((UInt16(color.red) * a + 127) / 255)
                    pixels[i + 1] = UInt8((UInt16(color.green) * a + 127) / 255)
                    pixels[i + 2] = UInt8((UInt16(color.blue) * a + 127) / 255)
                    pixels[i + 3] = c
                }
            }
        }
        return OverlayImage(width: imageWidth, height: imageHeight, premultipliedPixels: pixels)
    }
}
