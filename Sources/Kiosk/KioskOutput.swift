import Display
import Foundation
import Playback
import Render

/// An output whose picture can be read back (for the control socket's `screenshot`).
public protocol ScreenshotSource {
    /// The picture now on the output, as cheaply as it can be copied (called on the presenting
    /// thread; the PNG is encoded on another).
    func readBack() throws -> RGBAImage
    /// The same at most `maxWidth` pixels wide where the output can scale it as it copies;
    /// wider (the whole picture) where it cannot: the encoding thread scales it then.
    func readBack(maxWidth: Int) throws -> RGBAImage
}

extension ScreenshotSource {
    public func readBack(maxWidth: Int) throws -> RGBAImage { try readBack() }
}

extension HeadlessOutput: ScreenshotSource {
    public func readBack() throws -> RGBAImage { try screenshotAsStored() }
    public func readBack(maxWidth: Int) throws -> RGBAImage { try screenshotAsStored(maxWidth: maxWidth) }
}

/// An output the kiosk can present on: it draws `VideoFrame`s, placed by its picture layer, into
/// `bounds`.
public protocol KioskOutput: PresentationOutput where Frame == VideoFrame {
    /// What places the pictures: the player layer (GL), or the planes presentation's scan-out layer.
    var pictureLayer: any PictureLayer { get }
    var bounds: PixelRect { get }
    /// How the output draws and why (`display.scanout`); nil where nothing chose it.
    var scanout: ScanoutChoice? { get }
    /// What the output can do besides drawing, as it reports it; each facet below is nil where
    /// it lacks that feature (callers ask, never cast the output).
    var features: OutputFeatures { get }
    /// Reads back the picture on screen (`.screenshot`).
    var screenshots: (any ScreenshotSource)? { get }
    /// Standby and waking (`.displayPower`).
    var displayPower: (any DisplayPowerControl)? { get }
    /// The page-flip clock of the display shown on now (`.pageFlipClock`; nil while none is).
    var pageFlips: PageFlipClock? { get }
}

extension KioskOutput {
    public var scanout: ScanoutChoice? { nil }
}

extension KioskOutput where Self: ScreenshotSource {
    public var screenshots: (any ScreenshotSource)? { features.contains(.screenshot) ? self : nil }
}

extension HeadlessOutput: KioskOutput {
    public var pictureLayer: any PictureLayer { layer }
}
extension HeadlessPlanesOutput: KioskOutput {
    public var pictureLayer: any PictureLayer { layer }
}
extension HeadlessPlanesOutput: ScreenshotSource {
    public func readBack() throws -> RGBAImage { screenshot() }
    public func readBack(maxWidth: Int) throws -> RGBAImage { screenshot(maxWidth: maxWidth) }
}
extension KMSOutput: KioskOutput {
    public var pictureLayer: any PictureLayer { layer }
}
extension KMSOutput: ScreenshotSource {}
