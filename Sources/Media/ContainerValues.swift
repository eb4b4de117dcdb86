import CFFmpeg
import Foundation
import Playback

/// Checked conversions of the numbers a media file states (timestamps, time bases, sizes, aspect
/// ratios, angles): an out-of-range value gives nil (the caller then fails the item with a
/// `MediaError` naming the file and the stream, or uses a neutral value), never a trap.
enum ContainerValue {
    /// The largest picture side accepted from a file (FFmpeg's own decoders go no further than
    /// this for the common codecs; a GPU's texture limit is applied later, per frame).
    static let maxPictureSide = 32768

    /// Whether `timeBase` can convert ticks to time: both parts positive.
    static func isUsable(_ timeBase: AVRational) -> Bool { timeBase.num > 0 && timeBase.den > 0 }

    /// `ticks` of `timeBase` as a time; exact when `ticks * num` fits in 64 bits, rounded to the
    /// time base otherwise. nil: no timestamp (`AV_NOPTS_VALUE`), an unusable time base, or a
    /// time too far out to hold.
    static func time(ticks: Int64, timeBase: AVRational) -> MediaTime? {
        guard isUsable(timeBase), ticks != noPTS else { return nil }
        let (value, overflow) = ticks.multipliedReportingOverflow(by: Int64(timeBase.num))
        if !overflow { return MediaTime(value: value, timescale: timeBase.den) }
        let seconds = Double(ticks) * Double(timeBase.num) / Double(timeBase.den)
        guard seconds.isFinite else { return nil }
        let time = MediaTime(seconds: seconds, preferredTimescale: timeBase.den)
        return time.isNumeric ? time : nil
    }

    /// A stream's duration: its own where it states one, else the container's, else indefinite.
    static func duration(of stream: UnsafeMutablePointer<AVStream>, in format: UnsafeMutablePointer<AVFormatContext>) -> MediaTime {
        if stream.pointee.duration > 0, let stated = time(ticks: stream.pointee.duration, timeBase: stream.pointee.time_base) {
            return stated
        }
        if format.pointee.duration > 0 && format.pointee.duration != noPTS {
            return MediaTime(value: format.pointee.duration, timescale: 1_000_000)
        }
        return .indefinite
    }

    /// `seconds` in ticks of `timeBase`, rounded; nil when it does not fit in 64 bits.
    static func ticks(seconds: Double, timeBase: AVRational) -> Int64? {
        guard isUsable(timeBase), seconds.isFinite else { return nil }
        let ticks = (seconds * Double(timeBase.den) / Double(timeBase.num)).rounded()
        guard ticks.isFinite, abs(ticks) < 9.2e18 else { return nil }
        return Int64(ticks)
    }

    /// `a + b`, or nil when it overflows.
    static func sum(_ a: Int64, _ b: Int64) -> Int64? {
        let (r, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : r
    }

    /// `a - b`, or nil when it overflows.
    static func difference(_ a: Int64, _ b: Int64) -> Int64? {
        let (r, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? nil : r
    }

    /// A picture size the player can work with: both sides in 1...`maxPictureSide`.
    static func pictureSize(width: Int32, height: Int32) -> (width: Int, height: Int)? {
        guard width > 0, height > 0, width <= maxPictureSide, height <= maxPictureSide else { return nil }
        return (Int(width), Int(height))
    }

    /// A sample (pixel) aspect ratio as width over height: 1 when the file gives none, a zero or
    /// negative part, or one outside 1/100...100 (no real picture is that anamorphic).
    static func pixelAspect(_ sar: AVRational) -> Double {
        guard sar.num > 0, sar.den > 0 else { return 1 }
        let ratio = Double(sar.num) / Double(sar.den)
        return ratio >= 0.01 && ratio <= 100 ? ratio : 1
    }

    /// Frames per second from a frame rate; nil when it is not positive or above 1000.
    static func framesPerSecond(_ rate: AVRational) -> Double? {
        guard rate.num > 0, rate.den > 0 else { return nil }
        let fps = Double(rate.num) / Double(rate.den)
        return fps.isFinite && fps <= 1000 ? fps : nil
    }
}
