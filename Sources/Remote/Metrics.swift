import Foundation
import Kiosk

/// A counter that only goes up, from a source that may start again from zero (a count kept per
/// session, which a reload may renew): a drop is taken as a restart and what was counted before
/// is kept.
public struct MonotonicCounter: Sendable, Equatable {
    private var base = 0.0
    private var last = 0.0
    public init() {}

    /// The total after the source now reads `raw`.
    public mutating func observe(_ raw: Double) -> Double {
        guard raw.isFinite else { return base + last }
        if raw < last { base += last }
        last = raw
        return base + last
    }

    public var value: Double { base + last }
}

/// Prometheus' text exposition format (version 0.0.4): `# HELP`, `# TYPE`, then samples.
public struct PrometheusText {
    private(set) public var text = ""
    public init() {}

    public mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        let shown = value.isNaN ? "NaN" : value == .infinity ? "+Inf" : value == -.infinity ? "-Inf"
            : value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
        if labels.isEmpty {
            text += "\(name) \(shown)\n"
        } else {
            text += "\(name){" + labels.map { "\($0.0)=\"\(Self.escaped($0.1))\"" }.joined(separator: ",") + "} \(shown)\n"
        }
    }

    static func escaped(_ value: String) -> String {
        var out = ""
        for c in value.prefix(128) {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}

/// What `/metrics` counts beyond the status snapshot: kept by the API as events and pictures come.
public struct MetricsCounters: Sendable {
    public var picturesShown = 0
    public var itemErrors = 0
    public var stalls = 0
    public var lastHealth = "ok"
    public var requests: [String: Int] = [:]
    public var dropped = MonotonicCounter()
    public var decoderDropped = MonotonicCounter()
    public var cadenceDropped = MonotonicCounter()
    public var delayed = MonotonicCounter()
    public var loopPasses = MonotonicCounter()
    public var sourceOutages = MonotonicCounter()
    public var sourceReconnects = MonotonicCounter()
    public var sourceOutageSeconds = MonotonicCounter()
    /// Per output: repeated, skipped, restarts (wall sync).
    public var sync: [String: [MonotonicCounter]] = [:]
    public init() {}

    /// Counts a move into `stalled` (sampled health).
    public mutating func observe(health: String) {
        if health == "stalled" && lastHealth != "stalled" { stalls += 1 }
        lastHealth = health
    }

    /// Counts an event sent to clients: an `end-file` with an error is an item error.
    public mutating func observe(event: JSONValue) {
        if event["event"]?.stringValue == "end-file", event["reason"]?.stringValue == "error" { itemErrors += 1 }
    }
}

/// The states `marquee_health` reports, one sample each (labels bounded).
let healthStates = ["ok", "degraded", "stalled", "failed", "off"]

/// `/metrics` for a status snapshot and the counters; `audioDelay` in seconds where known.
func metricsText(_ s: KioskStatus.Snapshot, health: String, counters: inout MetricsCounters, audioDelay: Double?,
                 now: ContinuousClock.Instant = .now) -> String {
    var m = PrometheusText()
    m.family("marquee_up", "gauge", "1 while the player runs.")
    m.sample("marquee_up", [], 1)
    m.family("marquee_uptime_seconds", "gauge", "Seconds since the player started.")
    m.sample("marquee_uptime_seconds", [], ((now - s.started).seconds * 1000).rounded() / 1000)
    m.family("marquee_health", "gauge", "1 for the current health state, 0 for the others.")
    for state in healthStates { m.sample("marquee_health", [("state", state)], state == health ? 1 : 0) }
    m.family("marquee_frames_shown_total", "counter", "New pictures presented (first output's main lane) since the HTTP server started.")
    m.sample("marquee_frames_shown_total", [], Double(counters.picturesShown))
    m.family("marquee_frames_dropped_total", "counter", "Frames dropped (all causes), as frame-drop-count.")
    m.sample("marquee_frames_dropped_total", [], counters.dropped.observe(Double(s.dropped)))
    m.family("marquee_decoder_frames_dropped_total", "counter", "Frames the decoder skipped, as decoder-frame-drop-count.")
    m.sample("marquee_decoder_frames_dropped_total", [], counters.decoderDropped.observe(Double(s.decoderDropped)))
    m.family("marquee_cadence_frames_dropped_total", "counter", "Frames overtaken at presentation, as cadence-frame-drop-count.")
    m.sample("marquee_cadence_frames_dropped_total", [], counters.cadenceDropped.observe(Double(s.cadenceDropped)))
    m.family("marquee_frames_delayed_total", "counter", "Frames shown a vsync late, as vo-delayed-frame-count.")
    m.sample("marquee_frames_delayed_total", [], counters.delayed.observe(Double(s.delayed)))
    m.family("marquee_stalls_total", "counter", "Times health turned stalled (sampled every second).")
    m.sample("marquee_stalls_total", [], Double(counters.stalls))
    m.family("marquee_item_errors_total", "counter", "Items that ended with an error (end-file events with reason error).")
    m.sample("marquee_item_errors_total", [], Double(counters.itemErrors))
    m.family("marquee_items_failed", "gauge", "Playlist entries whose last attempt failed.")
    m.sample("marquee_items_failed", [], Double(s.items.filter { $0.state == .failed }.count))
    m.family("marquee_playlist_items", "gauge", "Entries in the playlist.")
    m.sample("marquee_playlist_items", [], Double(s.items.count))
    m.family("marquee_loop_passes_total", "counter", "Passes through the playlist.")
    m.sample("marquee_loop_passes_total", [], counters.loopPasses.observe(Double(s.loopPass)))
    m.family("marquee_source_outages_total", "counter", "Times a live network source went down.")
    m.sample("marquee_source_outages_total", [], counters.sourceOutages.observe(Double(s.liveSourceOutages)))
    m.family("marquee_source_reconnects_total", "counter", "Times a live network source came back after going down.")
    m.sample("marquee_source_reconnects_total", [], counters.sourceReconnects.observe(Double(s.liveSourceReconnects)))
    // The outages that ended, and the running ones so far: it grows while a source is down.
    let running = s.liveSourcesDown.values.reduce(0.0) { $0 + max(0, (now - $1.since).seconds) }
    m.family("marquee_source_outage_seconds_total", "counter", "Seconds live network sources were down (those down now included).")
    m.sample("marquee_source_outage_seconds_total", [],
             (counters.sourceOutageSeconds.observe(s.liveSourceOutageSeconds + running) * 1000).rounded() / 1000)
    m.family("marquee_sources_down", "gauge", "Live network sources down now.")
    m.sample("marquee_sources_down", [], Double(s.liveSourcesDown.count))
    if let lag = s.liveLag.values.max() {
        m.family("marquee_live_lag_seconds", "gauge", "How far behind its source a live source's last frame is shown, as live-lag.")
        m.sample("marquee_live_lag_seconds", [], (lag * 1000).rounded() / 1000)
    }
    m.family("marquee_paused", "gauge", "1 while paused by command.")
    m.sample("marquee_paused", [], s.paused ? 1 : 0)
    m.family("marquee_display_fps", "gauge", "The first output's refresh rate.")
    m.sample("marquee_display_fps", [], s.displayFPS)
    if let audioDelay {
        m.family("marquee_audio_delay_seconds", "gauge", "The sound's delay against the picture (audio-delay).")
        m.sample("marquee_audio_delay_seconds", [], audioDelay)
    }
    // One set per output: as many as the config names (bounded).
    let synced = s.outputs.prefix(64).filter { $0.syncErrorMs != nil }
    if !synced.isEmpty {
        m.family("marquee_wall_sync_error_seconds", "gauge", "The last frame's offset from its wall-clock vsync.")
        for o in synced { m.sample("marquee_wall_sync_error_seconds", [("output", o.name)], (o.syncErrorMs ?? 0) / 1000) }
        let kinds = [("repeated", "Frames repeated to fall back in step."), ("skipped", "Frames skipped to catch up."),
                     ("restarts", "Timeline restarts to catch up.")]
        for (k, (kind, help)) in kinds.enumerated() {
            m.family("marquee_wall_sync_\(kind)_total", "counter", help)
            for o in synced {
                var list = counters.sync[o.name] ?? [MonotonicCounter(), MonotonicCounter(), MonotonicCounter()]
                let raw = [o.syncRepeated, o.syncSkipped, o.syncRestarts][k]
                m.sample("marquee_wall_sync_\(kind)_total", [("output", o.name)], list[k].observe(Double(raw)))
                counters.sync[o.name] = list
            }
        }
    }
    m.family("marquee_http_requests_total", "counter", "HTTP requests answered, by status class.")
    for code in ["2xx", "3xx", "4xx", "5xx"] { m.sample("marquee_http_requests_total", [("code", code)], Double(counters.requests[code] ?? 0)) }
    return m.text
}
