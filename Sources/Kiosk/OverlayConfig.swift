import Foundation
import SystemCalls
import Media
import Playback
import Render

/// `overlays`: pictures drawn over the video on every output (a logo, a watermark, a line of text,
/// the local time), each placed by an anchor and an offset, with an opacity and optionally a
/// schedule of its own. Images are decoded (and scaled) when the config is read, so a file that
/// cannot be used is a config error with its path.
public struct OverlayConfig: Sendable, Equatable {
    public enum Content: Sendable, Equatable {
        /// `image`: a picture file (PNG with alpha, or anything FFmpeg decodes), already at its
        /// drawn size, premultiplied.
        case image(uri: String, OverlayImage)
        /// `text`: a fixed line.
        case text(String)
        /// `clock`: the local time through a strftime format (`%H:%M`), changed on the second.
        case clock(format: String)

        public static func == (a: Content, b: Content) -> Bool {
            switch (a, b) {
            case let (.image(u1, i1), .image(u2, i2)): u1 == u2 && i1 === i2
            case let (.text(t1), .text(t2)): t1 == t2
            case let (.clock(f1), .clock(f2)): f1 == f2
            default: false
            }
        }

        var kind: String {
            switch self {
            case .image: "image"
            case .text: "text"
            case .clock: "clock"
            }
        }
    }

    /// Where an overlay sits: a corner, an edge's middle or the centre.
    public enum Anchor: String, Sendable, CaseIterable {
        case topLeft = "top-left", top, topRight = "top-right", left, center, right
        case bottomLeft = "bottom-left", bottom, bottomRight = "bottom-right"

        /// 0: left, 1: centre, 2: right.
        var column: Int {
            switch self {
            case .topLeft, .left, .bottomLeft: 0
            case .top, .center, .bottom: 1
            case .topRight, .right, .bottomRight: 2
            }
        }
        /// 0: top, 1: middle, 2: bottom.
        var row: Int {
            switch self {
            case .topLeft, .top, .topRight: 0
            case .left, .center, .right: 1
            case .bottomLeft, .bottom, .bottomRight: 2
            }
        }
    }

    /// What the anchor is relative to: the output, or (on a wall) the whole canvas.
    public enum Surface: String, Sendable, CaseIterable {
        case output, canvas
    }

    public var content: Content
    public var anchor = Anchor.topLeft
    /// Pixels from the anchored edges inwards (a centred axis: right and down), each -16384 to 16384.
    public var offsetX = 0
    public var offsetY = 0
    public var surface = Surface.output
    /// Text: the font size in pixels (the em, as CSS's `font-size`), 1 to 1024.
    public var size = 48
    public var opacity = 1.0
    public var color = RGBColor(red: 255, green: 255, blue: 255)
    /// Text: the font file (resolved against the config's folder).
    public var fontPath = OverlayConfig.defaultFont
    /// When it shows (days, from, to, dates as a schedule entry's); nil: always.
    public var schedule: Schedule.Entry?

    public init(content: Content) { self.content = content }

    /// DejaVu Sans, as Debian's fonts-dejavu-core installs it.
    public static let defaultFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

    /// The overlay's top-left corner for an image `width` x `height` on a surface `surfaceWidth` x
    /// `surfaceHeight`.
    public func origin(width: Int, height: Int, surfaceWidth: Int, surfaceHeight: Int) -> (x: Int, y: Int) {
        func place(_ slot: Int, _ size: Int, _ surface: Int, _ offset: Int) -> Int {
            switch slot {
            case 0: offset
            case 1: (surface - size) / 2 + offset
            default: surface - size - offset
            }
        }
        return (place(anchor.column, width, surfaceWidth, offsetX), place(anchor.row, height, surfaceHeight, offsetY))
    }

    public static func == (a: OverlayConfig, b: OverlayConfig) -> Bool {
        a.content == b.content && a.anchor == b.anchor && a.offsetX == b.offsetX && a.offsetY == b.offsetY
            && a.surface == b.surface && a.size == b.size && a.opacity == b.opacity && a.color == b.color
            && a.fontPath == b.fontPath && a.schedule == b.schedule
    }
}

/// The local time `time` in `zone` through the strftime `format` (nil when it formats to nothing,
/// or to more than 255 bytes). Fills the broken-down time from Foundation's calendar, so no
/// process-wide `TZ` is read or set.
func formatLocalTime(_ time: WallTime, format: String, zone: TimeZone) -> String? {
    let seconds = time.nanoseconds >= 0 ? time.nanoseconds / 1_000_000_000 : (time.nanoseconds + 1) / 1_000_000_000 - 1
    let date = Date(timeIntervalSince1970: Double(seconds))
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
    guard let year = c.year, let month = c.month, let day = c.day, let hour = c.hour, let minute = c.minute,
          let second = c.second, let weekday = c.weekday, let dayOfYear = calendar.ordinality(of: .day, in: .year, for: date),
          let tmYear = Int32(exactly: year - 1900) else { return nil }
    var parts = tm()
    parts.tm_year = tmYear
    parts.tm_mon = Int32(month - 1)
    parts.tm_mday = Int32(day)
    parts.tm_hour = Int32(hour)
    parts.tm_min = Int32(minute)
    parts.tm_sec = Int32(second)
    parts.tm_wday = Int32(weekday - 1)  // Calendar: 1 is Sunday; tm: 0 is
    parts.tm_yday = Int32(dayOfYear - 1)
    parts.tm_isdst = zone.isDaylightSavingTime(for: date) ? 1 : 0
    parts.tm_gmtoff = zone.secondsFromGMT(for: date)
    let abbreviation = zone.abbreviation(for: date) ?? zone.identifier
    var buffer = [CChar](repeating: 0, count: 256)
    let written = abbreviation.withCString { zoneName -> Int in
        parts.tm_zone = zoneName
        return strftime(&buffer, buffer.count, format, &parts)
    }
    guard written > 0 else { return nil }
    return String(decoding: buffer.prefix(written).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension ConfigReader {
    /// `overlays`: a list of overlays.
    mutating func readOverlays(_ value: JSONValue, baseDirectory: String) -> [OverlayConfig]? {
        guard case .array(let list) = value else {
            problem("overlays", "expected an array of overlays, found \(value.typeName)")
            return nil
        }
        if list.count > 64 { problem("overlays", "\(list.count) overlays: at most 64") }
        var overlays: [OverlayConfig] = []
        for (i, element) in list.prefix(64).enumerated() {
            if let overlay = readOverlay(element, at: "overlays[\(i)]", baseDirectory: baseDirectory) { overlays.append(overlay) }
        }
        return overlays.count == list.count ? overlays : nil
    }

    mutating func readOverlay(_ value: JSONValue, at path: String, baseDirectory: String) -> OverlayConfig? {
        guard let fields = members(value, at: path, allowed: ["image", "text", "clock", "anchor", "offset", "on", "size",
                                                             "width", "height", "scale", "opacity", "color", "font", "schedule"])
        else { return nil }
        let before = problems.count
        let kinds = fields.filter { ["image", "text", "clock"].contains($0.key) }
        guard kinds.count == 1, let kind = kinds.first else {
            problem(path, kinds.isEmpty ? "missing: give one of \"image\" (a picture file), \"text\" or \"clock\" (a strftime format such as \"%H:%M\")"
                                        : "give only one of \"image\", \"text\" and \"clock\"")
            return nil
        }
        func number(_ key: String, in range: ClosedRange<Double>, what: String) -> Double? {
            guard let v = fields.first(where: { $0.key == key })?.value else { return nil }
            guard case .number(let n) = v else {
                problem("\(path).\(key)", "expected \(what), found \(v.typeName)")
                return nil
            }
            do { return try checkedNumber(n, in: range, field: "\(path).\(key)") } catch { problem(error); return nil }
        }
        func integer(_ key: String, in range: ClosedRange<Int>, what: String) -> Int? {
            guard let v = fields.first(where: { $0.key == key })?.value else { return nil }
            guard case .number(let n) = v else {
                problem("\(path).\(key)", "expected \(what), found \(v.typeName)")
                return nil
            }
            do { return try checkedInteger(n, in: range, field: "\(path).\(key)") } catch { problem(error); return nil }
        }
        // Text and clock keys, image keys.
        let isImage = kind.key == "image"
        for (key, _) in fields where (isImage && ["size", "color", "font"].contains(key)) || (!isImage && ["width", "height", "scale"].contains(key)) {
            problem("\(path).\(key)", isImage ? "only for a text or clock overlay" : "only for an image overlay (text has \"size\")")
        }
        var overlay = OverlayConfig(content: .text(""))
        for (key, v) in fields {
            let field = "\(path).\(key)"
            switch key {
            case "anchor":
                if let anchor: OverlayConfig.Anchor = choice(v, at: field) { overlay.anchor = anchor }
            case "on":
                if let surface: OverlayConfig.Surface = choice(v, at: field) { overlay.surface = surface }
            case "offset":
                guard case .array(let pair) = v, pair.count == 2 else {
                    problem(field, "expected [x, y]: pixels in from the anchored edges, found \(Self.shown(v))")
                    continue
                }
                var xy: [Int] = []
                for (j, element) in pair.enumerated() {
                    guard case .number(let n) = element else {
                        problem("\(field)[\(j)]", "expected a number of pixels, found \(element.typeName)")
                        continue
                    }
                    do { xy.append(try checkedInteger(n, in: -16384...16384, field: "\(field)[\(j)]")) } catch { problem(error) }
                }
                if xy.count == 2 { (overlay.offsetX, overlay.offsetY) = (xy[0], xy[1]) }
            case "opacity":
                if let o = number("opacity", in: 0...1, what: "a number from 0 (invisible) to 1 (opaque)") { overlay.opacity = o }
            case "size":
                if let s = integer("size", in: 1...1024, what: "a font size in pixels") { overlay.size = s }
            case "color":
                guard let s = string(v, at: field) else { continue }
                guard let color = RGBColor(hex: s) else {
                    problem(field, "\"\(Self.clipped(s))\" is not a colour: write #rrggbb")
                    continue
                }
                overlay.color = color
            case "font":
                guard let s = string(v, at: field) else { continue }
                guard let file = Self.filePath(of: s) else {
                    problem(field, "\"\(Self.clipped(s))\" is not a file path")
                    continue
                }
                overlay.fontPath = KioskConfig.join(baseDirectory, file)
            case "schedule":
                guard let times = members(v, at: field, allowed: ["days", "from", "to", "dates"]) else { continue }
                var entry = Schedule.Entry()
                for (timeKey, tv) in times { readTimes(timeKey, tv, at: "\(field).\(timeKey)", into: &entry) }
                overlay.schedule = entry
            case "text":
                guard let s = string(v, at: field) else { continue }
                if s.isEmpty || s.count > 256 { problem(field, s.isEmpty ? "empty: give the text to show" : "\(s.count) characters: at most 256") }
                overlay.content = .text(s)
            case "clock":
                guard let s = string(v, at: field) else { continue }
                guard !s.isEmpty, s.utf8.count <= 128, formatLocalTime(.now(), format: s, zone: .current) != nil else {
                    problem(field, s.isEmpty ? "empty: give a strftime format such as \"%H:%M\""
                                             : "\"\(Self.clipped(s))\" is not a usable strftime format (it must give 1 to 255 bytes; at most 128 bytes long)")
                    continue
                }
                overlay.content = .clock(format: s)
            default: break
            }
        }
        // The font (text and clock): FreeType must open it.
        if !isImage && problems.count == before {
            do {
                _ = try openFont(overlay.fontPath)
            } catch {
                problem(fields.contains { $0.key == "font" } ? "\(path).font" : path,
                        "cannot use the font \(overlay.fontPath): \(error)")
            }
        }
        if isImage, problems.count == before, case .string(let uri) = kind.value {
            overlay.content = readOverlayImage(uri, at: "\(path).image", baseDirectory: baseDirectory,
                                               width: integer("width", in: 1...16384, what: "a width in pixels"),
                                               height: integer("height", in: 1...16384, what: "a height in pixels"),
                                               scale: number("scale", in: 0.001...100, what: "a scale factor")) ?? overlay.content
        } else if isImage, case .string = kind.value {
        } else if isImage {
            problem("\(path).image", "expected a file path, found \(kind.value.typeName)")
        }
        return problems.count == before ? overlay : nil
    }

    /// Decodes the picture file `uri` and scales it: to `width` and/or `height` (one alone keeps
    /// the aspect), or by `scale`; else as it is.
    mutating func readOverlayImage(_ uri: String, at field: String, baseDirectory: String,
                                   width: Int?, height: Int?, scale: Double?) -> OverlayConfig.Content? {
        guard let file = Self.filePath(of: uri) else {
            problem(field, "\"\(Self.clipped(uri))\" is not a file path")
            return nil
        }
        if scale != nil && (width != nil || height != nil) {
            problem(field.replacingOccurrences(of: ".image", with: ".scale"), "give either \"scale\" or \"width\"/\"height\", not both")
            return nil
        }
        let path = KioskConfig.join(baseDirectory, file)
        do {
            let decoded = try StillImageDecoder.decodeRGBA(path: path)
            guard let image = OverlayImage(width: decoded.width, height: decoded.height, straightPixels: decoded.pixels) else {
                problem(field, "\(path): a \(decoded.width)x\(decoded.height) picture is too large for an overlay (at most 16384 pixels a side)")
                return nil
            }
            var w = image.width, h = image.height
            if let scale {
                w = Int((Double(w) * scale).rounded())
                h = Int((Double(h) * scale).rounded())
            } else if let width, let height {
                (w, h) = (width, height)
            } else if let width {
                h = Int((Double(h) * Double(width) / Double(w)).rounded())
                w = width
            } else if let height {
                w = Int((Double(w) * Double(height) / Double(h)).rounded())
                h = height
            }
            guard (1...16384).contains(w), (1...16384).contains(h) else {
                problem(field, "\(path): scaled to \(w)x\(h), outside 1 to 16384 pixels a side")
                return nil
            }
            if (w, h) == (image.width, image.height) { return .image(uri: uri, image) }
            let scaled = try StillImageDecoder.scaleRGBA(image.pixels, width: image.width, height: image.height, toWidth: w, toHeight: h)
            guard let result = OverlayImage(width: w, height: h, premultipliedPixels: scaled) else { return nil }
            return .image(uri: uri, result)
        } catch {
            problem(field, "\(error)")
            return nil
        }
    }
}

/// The largest font file read (64 MB: a CJK font with every glyph is about 20 MB).
let largestFontFile = 64 << 20

/// The font file at `path` for FreeType, read as every file the config names is: a regular file
/// only (a FIFO would hang the reader), at most `largestFontFile`. At check time, start and reload.
func openFont(_ path: String) throws -> TextRenderer {
    let bytes: [UInt8]
    do {
        bytes = try RegularFile.read(path, limit: largestFontFile)
    } catch {
        throw FontFileError(description: error.reason)  // the callers name the file
    }
    return try TextRenderer(fontPath: path, fontData: bytes)
}

/// Why a font file could not be read ("is a FIFO, not a regular file").
struct FontFileError: Error, CustomStringConvertible {
    let description: String
}
