import CFFmpeg
import Foundation
import Playback
import Sound

extension AudioDecoder: AudioReader {}

extension AudioResampler: AudioConverter {}

extension FFmpegBackend {
    /// The file's best audio stream through `AudioDecoder`; nil when it has none (a still, a
    /// silent clip). Throws when it has one that cannot be decoded (an unknown codec), naming
    /// the file and FFmpeg's reason.
    public func openAudioReader(_ url: URL) throws -> (any AudioReader)? {
        // A network source is opened once, for its picture (`LiveReader` reopens it when it fails).
        guard url.isFileURL else { return nil }
        return try FFmpegSource(url: url, backend: self).openAudioReader()
    }

    /// The best audio stream of `demuxer`'s file, read through a cursor of its own; nil when it has none.
    func openAudioReader(_ demuxer: Demuxer) throws -> (any AudioReader)? {
        do {
            return try AudioDecoder(demuxer: demuxer)
        } catch let error as MediaError where error.call == "av_find_best_stream" && error.reason == "no audio stream" {
            return nil
        }
    }
}

extension FFmpegBackend {
    /// The file's sound as an asset track (`mediaType` audio, its codec), or nil when it has none:
    /// reads the container's description only (no decoder is opened).
    static func audioTrack(_ fmt: UnsafeMutablePointer<AVFormatContext>) -> AssetTrack? {
        let index = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard index >= 0, index < fmt.pointee.nb_streams, let stream = fmt.pointee.streams[Int(index)] else { return nil }
        let id = stream.pointee.codecpar.pointee.codec_id
        let codec = avcodec_get_name(id).map { String(cString: $0) } ?? "unknown"
        return AssetTrack(trackID: 2, mediaType: .audio, codec: codec)
    }
}
