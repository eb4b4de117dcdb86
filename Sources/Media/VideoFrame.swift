import CFFmpeg
import Playback

/// The colour matrix used to turn a frame's Y'CbCr into R'G'B'.
public enum ColorMatrix: String, Sendable, CaseIterable {
    case bt601, bt709, bt2020
}

/// Limited ("TV", Y' 16-235) or full ("PC", 0-255) range.
public enum ColorRange: String, Sendable, CaseIterable {
    case limited, full
}

/// The pixel layouts the player layer draws directly.
public enum PixelFormat: String, Sendable {
    /// Three 8-bit planes, chroma halved in both directions.
    case yuv420p
}

/// One plane of a frame, valid only inside `VideoFrame.withPlanes`.
public struct Plane {
    public let bytes: UnsafeRawPointer
    public let bytesPerRow: Int
    public let width: Int
    public let height: Int
}

/// A decoded picture that owns its buffers (an `AVFrame`, freed when the last reference goes).
/// Immutable once made, so it may be handed from the decoder thread to the presenter.
public final class VideoFrame: PresentableFrame, @unchecked Sendable {
    // @unchecked: `frame` is never mutated after init and is freed only in deinit.
    private var frame: UnsafeMutablePointer<AVFrame>?
    public let pts: MediaTime
    public let duration: MediaTime
    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormat
    public let colorMatrix: ColorMatrix
    public let colorRange: ColorRange

    /// Takes ownership of `frame`: it is freed with `av_frame_free` in deinit.
    init(taking frame: UnsafeMutablePointer<AVFrame>, pts: MediaTime, duration: MediaTime,
         colorMatrix: ColorMatrix, colorRange: ColorRange) {
        self.frame = frame
        self.pts = pts
        self.duration = duration
        self.width = Int(frame.pointee.width)
        self.height = Int(frame.pointee.height)
        self.pixelFormat = .yuv420p
        self.colorMatrix = colorMatrix
        self.colorRange = colorRange
    }

    deinit { av_frame_free(&frame) }

    /// Calls `body` with the frame's planes (Y, Cb, Cr). The pointers are valid only inside `body`.
    public func withPlanes<R>(_ body: ([Plane]) throws -> R) rethrows -> R {
        let f = frame!.pointee
        let data = [f.data.0, f.data.1, f.data.2]
        let strides = [f.linesize.0, f.linesize.1, f.linesize.2]
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let planes = (0..<3).map { i in
            Plane(bytes: UnsafeRawPointer(data[i]!), bytesPerRow: Int(strides[i]),
                  width: i == 0 ? width : chromaWidth, height: i == 0 ? height : chromaHeight)
        }
        return try body(planes)
    }

    /// The sample values of the pixel at (x, y): (Y', Cb, Cr), 0-255. For tests and screenshots.
    public func sample(x: Int, y: Int) -> (y: UInt8, cb: UInt8, cr: UInt8) {
        withPlanes { p in
            let luma = p[0].bytes.load(fromByteOffset: y * p[0].bytesPerRow + x, as: UInt8.self)
            let cb = p[1].bytes.load(fromByteOffset: (y / 2) * p[1].bytesPerRow + x / 2, as: UInt8.self)
            let cr = p[2].bytes.load(fromByteOffset: (y / 2) * p[2].bytesPerRow + x / 2, as: UInt8.self)
            return (luma, cb, cr)
        }
    }
}
