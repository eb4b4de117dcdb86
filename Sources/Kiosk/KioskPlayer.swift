import Display
import Foundation
import Media
import Playback
import Render
import Synchronization

/// Command-line choices that override or complement the config.
public struct RunOptions: Sendable {
    public var clock: ClockKind = .real
    /// Stop after this much presentation-clock time (seconds).
    public var exitAfter: Double?
    /// Stop once this many new frames have been shown (on the first output).
    public var exitAfterFrames: Int?
    public var tracePath: String?
    /// The wall node this machine is (`--node`); nil: the host name.
    public var node: String?
    public init() {}
}

/// Plays a config on its output until `shouldContinue` turns false, `exitAfter` passes, or a
/// playlist without loop ends.
public func runKiosk(config: KioskConfig, options: RunOptions, logger: Logger,
                     shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let session = KioskSession(config: config, configPath: nil, logger: logger, node: options.node)
    return try runKiosk(session: session, config: config, options: options, logger: logger, shouldContinue: shouldContinue)
}

/// Makes the outputs `config` gives this node and presents `session` on them: the first on the
/// calling thread, which becomes its presentation thread (its GL context is made and used there),
/// each other one on a thread of its own with a follower session on the same timeline. Each item
/// decodes on a thread of its own. Returns the first output's figures once every output has stopped.
public func runKiosk(session: KioskSession, config: KioskConfig, options: RunOptions, logger: Logger,
                     onVsync: ((Int64) -> Void)? = nil, shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let (kind, reason) = try resolveOutputKind(config.display.output)
    logger.info("decoder chosen", ["hwdec": config.hardwareDecoding.rawValue,
                                   "order": config.hardwareDecoding == .auto ? HardwareDecoding.autoOrder.map(\.rawValue).joined(separator: ",") : config.hardwareDecoding.rawValue,
                                   "fallback": "software (FFmpeg libavcodec, frame threads)"])
    let node = options.node ?? defaultWallNodeName()
    let wallOutputs: [WallConfig.Output?] = try config.wall.map { try $0.outputs(forNode: node) } ?? [nil]
    var card: KMSCard?
    if kind == .kms && wallOutputs.count > 1 {
        for (i, output) in wallOutputs.enumerated() where output?.connector == nil {
            throw WallConfigError(message: "wall.outputs: node \"\(node)\" drives several outputs, so each needs its \"connector\" (\(output?.name ?? "#\(i)") has none)")
        }
        card = try KMSCard(settings: config.display.kms)
    }
    defer { card?.close() }  // after every output has closed (the followers are joined below)
    let trace = try options.tracePath.map { try TraceWriter(path: $0) }
    // The node's other outputs: each its own session, output and thread.
    var threads: [(name: String, done: DispatchSemaphore)] = []
    final class Flag: Sendable { let raised = Atomic(false) }
    let mainDone = Flag()
    for (slot, wallOutput) in wallOutputs.enumerated().dropFirst() {
        guard let wallOutput else { continue }
        let outputLogger = logger.with(["output": wallOutput.name])
        let follower = session.makeFollower(slot: slot, logger: outputLogger)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { [card, trace] in
            defer { done.signal() }
            do {
                _ = try presentOutput(session: follower, kind: kind, reason: reason, card: card, trace: trace, config: config,
                                      wallOutput: wallOutput, options: options, logger: outputLogger, onVsync: nil) {
                    !mainDone.raised.load(ordering: .relaxed)
                }
            } catch {
                outputLogger.error("output stopped", ["error": "\(error)"])
            }
            follower.player.removeAllItems()  // ends its decode threads
        }
        thread.name = "marquee-present-\(slot)"
        thread.stackSize = 8 << 20
        thread.start()
        threads.append((wallOutput.name, done))
    }
    defer {
        mainDone.raised.store(true, ordering: .relaxed)
        for (name, done) in threads where done.wait(timeout: .now() + 10) == .timedOut {
            logger.error("output did not stop within 10 s", ["output": name])
        }
    }
    let stats = try presentOutput(session: session, kind: kind, reason: reason, card: card, trace: trace, config: config,
                                  wallOutput: wallOutputs[0], options: options, logger: logger, onVsync: onVsync,
                                  shouldContinue: shouldContinue)
    logger.info("stopped", ["frames": "\(stats.presented)", "dropped": "\(stats.dropped)",
                            "delayed": "\(stats.delayed)", "decoder-dropped": "\(stats.decoderDropped)",
                            "stalls": "\(stats.stalls)", "vsync": "\(stats.lastVsync)"])
    return stats
}

/// Makes one output (wall output `wallOutput` of this node, or the display) and presents `session` on it.
private func presentOutput(session: KioskSession, kind: OutputKind, reason: String, card: KMSCard?, trace: TraceWriter?,
                           config: KioskConfig, wallOutput: WallConfig.Output?, options: RunOptions, logger: Logger,
                           onVsync: ((Int64) -> Void)?, shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    if kind == .kms {
        var settings = config.display.kms
        if let connector = wallOutput?.connector { settings.connector = connector }
        let output = try KMSOutput(settings: settings, card: card, background: config.display.background, logger: logger)
        defer { output.close() }  // the saved display state goes back on every way out
        output.layer.gravity = config.display.gravity
        output.layer.rotation = config.display.rotation
        applyWall(config, output: wallOutput, to: output.layer, logger: logger)
        session.enableZeroCopy(context: output.glContext, layer: output.layer, logger: logger)
        logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason, "device": output.devicePath,
                                      "api": output.api.rawValue, "format": output.format.rawValue, "rotation": "\(output.layer.rotation.rawValue)",
                                      "fences": output.nativeFences ? "native" : "none", "renderTiming": output.renderTiming,
                                      "hotplug": output.hotplugSource, "renderer": output.renderer])
        session.textureLimit.set(output.glContext.maxTextureSize)  // before the conversion, which the first frame waits for
        chooseConversion(config, renderer: output.renderer, session: session, logger: logger)
        // No display yet, or it goes away: the output waits (the player is not asked for frames, so
        // decoding stays paused), the control socket answers, and health says why.
        session.updateOutput { $0 = .init(name: output.name, mode: "-", connected: false) }
        // Each check while it waits is a sign of life for supervision (the watchdog is fed while
        // the player rightly waits for a display).
        output.shouldContinue = { [session] in
            session.beat(idle: nil, waitingForDisplay: true)
            return !session.isStopped && shouldContinue()
        }
        output.onStateChange = { [session, weak output] state in
            session.updateOutput { o in
                o.connected = state.isConnected
                if let mode = output?.mode { o.mode = "\(mode)" }
            }
        }
        guard try output.waitForDisplay() else { return PresentationStats() }
        return try session.present(on: output, options: options, trace: trace, shouldContinue: shouldContinue, onVsync: onVsync)
    }
    let output = try HeadlessOutput(name: wallOutput.map { "headless-\($0.name)" } ?? "headless-0", mode: config.display.mode,
                                    clock: options.clock, background: config.display.background)
    output.layer.gravity = config.display.gravity
    output.layer.rotation = config.display.rotation
    applyWall(config, output: wallOutput, to: output.layer, logger: logger)
    session.enableZeroCopy(context: output.context, layer: output.layer, logger: logger)
    logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason,
                                  "mode": "\(config.display.mode)", "rotation": "\(output.layer.rotation.rawValue)",
                                  "clock": options.clock.rawValue,
                                  "renderer": output.context.renderer])
    session.textureLimit.set(output.context.maxTextureSize)  // before the conversion, which the first frame waits for
    chooseConversion(config, renderer: output.context.renderer, session: session, logger: logger)
    return try session.present(on: output, options: options, trace: trace, shouldContinue: shouldContinue, onVsync: onVsync)
}

/// Chooses, once per output, where Y'CbCr becomes RGB (`display.conversion`) for the decoders
/// of `session`.
func chooseConversion(_ config: KioskConfig, renderer: String, session: KioskSession, logger: Logger) {
    let choice = chooseColorConversion(config.display.conversion, renderer: renderer)
    session.colorConversion.set(choice.conversion)
    logger.info("colour conversion chosen", ["conversion": choice.conversion.rawValue, "why": choice.reason,
                                             "setting": config.display.conversion.rawValue, "renderer": renderer])
}

/// Places the picture for a wall output: it shows its rectangle of the canvas (bezels are the
/// canvas between output rectangles), turned by the output's rotation. An output that shows
/// several regions is a mosaic: each region's picture, with the region's gravity.
func applyWall(_ config: KioskConfig, output: WallConfig.Output?, to layer: PlayerLayer, logger: Logger) {
    guard let wall = config.wall, let output else { return }
    let regions = wall.regions(seenBy: output)
    guard let region = regions.first?.region else { return }
    layer.rotation = output.rotation
    layer.wallPlacement = wall.placement(of: region, on: output)
    layer.mosaicRegions = regions.count > 1 ? regions.map { ($0.region.rect, $0.region.gravity ?? config.display.gravity) } : []
    logger.info("wall output", ["output": output.name, "window": "\(output.rect)",
                                "regions": regions.map { "\($0.region.rect)" }.joined(separator: ","), "sync": wall.sync.mode.rawValue])
}
