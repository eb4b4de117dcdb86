import Media

/// How the picture fills the layer, as AVPlayerLayer's `videoGravity`.
public enum VideoGravity: String, Sendable, CaseIterable {
    /// Stretch to fill, ignoring the aspect ratio.
    case resize
    /// Fit inside, keeping the aspect ratio (the default).
    case resizeAspect
    /// Fill, keeping the aspect ratio, cropping what falls outside.
    case resizeAspectFill
}

/// Where a `contentWidth` x `contentHeight` picture goes inside `bounds` for `gravity` once turned
/// clockwise by `rotation` (a quarter turn swaps its width and height): centred, edges rounded to
/// whole pixels. With `.resizeAspectFill` the rectangle may extend past `bounds` (it is cropped).
public func videoRect(contentWidth: Int, contentHeight: Int, bounds: PixelRect, gravity: VideoGravity,
                      rotation: Rotation = .none) -> PixelRect {
    guard contentWidth > 0, contentHeight > 0, gravity != .resize else { return bounds }
    let (contentWidth, contentHeight) = rotation.swapsAxes ? (contentHeight, contentWidth) : (contentWidth, contentHeight)
    let scaleX = Double(bounds.width) / Double(contentWidth)
    let scaleY = Double(bounds.height) / Double(contentHeight)
    let scale = gravity == .resizeAspect ? min(scaleX, scaleY) : max(scaleX, scaleY)
    let w = Double(contentWidth) * scale, h = Double(contentHeight) * scale
    let left = (Double(bounds.width) - w) / 2, top = (Double(bounds.height) - h) / 2
    let x0 = Int(left.rounded()), y0 = Int(top.rounded())
    let x1 = Int((left + w).rounded()), y1 = Int((top + h).rounded())
    return PixelRect(x: bounds.x + x0, y: bounds.y + y0, width: x1 - x0, height: y1 - y0)
}
