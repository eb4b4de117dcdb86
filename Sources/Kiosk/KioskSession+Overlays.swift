import Foundation
import Media
import Playback
import Render

extension KioskSession {
    /// The per-vsync step of the config's overlays on `output` (nil for a mosaic's further
    /// regions, whose output's own session draws them): at each vsync's wall time (the virtual
    /// clock's: `config.virtualClockStart` + n / refresh) it updates the layer's overlays and
    /// says whether the picture must be drawn again. A reload's overlays take over at once. Each
    /// change is a trace line (`"event":"overlays"`: the vsync, and each overlay shown with its
    /// text or file and rectangle).
    func makeOverlayStep<Output: KioskOutput>(output: Output, trace: TraceWriter?) -> ((Int64) -> Bool)? {
        guard role.reportsOutput else { return nil }
        let config = state.withLock { $0.config }
        let clock = output.clock
        let virtualStart = config.virtualClockStart ?? WallTime.now()
        let overlays = OverlayPresenter(overlays: config.overlays, timeZone: config.timeZone ?? .current,
                                        logger: logger.with(["output": output.name]))
        if role.isLeader { overlays.onStatus = { [status] list in status.update { $0.overlays = list } } }
        let layer = output.pictureLayer
        let canvas = config.wall.map { (width: $0.canvasWidth, height: $0.canvasHeight) }
        // What the overlays were last placed for: nothing they show changes within a second of
        // the wall clock (texts, clocks and schedules change on whole seconds).
        let last = OverlayStepState()
        return { [self] n in
            let current = state.withLock { ($0.config.overlays, $0.config.timeZone) }
            let replaced = overlays.replace(current.0, timeZone: current.1 ?? .current)
            guard !overlays.overlays.isEmpty || replaced else { return false }
            let wall = clock.wallTime(ofVsync: n) ?? virtualStart + Int64(saturating: clock.time(ofVsync: n).seconds * 1e9)
            let second = wall.nanoseconds >= 0 ? wall.nanoseconds / 1_000_000_000 : (wall.nanoseconds + 1) / 1_000_000_000 - 1
            let bounds = output.bounds
            guard replaced || second != last.second || bounds != last.bounds else { return false }
            (last.second, last.bounds) = (second, bounds)
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
}

/// What a step placed the overlays for last (presentation thread only).
final class OverlayStepState {
    var second: Int64?
    var bounds: PixelRect?
}
