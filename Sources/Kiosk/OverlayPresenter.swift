import Foundation
import Media
import Playback
import Render
import Synchronization

/// What the `overlays` property says of one overlay.
public struct OverlayStatus: Sendable, Equatable {
    public var kind: String
    /// The text shown now (text and clock), the file (image).
    public var content: String
    public var visible: Bool
    /// Where it is drawn, in the output's pixels (x, y, width, height); nil while not drawn.
    public var rect: [Int]?
    /// Why it cannot be drawn (a font FreeType cannot read); nil when it can.
    public var problem: String?
}

/// The overlays of one output, on its presentation thread: for each vsync's local time it decides
/// which overlays show (their schedules), renders a text again only when it changed (a clock:
/// once a second, on the vsync whose time crosses the second), places them (anchor and offset on
/// the output, or on the wall canvas through the output's window) and hands the layer the
/// pictures when anything changed. A font that cannot be used leaves that overlay out (logged
/// once, in the `overlays` property); the video is never held up by an overlay.
final class OverlayPresenter {
    private(set) var overlays: [OverlayConfig]
    private let logger: Logger
    private var timeZone: TimeZone
    /// Per overlay: the text rendered last and its image, the renderer, the problem.
    private struct Rendered {
        var text: String?
        var image: OverlayImage?
        var problem: String?
    }
    private var rendered: [Rendered]
    /// One renderer per font file.
    private var renderers: [String: TextRenderer] = [:]
    private var failedFonts: [String: String] = [:]
    private var shown: [(index: Int, picture: OverlayPicture)] = []
    /// Called with what the `overlays` property shows whenever that changes.
    var onStatus: (([OverlayStatus]) -> Void)?
    private(set) var lastStatus: [OverlayStatus]?
    /// Texts rendered so far (a clock: one a second).
    private(set) var textsRendered = 0

    init(overlays: [OverlayConfig], timeZone: TimeZone, logger: Logger) {
        self.overlays = overlays
        self.timeZone = timeZone
        self.logger = logger
        rendered = overlays.map { _ in Rendered() }
    }

    /// Takes another config's overlays (a reload); true when they differ.
    func replace(_ new: [OverlayConfig], timeZone zone: TimeZone) -> Bool {
        guard new != overlays || zone != timeZone else { return false }
        overlays = new
        timeZone = zone
        rendered = new.map { _ in Rendered() }
        failedFonts = [:]
        logger.info("overlays changed", ["count": "\(new.count)"])
        return true
    }

    /// The pictures for a moment `time` on an output `bounds` big that shows `window` of a canvas
    /// `canvas` big (nil: no wall); nil when they are the same as last time.
    func update(at time: WallTime, outputWidth: Int, outputHeight: Int, window: PixelRect?, canvas: (width: Int, height: Int)?) -> [OverlayPicture]? {
        var next: [(index: Int, picture: OverlayPicture)] = []
        var statuses: [OverlayStatus] = []
        let local = overlays.contains { $0.schedule != nil } ? Schedule(entries: [], timeZone: timeZone).local(time) : nil
        for (i, overlay) in overlays.enumerated() {
            var visible = true
            if let entry = overlay.schedule {
                visible = local.map { entry.matches(date: $0.date, second: $0.second) } ?? false
            }
            var content = ""
            var image: OverlayImage?
            switch overlay.content {
            case .image(let uri, let picture):
                content = uri
                image = picture
            case .text(let text):
                content = text
                if visible { image = render(i, text: text, overlay) }
            case .clock(let format):
                content = formatLocalTime(time, format: format, zone: timeZone) ?? ""
                if visible { image = render(i, text: content, overlay) }
            }
            var rect: [Int]?
            if visible, let image {
                let onCanvas = overlay.surface == .canvas && window != nil && canvas != nil
                let (sw, sh) = onCanvas ? (canvas!.width, canvas!.height) : (outputWidth, outputHeight)
                var (x, y) = overlay.origin(width: image.width, height: image.height, surfaceWidth: sw, surfaceHeight: sh)
                if onCanvas, let window { (x, y) = (x - window.x, y - window.y) }
                let picture = OverlayPicture(image: image, x: x, y: y, opacity: overlay.opacity)
                if intersection(picture.rect, PixelRect(x: 0, y: 0, width: outputWidth, height: outputHeight)) != nil {
                    next.append((i, picture))
                    rect = [x, y, image.width, image.height]
                }
            }
            statuses.append(OverlayStatus(kind: overlay.content.kind, content: content, visible: visible && rect != nil, rect: rect,
                                          problem: rendered[i].problem))
        }
        if statuses != lastStatus {
            lastStatus = statuses
            onStatus?(statuses)
        }
        let same = next.count == shown.count && zip(next, shown).allSatisfy { a, b in
            a.index == b.index && a.picture.image === b.picture.image && a.picture.x == b.picture.x && a.picture.y == b.picture.y
                && a.picture.opacity == b.picture.opacity
        }
        guard !same else { return nil }
        shown = next
        return next.map(\.picture)
    }

    /// The image of overlay `i`'s `text`: the one made before when the text is the same.
    private func render(_ i: Int, text: String, _ overlay: OverlayConfig) -> OverlayImage? {
        if rendered[i].text == text { return rendered[i].image }
        rendered[i].text = text
        rendered[i].image = nil
        guard let renderer = renderer(for: overlay.fontPath, index: i) else { return nil }
        do {
            rendered[i].image = try renderer.render(text, pixelHeight: overlay.size, color: overlay.color)
            rendered[i].problem = nil
            textsRendered += 1
        } catch {
            if rendered[i].problem == nil {
                logger.error("overlay text cannot be rendered; left out", ["overlay": "\(i)", "font": overlay.fontPath, "error": "\(error)"])
            }
            rendered[i].problem = "\(error)"
        }
        return rendered[i].image
    }

    private func renderer(for font: String, index: Int) -> TextRenderer? {
        if let made = renderers[font] { return made }
        if let failure = failedFonts[font] {
            rendered[index].problem = failure
            return nil
        }
        do {
            let made = try openFont(font)
            renderers[font] = made
            return made
        } catch {
            let problem = "cannot use the font \(font): \(error)"
            failedFonts[font] = problem
            rendered[index].problem = problem
            logger.error("overlay font cannot be used; its overlays are left out, the video plays on",
                         ["overlay": "\(index)", "font": font, "error": "\(error)"])
            return nil
        }
    }
}
