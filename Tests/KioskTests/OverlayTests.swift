import Foundation
@testable import Kiosk
import Media
import Playback
import Render
import Testing
import TestSupport


/// Overlay test media: a PNG of one colour at one alpha (made by ffmpeg), and a flat-colour clip.
enum OverlayMedia {
    /// `width` x `height`, every pixel `color` (ffmpeg's colour syntax, e.g. `red@0.6`), RGBA.
    static func png(_ color: String, width: Int, height: Int) throws -> String {
        try TestMedia.make("overlay-\(color.replacingOccurrences(of: "@", with: "a"))-\(width)x\(height).png", [
            "-f", "lavfi", "-i", "color=c=\(color):size=\(width)x\(height),format=rgba", "-frames:v", "1",
            "-c:v", "png", "-f", "image2", "-update", "1",
        ])
    }

    /// A 320x180 clip of one flat colour, 30 fps, losslessly coded.
    static func flat(seconds: Double) throws -> String {
        try TestMedia.make("flat-204060-\(seconds)s.mp4", [
            "-f", "lavfi", "-i", "color=c=0x204060:size=320x180:rate=30", "-t", "\(seconds)",
            "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-f", "mp4",
        ])
    }
}

@Suite struct OverlayConfigTests {
    func problems(_ text: String) -> [String] {
        do {
            _ = try KioskConfig.parse(text, baseDirectory: TestMedia.folder)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test func badOverlaysAreNamedByTheirPath() throws {
        let garbage = TestMedia.folder + "/not-a-picture.png"
        try Data("this is not a PNG".utf8).write(to: URL(fileURLWithPath: garbage))
        let base = #"{"playlist": [{"uri": "a.mp4"}], "overlays": "#
        #expect(problems(base + #"[{"image": "missing-logo.png"}]}"#)
            == ["overlays[0].image: \(TestMedia.folder)/missing-logo.png: open failed: no such file"])
        // FFmpeg's own reason for a file that is no picture.
        let unreadable = problems(base + #"[{"image": "not-a-picture.png"}]}"#)
        #expect(unreadable.count == 1)
        #expect(unreadable.first?.hasPrefix("overlays[0].image: \(garbage): avcodec_") == true)
        #expect(unreadable.first?.contains("Invalid data found when processing input") == true)
        #expect(problems(base + #"[{"text": "Hi", "anchor": "middle"}]}"#)
            == [#"overlays[0].anchor: "middle" is not one of "top-left", "top", "top-right", "left", "center", "right", "bottom-left", "bottom", "bottom-right""#])
        #expect(problems(base + #"[{"text": "Hi", "opacity": 1.5}]}"#).first?.hasPrefix("overlays[0].opacity: ") == true)
        #expect(problems(base + #"[{"text": "Hi", "clock": "%H"}]}"#) == [#"overlays[0]: give only one of "image", "text" and "clock""#])
        #expect(problems(base + #"[{"anchor": "top"}]}"#)
            == [#"overlays[0]: missing: give one of "image" (a picture file), "text" or "clock" (a strftime format such as "%H:%M")"#])
        #expect(problems(base + #"[{"text": "Hi", "width": 10}]}"#) == [#"overlays[0].width: only for an image overlay (text has "size")"#])
        #expect(problems(base + #"[{"text": "Hi", "offset": [1]}]}"#).first?.hasPrefix("overlays[0].offset: expected [x, y]") == true)
        let font = problems(base + #"[{"text": "Hi", "font": "no-such-font.ttf"}]}"#)
        #expect(font.count == 1)
        #expect(font.first == "overlays[0].font: cannot use the font \(TestMedia.folder)/no-such-font.ttf: cannot be opened: No such file or directory")
        let junk = TestMedia.folder + "/junk-font-\(UUID().uuidString.prefix(8)).ttf"
        try Data("not a font".utf8).write(to: URL(fileURLWithPath: junk))
        #expect(problems(base + #"[{"text": "Hi", "font": "\#(junk)"}]}"#).first?.hasPrefix("overlays[0].font: cannot use the font \(junk): FT_New_Face(") == true)
        #expect(problems(base + #"[{"text": "Hi", "schedule": {"days": ["someday"]}}]}"#)
            == [#"overlays[0].schedule.days[0]: "someday" is not a day: write one of "mon", "tue", "wed", "thu", "fri", "sat", "sun""#])
    }

    @Test func theLocalTimeIsFormattedInTheConfigsZone() {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        #expect(formatLocalTime(utc("2026-03-29T00:59:59Z"), format: "%Y-%m-%d %H:%M:%S %z %a", zone: berlin) == "2026-03-29 01:59:59 +0100 Sun")
        #expect(formatLocalTime(utc("2026-03-29T01:00:00Z"), format: "%H:%M:%S %z", zone: berlin) == "03:00:00 +0200")
        #expect(formatLocalTime(utc("2026-03-29T01:00:00Z"), format: "%j", zone: berlin) == "088")
        #expect(formatLocalTime(utc("2026-03-29T01:00:00Z"), format: "", zone: berlin) == nil)
    }
}

@Suite struct TextRendererTests {
    @Test func textIsRenderedWithTheSystemsFontAndDiffersByString() throws {
        let renderer = try TextRenderer(fontPath: OverlayConfig.defaultFont)
        let hello = try #require(try renderer.render("Hello", pixelHeight: 32, color: RGBColor(red: 255, green: 255, blue: 255)))
        let world = try #require(try renderer.render("World", pixelHeight: 32, color: RGBColor(red: 255, green: 255, blue: 255)))
        #expect(hello.height >= 32 && hello.height <= 48 && hello.width > 40)
        let covered = stride(from: 3, to: hello.pixels.count, by: 4).filter { hello.pixels[$0] > 0 }.count
        #expect(covered > 100)
        #expect(hello.pixels != world.pixels)
        // Premultiplied: no channel above its alpha.
        for i in stride(from: 0, to: hello.pixels.count, by: 4) { #expect(hello.pixels[i] <= hello.pixels[i + 3]); if hello.pixels[i] > hello.pixels[i + 3] { break } }
        #expect(try renderer.render("   ", pixelHeight: 32, color: .black) == nil)
    }

    @Test func aFontFileThatIsMissingOrNoFontIsAFreeTypeErrorNamingTheCall() throws {
        #expect { _ = try TextRenderer(fontPath: "/nonexistent/font.ttf") } throws: { error in
            "\(error)".hasPrefix("FT_New_Face(/nonexistent/font.ttf) failed: FT_Error 1 (cannot open resource)")
        }
        let notAFont = TestMedia.folder + "/not-a-font.ttf"
        try Data("not a font".utf8).write(to: URL(fileURLWithPath: notAFont))
        #expect { _ = try TextRenderer(fontPath: notAFont) } throws: { error in
            "\(error)".contains("FT_New_Face(\(notAFont)) failed: FT_Error 2 (unknown file format)")
        }
    }
}

@Suite struct OverlayPlacementTests {

    @Test func aScheduledOverlayShowsOnlyInItsTimesAndAReloadReplacesTheOverlays() throws {
        let config = try KioskConfig.parse("""
            {"playlist": [{"uri": "a.mp4"}], "overlays": [
              {"text": "Open", "schedule": {"days": ["mon"], "from": "09:00", "to": "17:00"}}]}
            """, baseDirectory: TestMedia.folder)
        let presenter = OverlayPresenter(overlays: config.overlays, timeZone: .gmt, logger: Logger(level: .error, sink: { _ in }))
        // 2026-03-30 is a Monday.
        func shown(_ time: String) -> Int? {
            presenter.update(at: utc(time), outputWidth: 640, outputHeight: 360, window: nil, canvas: nil)?.count
        }
        #expect(shown("2026-03-30T08:59:59Z") == nil)  // none before, none now
        #expect(shown("2026-03-30T09:00:00Z") == 1)
        #expect(shown("2026-03-30T16:59:59Z") == nil)  // unchanged
        #expect(shown("2026-03-30T17:00:00Z") == 0)
        #expect(shown("2026-03-31T10:00:00Z") == nil)  // Tuesday: still none
        let other = try KioskConfig.parse(#"{"playlist": [{"uri": "a.mp4"}], "overlays": [{"text": "Closed"}]}"#, baseDirectory: "/")
        #expect(presenter.replace(config.overlays, timeZone: .gmt) == false)
        #expect(presenter.replace(other.overlays, timeZone: .gmt) == true)
        #expect(shown("2026-03-31T10:00:00Z") == 1)
    }
}
