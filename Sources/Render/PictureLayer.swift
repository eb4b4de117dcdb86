import Media

/// How an output places its pictures, whoever draws them: the player layer (GL) or the KMS planes
/// output's scan-out layer (swscale into dumb buffers). The kiosk sets these and reads back where
/// the picture went, without knowing which draws.
public protocol PictureLayer: AnyObject {
    var gravity: VideoGravity { get set }
    /// The display's own turn (a portrait screen), clockwise, on top of the frame's own rotation.
    var rotation: Rotation { get set }
    var background: RGBColor { get set }
    /// A wall: the output is a window onto a canvas, the picture placed in a region of it.
    var wallPlacement: WallPlacement? { get set }
    /// A mosaic output: the canvas regions (and their gravities), one frame each.
    var mosaicRegions: [(region: PixelRect, gravity: VideoGravity?)] { get set }
    /// Drawn over the picture after it (logos, text), each at its place in the output's pixels.
    var overlays: [OverlayPicture] { get set }
    /// Where the last frame was drawn, in the output's pixels; nil when none was.
    var videoRect: PixelRect? { get }
    /// Hardware frames that could be neither shown nor copied (the background was shown instead).
    var framesNotDrawn: Int { get }
}

extension PlayerLayer: PictureLayer {}
