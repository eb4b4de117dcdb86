import CFFmpeg
import CShim
import Foundation
import Playback

// Frames and their times: a decoded AVFrame becomes a VideoFrame, its timestamps kept on one
// continuous timeline across discontinuities.

extension VideoDecoder {
    /// A zero-copy frame: `raw`'s times and tags, `prime`'s buffers.
    func makeFrame(_ raw: UnsafeMutablePointer<AVFrame>, prime: DRMPrimeFrame) throws -> VideoFrame {
        let (pts, duration) = try timing(of: raw)
        let tags = FrameConverter.colorTags(of: raw)
        let sar = raw.pointee.sample_aspect_ratio
        let layout = prime.softwareFormat.flatMap { PixelFormat(av_get_pix_fmt($0)) } ?? .nv12
        return VideoFrame(drmPrime: prime, format: layout, pts: pts + timelineShift, duration: duration, colorMatrix: tags.matrix,
                          colorRange: tags.range, chromaLocation: tags.chroma, rotation: displayRotation,
                          pixelAspect: ContainerValue.pixelAspect(sar))
    }

    func makeFrame(taking frame: UnsafeMutablePointer<AVFrame>) throws -> VideoFrame {
        let (pts, duration): (MediaTime, MediaTime)
        do {
            (pts, duration) = try timing(of: frame)
        } catch {
            var failed: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&failed)
            throw error
        }
        return try converter.makeFrame(taking: frame, pts: pts + timelineShift, duration: duration, rotation: displayRotation)
    }

    /// A jump of the timestamps by more than this many frame durations, forward or back, from
    /// where the next frame was expected starts a new segment (`timing(of:)`).
    static let discontinuityFrames: Int64 = 4

    /// The frame's time relative to the stream's start and its duration; advances the
    /// extrapolated time of the next frame.
    ///
    /// The times run on one continuous timeline: where the file's timestamps jump (concatenated
    /// recordings, a broadcast capture) by more than `discontinuityFrames` frame durations from
    /// where the next frame was expected, backward, or forward in a container whose timestamps
    /// may jump (`timestampsMayJump`), a new segment starts, and its frames follow on at the
    /// expected time, keeping their cadence (as mpv and GStreamer do).
    /// A frame without a timestamp follows the one before. Every step is checked: a timestamp
    /// too far out to hold fails the item, naming the file and the stream.
    func timing(of frame: UnsafeMutablePointer<AVFrame>) throws -> (MediaTime, MediaTime) {
        let raw = frame.pointee.best_effort_timestamp
        let packetTicks = frame.pointee.pkt_duration
        let durationTicks = packetTicks > 0 ? packetTicks : nominalTicks
        var ts: Int64
        if raw == noPTS {
            ts = nextPTS ?? startTime
        } else if let expected = nextPTS {
            let tolerance = max(durationTicks, nominalTicks).multipliedReportingOverflow(by: Self.discontinuityFrames)
            let shifted = ContainerValue.sum(raw, segmentOffset)
            let off = shifted.flatMap { ContainerValue.difference($0, expected) }
            if let shifted, let off,
               tolerance.overflow || off.magnitude <= UInt64(tolerance.partialValue) || (off > 0 && !timestampsMayJump) {
                ts = shifted
            } else {
                // A new segment: it starts where the next frame was due.
                segmentOffset = ContainerValue.difference(expected, raw) ?? 0
                discontinuities += 1
                ts = expected
            }
        } else {
            ts = ContainerValue.sum(raw, segmentOffset) ?? raw
        }
        let duration: MediaTime
        if info.isStillImage {
            duration = stillDuration
        } else if packetTicks > 0, let stated = ContainerValue.time(ticks: packetTicks, timeBase: timeBase) {
            duration = stated
        } else {
            duration = nominalFrameDuration
        }
        nextPTS = ContainerValue.sum(ts, durationTicks) ?? ts
        guard let relative = ContainerValue.difference(ts, startTime),
              let pts = ContainerValue.time(ticks: relative, timeBase: timeBase) else {
            throw MediaError(uri: uri, call: "stream \(streamIndex)",
                             reason: "timestamp \(ts) (start \(startTime), time base \(timeBase.num)/\(timeBase.den)) is out of range")
        }
        return (pts, duration)
    }
}
