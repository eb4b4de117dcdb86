import Render

extension OverlayPicture {
    /// Blends the overlay over 32-bit pixels in `bytes` (`width` x `height`, `pitch` bytes a row,
    /// each pixel a little-endian XRGB8888 word: blue, green, red, unused), only inside the
    /// overlay's rectangle clipped to the picture: destination = source * opacity + destination
    /// * (1 - source alpha * opacity), source premultiplied. The unused byte is left as it is.
    func blend(intoXRGB bytes: UnsafeMutableRawBufferPointer, width: Int, height: Int, pitch: Int) {
        guard width > 0, height > 0, pitch >= width * 4, bytes.count >= pitch * (height - 1) + width * 4,
              let clip = intersection(rect, PixelRect(x: 0, y: 0, width: width, height: height)),
              let base = bytes.baseAddress else { return }
        let o = UInt32((opacity * 255).rounded())
        guard o > 0 else { return }
        @inline(__always) func mix(_ src: UInt8, _ dst: UInt8, keep: UInt32) -> UInt8 {
            UInt8(min(255, (UInt32(src) * o + 127) / 255 + (UInt32(dst) * keep + 127) / 255))
        }
        image.pixels.withUnsafeBufferPointer { source in
            for y in clip.y..<(clip.y + clip.height) {
                let row = (base + y * pitch).assumingMemoryBound(to: UInt8.self)
                var s = ((y - self.y) * image.width + (clip.x - x)) * 4
                for x in clip.x..<(clip.x + clip.width) {
                    let alpha = source[s + 3]
                    if alpha != 0 {
                        let keep = 255 - (UInt32(alpha) * o + 127) / 255
                        let d = row + x * 4
                        d[0] = mix(source[s + 2], d[0], keep: keep)
                        d[1] = mix(source[s + 1], d[1], keep: keep)
                        d[2] = mix(source[s], d[2], keep: keep)
                    }
                    s += 4
                }
            }
        }
    }
}
