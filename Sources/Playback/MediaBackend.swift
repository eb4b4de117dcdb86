import Foundation

/// Width and height in pixels.
public struct VideoSize: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public static let zero = VideoSize(width: 0, height: 0)
    public var description: String { "\(width)x\(height)" }
}

/// A 2D affine transform `[a b; c d] + (tx, ty)` as CGAffineTransform writes it; a track's
/// `preferredTransform` holds the container's rotation.
public struct Transform2D: Sendable, Hashable {
    public var a, b, c, d, tx, ty: Double
    public init(a: Double, b: Double, c: Double, d: Double, tx: Double = 0, ty: Double = 0) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }
    public static let identity = Transform2D(a: 1, b: 0, c: 0, d: 1)

    /// A rotation by a multiple of 90 degrees (clockwise on screen, as containers state it), exact.
    public init(rotationDegrees degrees: Int) {
        switch ((degrees % 360) + 360) % 360 {
        case 90: self.init(a: 0, b: 1, c: -1, d: 0)
        case 180: self.init(a: -1, b: 0, c: 0, d: -1)
        case 270: self.init(a: 0, b: -1, c: 1, d: 0)
        default: self.init(a: 1, b: 0, c: 0, d: 1)
        }
    }

    /// The rotation in whole degrees [0, 360).
    public var rotationDegrees: Int {
        let degrees = Int(saturating: (atan2(b, a) * 180 / .pi).rounded())  // NaN (a zero matrix) gives 0
        return ((degrees % 360) + 360) % 360
    }
}

/// One track of an asset, as its container and codec describe it.
public struct AssetTrack: Sendable, Hashable {
    public enum MediaType: String, Sendable { case video, audio, other }
    public var trackID: Int
    public var mediaType: MediaType
    /// Size of the decoded picture, before `preferredTransform`.
    public var naturalSize: VideoSize
    public var preferredTransform: Transform2D
    /// Frames per second the container states; 0 when unknown.
    public var nominalFrameRate: Double
    /// The shortest frame duration; invalid when unknown.
    public var minFrameDuration: MediaTime
    /// Codec name (`h264`, `hevc`, `vp9`, ...).
    public var codec: String
    /// Pixel format of decoded frames (`yuv420p`, `nv12`, ...).
    public var pixelFormat: String
    /// Colour space tag (`bt709`, `bt601`, `bt2020`, or `unspecified`).
    public var colorSpace: String

    public init(trackID: Int, mediaType: MediaType, naturalSize: VideoSize = .zero,
                preferredTransform: Transform2D = .identity, nominalFrameRate: Double = 0,
                minFrameDuration: MediaTime = .invalid, codec: String = "", pixelFormat: String = "",
                colorSpace: String = "unspecified") {
        self.trackID = trackID
        self.mediaType = mediaType
        self.naturalSize = naturalSize
        self.preferredTransform = preferredTransform
        self.nominalFrameRate = nominalFrameRate
        self.minFrameDuration = minFrameDuration
        self.codec = codec
        self.pixelFormat = pixelFormat
        self.colorSpace = colorSpace
    }
}

/// What probing a media file tells: everything an `Asset`'s keys can give.
public struct AssetDescription: Sendable {
    public var duration: MediaTime
    public var tracks: [AssetTrack]
    public init(duration: MediaTime, tracks: [AssetTrack]) {
        self.duration = duration
        self.tracks = tracks
    }
}

/// Reads the frames of one file in presentation order. Used from one thread at a time (an item's
/// decode thread); released when playback of that item ends.
public protocol FrameReader: AnyObject {
    /// The next frame, or nil at the end of the stream.
    func nextFrame() throws -> (any PresentableFrame)?
    /// Positions the reader so that the next frame is the last sync frame at or before `time`
    /// (later frames up to `time` follow it).
    func seek(to time: MediaTime) throws
    /// Ends any wait of the reader's from another thread (the item was skipped or stopped): a
    /// read blocked on slow storage then fails at once. nil: the reader has no waits to end.
    var canceller: (@Sendable () -> Void)? { get }
    /// Which frames the decoder may skip from now on, because decoding is behind the presentation
    /// clock (`ItemFeeder` decides; a reader that cannot skip ignores it). With `clock` (it tells
    /// the item time presentation has reached, nil while it does not play), decoded frames that
    /// end by then are late for good: the reader may discard them before any further work on
    /// them (a conversion).
    func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?)
    /// Tells a live reader where presentation is (`clock`: the item time reached, nil while it
    /// does not play), so that it can keep its frames near the live edge; the frames it drops for
    /// that it counts through `dropped`. A reader of a file ignores it.
    func follow(clock: @escaping @Sendable () -> MediaTime?, dropped: @escaping @Sendable (Int) -> Void)
}

extension FrameReader {
    public var canceller: (@Sendable () -> Void)? { nil }
    public func setFrameDrop(_ drop: DecoderFrameDrop, discardingFramesEndingBy clock: (@Sendable () -> MediaTime?)?) {}
    public func follow(clock: @escaping @Sendable () -> MediaTime?, dropped: @escaping @Sendable (Int) -> Void) {}
}

/// Frames a decoder skips without decoding them when decoding falls behind (as mpv's decoder
/// framedrop, FFmpeg's `skip_frame`). Skipped frames are never shown; the frames that are decoded
/// stay correct, because nothing else refers to what is skipped.
public enum DecoderFrameDrop: Int, Sendable, Comparable, CustomStringConvertible {
    /// Every frame is decoded.
    case none
    /// Frames no other frame refers to (most B-frames) are skipped (`AVDISCARD_NONREF`).
    case nonReference
    /// Everything up to the next keyframe is skipped (`AVDISCARD_NONKEY`): catching up when far behind.
    case nonKey

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .nonReference: "nonref"
        case .nonKey: "nonkey"
        }
    }
}

/// Where assets get their facts and their frames: the FFmpeg backend in `Media`, or a test's
/// scripted one. Chosen once, when the asset is made. `probe` and `openReader` block; Marquee calls
/// them off the presentation thread.
public protocol MediaBackend: Sendable {
    /// Reads what `url` holds. Throws an error saying why a missing, unreadable, non-media or
    /// unsupported file cannot be played.
    func probe(_ url: URL) throws -> AssetDescription
    /// Opens a reader positioned at the start.
    func openReader(_ url: URL) throws -> any FrameReader
    /// Opens a reader for an item's first frames only, decoded while another item plays (a
    /// preroll; its item's own reader opens later): it may spend fewer threads and less memory than
    /// `openReader`'s. By default the same as `openReader`.
    func openPrerollReader(_ url: URL) throws -> any FrameReader
    /// Throws unless `url`'s first frame decodes: a stricter and costlier check than `probe`, for
    /// where an item that fails only when it plays is not good enough (a wall's shared timeline).
    func checkFirstFrame(_ url: URL) throws
    /// Opens `url`'s sound, positioned at the start; nil when it has none (it plays silence).
    /// Throws when it has sound that cannot be decoded (the picture plays on, in silence).
    func openAudioReader(_ url: URL) throws -> (any AudioReader)?
    /// Opens `url` once for an asset: its probe and every reader of its items read from it. By
    /// default the per-call methods above, each on its own.
    func openSource(_ url: URL) throws -> any MediaSource
    /// Whether `url` can be read by one reader at a time only (a UDP port is bound by its reader;
    /// a camera serves few RTSP sessions): the player then never opens it for a second item while
    /// one still has it open or opening. By default false.
    func opensOneAtATime(_ url: URL) -> Bool
}

extension MediaBackend {
    public func checkFirstFrame(_ url: URL) throws {}
    public func openAudioReader(_ url: URL) throws -> (any AudioReader)? { nil }
    public func openPrerollReader(_ url: URL) throws -> any FrameReader { try openReader(url) }
    public func openSource(_ url: URL) throws -> any MediaSource { BackendCalls(backend: self, url: url) }
    public func opensOneAtATime(_ url: URL) -> Bool { false }
}

/// Why an asset cannot be used, when the backend's own error does not say.
public struct AssetError: LocalizedError, CustomStringConvertible, Sendable {
    public var errorDescription: String? { description }
    public let url: URL
    public let reason: String
    public init(url: URL, reason: String) {
        self.url = url
        self.reason = reason
    }
    public var description: String { "\(url.mediaLocation): \(reason)" }
}

extension URL {
    /// What an item's URL names: a file's path, or a network URL as written (what FFmpeg opens,
    /// and what logs, traces and the playlist show).
    public var mediaLocation: String { isFileURL ? path : absoluteString }
}
