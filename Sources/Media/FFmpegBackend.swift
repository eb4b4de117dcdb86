import Foundation
import Playback

/// The FFmpeg implementation of `MediaBackend`: assets probe a file with `VideoDecoder` (opening
/// it and decoding its first frame, so that a file that cannot be played fails here with FFmpeg's
/// reason), and readers are decoders.
public struct FFmpegBackend: MediaBackend {
    /// Decoder threads per reader; 0 lets FFmpeg choose.
    public var threads: Int

    public init(threads: Int = 0) { self.threads = threads }

    public func probe(_ url: URL) throws -> AssetDescription {
        let decoder = try VideoDecoder(path: url.path, threads: 1)
        guard let first = try decoder.nextFrame() else {
            throw MediaError(uri: url.path, call: "avcodec_receive_frame", reason: "the video stream has no decodable frame")
        }
        let info = decoder.info
        let rate = info.frameRate
        let track = AssetTrack(
            trackID: 1, mediaType: .video,
            naturalSize: VideoSize(width: info.width, height: info.height),
            preferredTransform: Transform2D(rotationDegrees: first.rotation.rawValue),
            nominalFrameRate: rate,
            minFrameDuration: rate > 0 ? MediaTime(seconds: 1 / rate, preferredTimescale: 90_000) : .invalid,
            codec: info.codec, pixelFormat: info.pixelFormat, colorSpace: first.colorMatrix.rawValue)
        return AssetDescription(duration: info.duration, tracks: [track])
    }

    public func openReader(_ url: URL) throws -> any FrameReader {
        DecoderReader(decoder: try VideoDecoder(path: url.path, threads: threads))
    }
}

/// A `VideoDecoder` as a frame reader; owned by one item's decode thread.
final class DecoderReader: FrameReader {
    let decoder: VideoDecoder
    init(decoder: VideoDecoder) { self.decoder = decoder }
    func nextFrame() throws -> (any PresentableFrame)? { try decoder.nextFrame() }
    func seek(to time: MediaTime) throws { try decoder.seek(to: time) }
}
