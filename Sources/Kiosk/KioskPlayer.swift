import Display
import Foundation
import Media
import Playback

/// Command-line choices that override or complement the config.
public struct RunOptions: Sendable {
    public var clock: ClockKind = .real
    /// Stop after this much presentation-clock time (seconds).
    public var exitAfter: Double?
    public var tracePath: String?
    public init() {}
}

/// Plays a config on its output until `shouldContinue` turns false, `exitAfter` passes, or a
/// playlist without loop ends. Runs on the calling thread, which becomes the presentation thread
/// (the GL context is made and used there); decoding runs on a thread of its own.
public func runKiosk(config: KioskConfig, options: RunOptions, logger: Logger,
                     shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let (kind, reason) = try resolveOutputKind(config.display.output)
    if kind == .kms {
        let output = try KMSOutput(settings: config.display.kms, background: config.display.background, logger: logger)
        defer { output.close() }  // the saved display state goes back on every way out
        output.layer.gravity = config.display.gravity
        logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason, "device": output.devicePath,
                                      "connector": output.connectorName, "mode": "\(output.mode)", "api": output.api.rawValue,
                                      "fences": output.nativeFences ? "native" : "none", "renderer": output.renderer])
        return try play(config: config, options: options, output: output, logger: logger, shouldContinue: shouldContinue)
    }
    let output = try HeadlessOutput(mode: config.display.mode, clock: options.clock, background: config.display.background)
    output.layer.gravity = config.display.gravity
    logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason,
                                  "mode": "\(config.display.mode)", "clock": options.clock.rawValue,
                                  "renderer": output.context.renderer])
    return try play(config: config, options: options, output: output, logger: logger, shouldContinue: shouldContinue)
}

/// Decodes the playlist and presents it on `output` (the part of `runKiosk` after the output is made).
private func play<Output: PresentationOutput>(config: KioskConfig, options: RunOptions, output: Output, logger: Logger,
                                             shouldContinue: @escaping () -> Bool) throws -> PresentationStats
    where Output.Frame == VideoFrame {
    logger.info("decoder chosen", ["hwdec": config.hardwareDecoding.rawValue,
                                   "order": config.hardwareDecoding == .auto ? HardwareDecoding.autoOrder.map(\.rawValue).joined(separator: ",") : config.hardwareDecoding.rawValue,
                                   "fallback": "software (FFmpeg libavcodec, frame threads)"])

    let trace = try options.tracePath.map { try TraceWriter(path: $0) }
    let source = PlaylistSource(items: config.playlist, loop: config.loop, hardware: config.hardwareDecoding, logger: logger)
    source.start()
    defer { source.stop() }
    let presenter = PresentationLoop(source: source, output: output, trace: trace, logger: logger,
                                     exitAfter: options.exitAfter.map { MediaTime(seconds: $0, preferredTimescale: 1_000_000) })
    try presenter.run(while: shouldContinue)
    logger.info("stopped", ["frames": "\(presenter.stats.presented)", "dropped": "\(presenter.stats.dropped)",
                            "delayed": "\(presenter.stats.delayed)", "vsync": "\(presenter.stats.lastVsync)"])
    return presenter.stats
}
