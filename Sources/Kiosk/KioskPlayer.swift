import Display
import Foundation
import Media
import Playback
import Render

/// Command-line choices that override or complement the config.
public struct RunOptions: Sendable {
    public var clock: ClockKind = .real
    /// Stop after this much presentation-clock time (seconds).
    public var exitAfter: Double?
    public var tracePath: String?
    /// The wall node this machine is (`--node`); nil: the host name.
    public var node: String?
    public init() {}
}

/// Plays a config on its output until `shouldContinue` turns false, `exitAfter` passes, or a
/// playlist without loop ends.
public func runKiosk(config: KioskConfig, options: RunOptions, logger: Logger,
                     shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let session = KioskSession(config: config, configPath: nil, logger: logger)
    return try runKiosk(session: session, config: config, options: options, logger: logger, shouldContinue: shouldContinue)
}

/// Makes the output `config` asks for and presents `session` on it. Runs on the calling thread,
/// which becomes the presentation thread (the GL context is made and used there); each item
/// decodes on a thread of its own.
public func runKiosk(session: KioskSession, config: KioskConfig, options: RunOptions, logger: Logger,
                     onVsync: ((Int64) -> Void)? = nil, shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let (kind, reason) = try resolveOutputKind(config.display.output)
    logger.info("decoder chosen", ["hwdec": config.hardwareDecoding.rawValue,
                                   "order": config.hardwareDecoding == .auto ? HardwareDecoding.autoOrder.map(\.rawValue).joined(separator: ",") : config.hardwareDecoding.rawValue,
                                   "fallback": "software (FFmpeg libavcodec, frame threads)"])
    let stats: PresentationStats
    if kind == .kms {
        let output = try KMSOutput(settings: config.display.kms, background: config.display.background, logger: logger)
        defer { output.close() }  // the saved display state goes back on every way out
        output.layer.gravity = config.display.gravity
        output.layer.rotation = config.display.rotation
        try applyWall(config, node: options.node, to: output.layer, logger: logger)
        logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason, "device": output.devicePath,
                                      "api": output.api.rawValue, "format": output.format.rawValue, "rotation": "\(config.display.rotation.rawValue)",
                                      "fences": output.nativeFences ? "native" : "none", "renderTiming": output.renderTiming,
                                      "hotplug": output.hotplugSource, "renderer": output.renderer])
        chooseConversion(config, renderer: output.renderer, session: session, logger: logger)
        // No display yet, or it goes away: the output waits (the player is not asked for frames, so
        // decoding stays paused), the control socket answers, and health says why.
        session.status.update { $0.outputs = [.init(name: output.name, mode: "-", connected: false)] }
        output.shouldContinue = { [session] in !session.isStopped && shouldContinue() }
        output.onStateChange = { [session, weak output] state in
            session.status.update { s in
                guard !s.outputs.isEmpty else { return }
                s.outputs[0].connected = state.isConnected
                if let mode = output?.mode { s.outputs[0].mode = "\(mode)" }
            }
        }
        if try output.waitForDisplay() {
            stats = try session.present(on: output, options: options, shouldContinue: shouldContinue, onVsync: onVsync)
        } else {
            stats = PresentationStats()
        }
    } else {
        let output = try HeadlessOutput(mode: config.display.mode, clock: options.clock, background: config.display.background)
        output.layer.gravity = config.display.gravity
        output.layer.rotation = config.display.rotation
        try applyWall(config, node: options.node, to: output.layer, logger: logger)
        logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason,
                                      "mode": "\(config.display.mode)", "rotation": "\(config.display.rotation.rawValue)",
                                      "clock": options.clock.rawValue,
                                      "renderer": output.context.renderer])
        chooseConversion(config, renderer: output.context.renderer, session: session, logger: logger)
        stats = try session.present(on: output, options: options, shouldContinue: shouldContinue, onVsync: onVsync)
    }
    logger.info("stopped", ["frames": "\(stats.presented)", "dropped": "\(stats.dropped)",
                            "delayed": "\(stats.delayed)", "vsync": "\(stats.lastVsync)"])
    return stats
}

/// Chooses, once per output, where frames become RGB (`display.conversion`, the renderer), logs
/// why, and sets it for the session's decode threads.
func chooseConversion(_ config: KioskConfig, renderer: String, session: KioskSession, logger: Logger) {
    let choice = chooseColorConversion(config.display.conversion, renderer: renderer)
    session.colorConversion.set(choice.conversion)
    logger.info("colour conversion chosen", ["conversion": choice.conversion.rawValue, "why": choice.reason,
                                             "setting": config.display.conversion.rawValue, "renderer": renderer])
}

/// Places the picture for a wall: the output this node drives shows its rectangle of the canvas
/// (bezels are the canvas between output rectangles), turned by the output's rotation. This version
/// presents one output per process: the node's first.
func applyWall(_ config: KioskConfig, node: String?, to layer: PlayerLayer, logger: Logger) throws {
    guard let wall = config.wall else { return }
    let name = node ?? defaultWallNodeName()
    let outputs = try wall.outputs(forNode: name)
    let output = outputs[0]
    if outputs.count > 1 {
        logger.warning("this version presents one output per process; the node's others stay dark",
                       ["node": name, "presenting": output.name, "others": outputs.dropFirst().map(\.name).joined(separator: ",")])
    }
    let regions = wall.regions(seenBy: output)
    guard let region = regions.first?.region else { return }
    if regions.count > 1 { logger.warning("this version shows one region per output", ["output": output.name]) }
    layer.rotation = output.rotation
    layer.wallPlacement = wall.placement(of: region, on: output)
    logger.info("wall output", ["node": name, "output": output.name, "window": "\(output.rect)", "region": "\(region.rect)",
                                "sync": wall.sync.mode.rawValue])
}
