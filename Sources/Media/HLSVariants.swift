import CFFmpeg
import Network

/// The variants of an HLS master playlist, as FFmpeg's hls demuxer opens them: one program each
/// (`variant_bitrate` in its metadata), every variant probed. The one that plays is chosen by its
/// height (`LiveSourceOptions.variant`) and the others' streams are discarded, so that the
/// demuxer fetches no more of their segments than the probe took.
enum HLSVariants {
    /// Chooses the variant of the open input `fmt` (an HLS source with several); nil: none chosen,
    /// FFmpeg's best stream plays as before.
    static func choose(in fmt: UnsafeMutablePointer<AVFormatContext>, options: LiveSourceOptions,
                       fitHeight: Int?) -> LiveSourceOptions.Variant? {
        guard let name = fmt.pointee.iformat?.pointee.name, String(cString: name) == "hls",
              fmt.pointee.nb_programs > 1, let programs = fmt.pointee.programs else { return nil }
        let streamCount = Int(fmt.pointee.nb_streams)
        func streams(of program: UnsafeMutablePointer<AVProgram>) -> [Int] {
            guard let indexes = program.pointee.stream_index else { return [] }
            return (0..<Int(program.pointee.nb_stream_indexes)).map { Int(indexes[$0]) }.filter { $0 < streamCount }
        }
        var variants: [LiveSourceOptions.Variant] = []
        for p in 0..<Int(fmt.pointee.nb_programs) {
            guard let program = programs[p] else { continue }
            let height = streams(of: program).compactMap { i -> Int? in
                guard let par = fmt.pointee.streams[i]?.pointee.codecpar, par.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { return nil }
                return Int(par.pointee.height)
            }.max() ?? 0
            let bitrate = av_dict_get(program.pointee.metadata, "variant_bitrate", nil, 0)
                .flatMap { Int(String(cString: $0.pointee.value)) } ?? 0
            variants.append(LiveSourceOptions.Variant(program: p, height: height, bitrate: bitrate))
        }
        guard let chosen = options.variant(of: variants, outputHeight: fitHeight), let kept = programs[chosen.program] else { return nil }
        let keep = Set(streams(of: kept))
        for p in 0..<Int(fmt.pointee.nb_programs) where p != chosen.program { programs[p]?.pointee.discard = AVDISCARD_ALL }
        for i in 0..<streamCount where !keep.contains(i) { fmt.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL }
        return chosen
    }
}
