import CFFmpeg
import CShim
import Playback

/// The send/receive loop of FFmpeg's decode API, the one both decoders run (as mpv's
/// `lavc_process`): take a frame when the decoder has one; when it wants input, send it the next
/// packet of its stream (`PacketCursor`); at the stream's end, drain it. What differs between
/// the pictures and the sound (what a frame is, how a failure counts) comes in as closures.
/// Used from one thread at a time, as its decoder.
final class DecodeLoop {
    let cursor: PacketCursor
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The end of the stream was sent: the decoder gives what it holds, then ends.
    var draining = false

    enum Step {
        /// `receive` gave a frame that `accept` took.
        case frame
        /// The decoder has given everything.
        case end
    }

    init(cursor: PacketCursor, uri: String) throws {
        guard let packet = av_packet_alloc() else {
            throw MediaError(uri: uri, call: "av_packet_alloc", reason: "out of memory")
        }
        self.cursor = cursor
        self.packet = packet
    }

    deinit { av_packet_free(&packet) }

    /// Positions the stream at the last keyframe at or before `ticks`; the decoder is the
    /// caller's to flush.
    func seek(to ticks: Int64) throws {
        try cursor.seek(to: ticks)
        draining = false
    }

    /// Positions the stream at its first packet (as opened).
    func seekToStart() throws {
        try cursor.seekToStart()
        draining = false
    }

    /// Runs the loop until a frame is taken or the stream ends.
    /// - Parameters:
    ///   - codec: the decoder packets are sent to (asked at each packet: a decoder may be replaced).
    ///   - receive: avcodec_receive_frame's result (0: the caller holds a frame).
    ///   - accept: whether the frame received is handed out (false: it was dropped; go on).
    ///   - idle: the decoder gave no frame (EAGAIN or EOF): true when the caller dealt with it
    ///     and the loop goes on.
    ///   - fail: counts a failure of a call with its code (throws when it is one too many).
    ///   - sent: a packet was sent: avcodec_send_packet's result and whether it was a keyframe.
    func next(codec: () -> UnsafeMutablePointer<AVCodecContext>?, receive: () throws -> Int32, accept: () throws -> Bool,
              idle: (Int32) throws -> Bool = { _ in false }, fail: (String, Int32) throws -> Void,
              sent: (Int32, Bool) -> Void = { _, _ in }) throws -> Step {
        guard let packet else { return .end }
        while true {
            let r = try receive()
            if r == 0 {
                if try accept() { return .frame }
                continue
            }
            if r == averrorEOF || r == averrorEAGAIN, try idle(r) { continue }
            if r == averrorEOF { return .end }
            guard r == averrorEAGAIN else {
                try fail("avcodec_receive_frame", r)
                continue
            }
            if draining { return .end }
            // The decoder wants input: the next packet of its stream.
            let decoder = codec()
            switch try cursor.next(into: packet) {
            case .ended:
                avcodec_send_packet(decoder, nil)
                draining = true
            case .failed(let code):
                try fail("av_read_frame", code)
            case .packet:
                let result = avcodec_send_packet(decoder, packet)
                let isKey = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
                av_packet_unref(packet)
                if result < 0 && result != averrorEAGAIN { try fail("avcodec_send_packet", result) }
                sent(result, isKey)
            }
        }
    }
}
