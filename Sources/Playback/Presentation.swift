/// A decoded frame as the presentation scheduler sees it.
public protocol PresentableFrame: Sendable {
    /// Presentation time within its item (the first frame of an item is usually 0).
    var pts: MediaTime { get }
    /// How long the frame lasts; always numeric and positive.
    var duration: MediaTime { get }
    /// Bytes of process memory the frame holds (what bounds how far decoding runs ahead).
    var byteCount: Int { get }
}

extension PresentableFrame {
    public var byteCount: Int { 0 }
}

/// Counters of what a player's presentation did; mpv's names in the comments.
public struct PresentationStats: Sendable, Equatable {
    public var presented = 0
    /// Frames never shown because their vsync had passed by the time they could be: presentation
    /// fell behind (`frame-drop-count`). Never on a virtual clock.
    public var dropped = 0
    /// Frames never shown because a later frame was due on the same vsync: the content's rate is
    /// above the output's (50 fps on 30 Hz shows 3 of every 5 frames), on any clock
    /// (`cadence-frame-drop-count`, Marquee's own).
    public var cadenceDropped = 0
    /// Frames shown later than planned (`vo-delayed-frame-count`): the output showed them on a
    /// later vsync than asked, or they were decoded too late and nothing newer was ready.
    public var delayed = 0
    /// Frames the decoder skipped because decoding was behind the clock (`decoder-frame-drop-count`).
    /// Never on a virtual clock, which waits for decoding.
    public var decoderDropped = 0
    /// Times playback stalled: no frame decoded for `Player.stallTimeout` (the timeline waited).
    public var stalls = 0
    public var lastVsync: Int64 = -1
    public init() {}
}
