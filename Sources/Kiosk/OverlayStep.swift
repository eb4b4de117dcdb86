import Foundation
import Media
import Playback
import Render

/// The overlays of a config on one output, placed again at each vsync: at the vsync's wall time
/// (the virtual clock's: `config.virtualClockStart` + n / refresh) it updates the layer's overlays
/// and says whether the picture must be drawn again. A reload's overlays take over at once. Each
/// change is a trace line (`"event":"overlays"`: the vsync, and each overlay shown with its text
/// or file and rectangle). Presentation thread.
final class OverlayStep<Output: KioskOutput> {
    private let output: Output
    private let clock: any VsyncClock
    private let layer: any PictureLayer
    private let trace: TraceWriter?
    private let overlays: OverlayPresenter
    /// The overlays and time zone of the config playing now (a reload changes them).
    private let current: () -> ([OverlayConfig], TimeZone?)
    private let virtualStart: WallTime
    private let canvas: (width: Int, height: Int)?
    /// What the overlays were last placed for: nothing they show changes within a second of
    /// the wall clock (texts, clocks and schedules change on whole seconds).
    private var lastSecond: Int64?
    private var lastBounds: PixelRect?

    /// `onStatus`: where the overlays shown are reported (the node's status; nil: nowhere).
    init(output: Output, config: KioskConfig, trace: TraceWriter?, logger: Logger,
         onStatus: (([OverlayStatus]) -> Void)?, current: @escaping () -> ([OverlayConfig], TimeZone?)) {
        self.output = output
        clock = output.clock
        layer = output.pictureLayer
        self.trace = trace
        self.current = current
        virtualStart = config.virtualClockStart ?? WallTime.now()
        overlays = OverlayPresenter(overlays: config.overlays, timeZone: config.timeZone ?? .current,
                                    logger: logger.with(["output": output.name]))
        if let onStatus { overlays.onStatus = onStatus }
        canvas = config.wall.map { (width: $0.canvasWidth, height: $0.canvasHeight) }
    }

    /// Places the overlays for vsync `n`; true when the picture must be drawn again.
    func step(_ n: Int64) -> Bool {
        let current = current()
        let replaced = overlays.replace(current.0, timeZone: current.1 ?? .current)
        guard !overlays.overlays.isEmpty || replaced else { return false }
        let wall = clock.wallTime(ofVsync: n) ?? virtualStart + Int64(saturating: clock.time(ofVsync: n).seconds * 1e9)
        let second = wall.nanoseconds >= 0 ? wall.nanoseconds / 1_000_000_000 : (wall.nanoseconds + 1) / 1_000_000_000 - 1
        let bounds = output.bounds
        guard replaced || second != lastSecond || bounds != lastBounds else { return false }
        (lastSecond, lastBounds) = (second, bounds)
        guard let pictures = overlays.update(at: wall, outputWidth: bounds.width, outputHeight: bounds.height,
                                             window: layer.wallPlacement?.window, canvas: canvas) else { return false }
        layer.overlays = pictures
        if let trace, let shown = overlays.lastStatus {
            let list = shown.enumerated().compactMap { i, o -> String? in
                guard o.visible, let r = o.rect else { return nil }
                return "{\"index\":\(i),\"kind\":\"\(o.kind)\",\"content\":\(jsonStringLiteral(o.content)),\"rect\":[\(r.map(String.init).joined(separator: ","))]}"
            }
            trace.event("{\"type\":\"event\",\"event\":\"overlays\",\"output\":\(jsonStringLiteral(output.name)),\"vsync\":\(n),\"shown\":[\(list.joined(separator: ","))]}")
        }
        return true
    }
}
