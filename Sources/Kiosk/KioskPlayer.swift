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
/// playlist without loop ends. The output opens first; the session is made for it.
public func runKiosk(config: KioskConfig, options: RunOptions, logger: Logger,
                     shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    try runKiosk(config: config, options: options, logger: logger, makeSession: { output in
        KioskSession(config: config, configPath: nil, logger: logger, node: options.node, output: output)
    }, shouldContinue: shouldContinue)
}

/// Opens the outputs `config` gives this node and presents a session on each: the first on the
/// calling thread, which becomes its presentation thread (its GL context is made and used there),
/// each other one on a thread of its own with a follower session on the same timeline. Each
/// output opens before its session: `makeSession` is called on the calling thread with what the
/// first output can do (`OutputCapabilities`) and makes the session that plays on it; the
/// followers are made the same way once their own outputs have opened. So no decoder starts
/// before its output exists, and each knows from its first frame what to give it. Each item
/// decodes on a thread of its own. Returns the first output's figures once every output has stopped.
public func runKiosk(config: KioskConfig, options: RunOptions, logger: Logger,
                     makeSession: (OutputCapabilities) throws -> KioskSession,
                     onVsync: ((Int64) -> Void)? = nil, shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let (kind, reason) = try selectOutput(config.display.output, waitForCard: config.display.waitForCard, logger: logger,
                                          shouldContinue: shouldContinue)
    StartupMarks.mark("output-chosen")
    logger.info("decoder chosen", ["hwdec": config.hardwareDecoding.rawValue,
                                   "order": config.hardwareDecoding == .auto ? HardwareDecoding.autoOrder.map(\.rawValue).joined(separator: ",") : config.hardwareDecoding.rawValue,
                                   "fallback": "software (FFmpeg libavcodec, frame threads)"])
    startFirstItemEarly(config, logger: logger)
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
    // The node's other outputs: each its own thread, output and session (made once the first
    // output's session exists: followers are made by it).
    var threads: [(name: String, done: Latch<Bool>)] = []
    final class Flag: Sendable { let raised = Atomic(false) }
    let mainDone = Flag()
    defer {
        mainDone.raised.store(true, ordering: .relaxed)
        for (name, done) in threads where done.wait(timeout: 10) == nil {
            logger.error("output did not stop within 10 s", ["output": name])
        }
    }
    let startFollowers = { (session: KioskSession) in
        for (slot, wallOutput) in wallOutputs.enumerated().dropFirst() {
            guard let wallOutput else { continue }
            let outputLogger = logger.with(["output": wallOutput.name])
            let done = Latch<Bool>()
            startThread(named: "marquee-present-\(slot)", stackSize: 8 << 20) { [card, trace] in
                defer { done.set(true) }
                var follower: KioskSession?
                do {
                    _ = try presentOutput(kind: kind, reason: reason, card: card, trace: trace, config: config,
                                          wallOutput: wallOutput, options: options, logger: outputLogger, onVsync: nil,
                                          makeSession: { output in
                                              let made = session.makeFollower(slot: slot, output: output, logger: outputLogger)
                                              follower = made
                                              return made
                                          }) {
                        !mainDone.raised.load(ordering: .relaxed)
                    }
                } catch {
                    outputLogger.error("output stopped", ["error": "\(error)"])
                }
                follower?.player.removeAllItems()  // ends its decode threads
            }
            threads.append((wallOutput.name, done))
        }
    }
    let stats = try presentOutput(kind: kind, reason: reason, card: card, trace: trace, config: config,
                                  wallOutput: wallOutputs[0], options: options, logger: logger, onVsync: onVsync,
                                  makeSession: { output in
                                      let session = try makeSession(output)
                                      startFollowers(session)
                                      return session
                                  }, shouldContinue: shouldContinue)
    // Who dropped what: presentation for lateness, the cadence (content faster than the output), the decoder.
    logger.info("stopped", ["frames": "\(stats.presented)", "dropped": "\(stats.dropped)", "cadence-dropped": "\(stats.cadenceDropped)",
                            "delayed": "\(stats.delayed)", "decoder-dropped": "\(stats.decoderDropped)",
                            "stalls": "\(stats.stalls)", "vsync": "\(stats.lastVsync)"])
    return stats
}

/// Opens the playlist's first file and decodes its preroll's pictures while the output opens
/// (`EarlyStart`), where the first item is sure to be that file from its start: no wall, schedule
/// or shuffle choosing another, no start offset.
private func startFirstItemEarly(_ config: KioskConfig, logger: Logger) {
    guard config.wall == nil, config.schedule == nil, !config.shuffle, let first = config.playlist.first,
          first.start ?? 0 <= 0 else { return }
    EarlyStart.start(KioskConfig.mediaURL(first.path), limits: config.network.limits, hardware: config.hardwareDecoding,
                     frames: Preroll.frames, logger: logger)
}

/// Opens one output (wall output `wallOutput` of this node, or the display), then makes its
/// session with what the output can do (`makeSession`, on this thread) and presents it there.
private func presentOutput(kind: OutputKind, reason: String, card: KMSCard?, trace: TraceWriter?,
                           config: KioskConfig, wallOutput: WallConfig.Output?, options: RunOptions, logger: Logger,
                           onVsync: ((Int64) -> Void)?, makeSession: (OutputCapabilities) throws -> KioskSession,
                           shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    if kind == .kms {
        var settings = config.display.kms
        if let connector = wallOutput?.connector { settings.connector = connector }
        // The presentation (GL or planes) is chosen as the output opens (`KMSOutput.presentationTable`).
        StartupMarks.mark("output-open-start")
        let output = try KMSOutput(settings: settings, card: card, scanout: config.display.scanout, untimed: options.clock == .virtual,
                                   background: config.display.background, logger: logger)
        defer { output.close() }  // the saved display state goes back on every way out
        output.layer.gravity = config.display.gravity
        output.layer.rotation = config.display.rotation
        // A Y'CbCr plane cannot blend: with overlays or transitions the pictures go into XRGB buffers.
        output.pictureBlending = !config.overlays.isEmpty ? "overlays" : config.hasTransitions ? "transitions" : nil
        applyWall(config, output: wallOutput, to: output.layer, logger: logger)
        let capabilities = output.openCapabilities(conversion: config.display.conversion)
        StartupMarks.mark("output-open")
        logger.log(.info, "output chosen", fields: [("output", output.name), ("kind", kind.rawValue), ("why", reason)] + output.openedFields)
        logCapabilities(capabilities, setting: config.display.conversion, logger: logger)
        return try presentOnDisplay(output, makeSession: makeSession, capabilities: capabilities, options: options, trace: trace,
                                    shouldContinue: shouldContinue, onVsync: onVsync)
    }
    StartupMarks.mark("output-open-start")
    let name = wallOutput.map { "headless-\($0.name)" } ?? "headless-0"
    let scanout = chooseHeadlessScanout(config.display.scanout, renderNodes: renderNodes())
    let output: any HeadlessKioskOutput = switch scanout.kind {
    case .gl: try HeadlessOutput(name: name, mode: config.display.mode, clock: options.clock, background: config.display.background)
    case .planes: try HeadlessPlanesOutput(name: name, mode: config.display.mode, clock: options.clock, background: config.display.background)
    }
    output.scanout = scanout
    return try presentHeadless(output, kind: kind, reason: reason, trace: trace, config: config, wallOutput: wallOutput, options: options,
                               logger: logger, onVsync: onVsync, makeSession: makeSession, shouldContinue: shouldContinue)
}

/// A headless output of either kind, opened: placed as the config says, its capabilities read and
/// logged, then its session made and presented on it.
private func presentHeadless<Output: HeadlessKioskOutput>(_ output: Output, kind: OutputKind, reason: String, trace: TraceWriter?, config: KioskConfig,
                                                          wallOutput: WallConfig.Output?, options: RunOptions, logger: Logger,
                                                          onVsync: ((Int64) -> Void)?, makeSession: (OutputCapabilities) throws -> KioskSession,
                                                          shouldContinue: @escaping () -> Bool) throws -> PresentationStats {
    let layer = output.pictureLayer
    layer.gravity = config.display.gravity
    layer.rotation = config.display.rotation
    applyWall(config, output: wallOutput, to: layer, logger: logger)
    let capabilities = output.openCapabilities(conversion: config.display.conversion)
    StartupMarks.mark("output-open")
    logger.info("output chosen", ["output": output.name, "kind": kind.rawValue, "why": reason,
                                  "mode": "\(config.display.mode)", "rotation": "\(layer.rotation.rawValue)",
                                  "clock": options.clock.rawValue, "renderer": output.renderer,
                                  "scanout": output.scanout.map { "\($0.kind.rawValue): \($0.reason)" } ?? "-"])
    logCapabilities(capabilities, setting: config.display.conversion, logger: logger)
    let session = try makeSession(capabilities)
    StartupMarks.mark("session-made")
    return try session.present(on: output, options: options, trace: trace, shouldContinue: shouldContinue, onVsync: onVsync)
}

/// A headless output as the kiosk opens it (GL or planes).
protocol HeadlessKioskOutput: KioskOutput, AnyObject {
    var renderer: String { get }
    var scanout: ScanoutChoice? { get set }
    func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities
}

extension HeadlessOutput: HeadlessKioskOutput {
    var renderer: String { context.renderer }
}
extension HeadlessPlanesOutput: HeadlessKioskOutput {}

/// A KMS output (either presentation) as the kiosk drives it: it waits for its display, and says when
/// the display comes and goes.
protocol KioskDisplayOutput: KioskOutput {
    var shouldContinue: () -> Bool { get set }
    var onStateChange: ((DisplayLinkState) -> Void)? { get set }
    var mode: DisplayMode? { get }
    func waitForDisplay() throws -> Bool
}

extension KMSOutput: KioskDisplayOutput {}

/// Makes the session for a KMS output that opened and presents it there once a display is connected.
private func presentOnDisplay<Output: KioskDisplayOutput>(_ output: Output, makeSession: (OutputCapabilities) throws -> KioskSession,
                                                          capabilities: OutputCapabilities, options: RunOptions, trace: TraceWriter?,
                                                          shouldContinue: @escaping () -> Bool,
                                                          onVsync: ((Int64) -> Void)?) throws -> PresentationStats {
    let session = try makeSession(capabilities)
    // No display yet, or it goes away: the output waits (the player is not asked for frames, so
    // decoding stays paused), the control socket answers, and health says why.
    session.reporter.updateOutput { $0 = .init(name: output.name, mode: "-", connected: false) }
    // Each check while it waits is a sign of life for supervision (the watchdog is fed while
    // the player rightly waits for a display).
    output.shouldContinue = { [session] in
        session.reporter.beat(idle: nil, waitingForDisplay: true)
        return !session.isStopped && shouldContinue()
    }
    output.onStateChange = { [session, weak output] state in
        session.reporter.updateOutput { o in
            o.connected = state.isConnected
            if let mode = output?.mode { o.mode = "\(mode)" }
        }
    }
    guard try output.waitForDisplay() else { return PresentationStats() }
    return try session.present(on: output, options: options, trace: trace, shouldContinue: shouldContinue, onVsync: onVsync)
}

/// Says what an output that opened can do: its colour conversion (and why), its texture limit
/// and DMA-BUF import.
func logCapabilities(_ output: OutputCapabilities, setting: ColorConversionMode, logger: Logger) {
    logger.info("colour conversion chosen", ["conversion": output.colorConversion.rawValue, "why": output.colorConversionReason,
                                             "setting": setting.rawValue, "renderer": output.renderer])
    logger.debug("DMA-BUF import", ["import": output.dmabuf.importsDMABufs ? "yes" : "no",
                                    "modifiers": output.dmabuf.importsModifiers ? "yes" : "no",
                                    "external_images": output.dmabuf.samplesExternalImages ? "yes" : "no",
                                    "importer": output.dmabuf.importerFailure ?? (output.dmabuf.canImport ? "made" : "none"),
                                    "formats": output.dmabuf.formats.map { "\($0.count)" } ?? "not listed",
                                    "max_texture": output.maxTextureSize.map { "\($0)" } ?? "-"])
    if let failure = output.dmabuf.importerFailure {
        logger.info("DMA-BUF import unavailable: hardware frames are copied", ["error": failure])
    }
}

/// Places the picture for a wall output: it shows its rectangle of the canvas (bezels are the
/// canvas between output rectangles), turned by the output's rotation. An output that shows
/// several regions is a mosaic: each region's picture, with the region's gravity.
func applyWall(_ config: KioskConfig, output: WallConfig.Output?, to layer: some PictureLayer, logger: Logger) {
    guard let wall = config.wall, let output else { return }
    let regions = wall.regions(seenBy: output)
    guard let region = regions.first?.region else { return }
    layer.rotation = output.rotation
    layer.wallPlacement = wall.placement(of: region, on: output)
    layer.mosaicRegions = regions.count > 1 ? regions.map { ($0.region.rect, $0.region.gravity ?? config.display.gravity) } : []
    logger.info("wall output", ["output": output.name, "window": "\(output.rect)",
                                "regions": regions.map { "\($0.region.rect)" }.joined(separator: ","), "sync": wall.sync.mode.rawValue])
}
