import Foundation
@testable import Kiosk
@testable import Remote
import Testing

@Suite struct MetricsTests {
    @Test func aCounterKeepsWhatItCountedAcrossASourceRestart() {
        var c = MonotonicCounter()
        let totals = [5.0, 7, 2, 2, .nan].map { c.observe($0) }
        // At 2 the source began again from 0: the 7 before are kept.
        #expect(totals == [5, 7, 9, 9, 9])
    }

    @Test func stallsAreCountedAsHealthTurnsStalled() {
        var counters = MetricsCounters()
        for h in ["ok", "stalled", "stalled", "ok", "degraded", "stalled"] { counters.observe(health: h) }
        #expect(counters.stalls == 2)
        counters.observe(event: ["event": "end-file", "reason": "error"])
        counters.observe(event: ["event": "end-file", "reason": "eof"])
        #expect(counters.itemErrors == 1)
    }

    @Test func theTextHasOneHelpAndTypePerFamilyAndEscapedLabels() {
        var s = KioskStatus.Snapshot()
        s.dropped = 3
        var o = KioskStatus.Output(name: "wall \"left\"\n", mode: "1920x1080@60", videoRect: nil, connected: true)
        o.syncErrorMs = 1.5
        o.syncSkipped = 2
        s.outputs = [o]
        var counters = MetricsCounters()
        let text = metricsText(s, health: "degraded", counters: &counters, audioDelay: 0.25, now: s.started + .seconds(90))
        #expect(text.contains("marquee_frames_dropped_total 3\n"))
        #expect(text.contains("marquee_health{state=\"degraded\"} 1\n"))
        #expect(text.contains("marquee_health{state=\"ok\"} 0\n"))
        #expect(text.contains("marquee_uptime_seconds 90\n"))
        #expect(text.contains("marquee_audio_delay_seconds 0.25\n"))
        #expect(text.contains(#"marquee_wall_sync_error_seconds{output="wall \"left\"\n"} 0.0015"#))
        #expect(text.contains(#"marquee_wall_sync_skipped_total{output="wall \"left\"\n"} 2"#))
        let lines = text.split(separator: "\n")
        let types = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(Set(types).count == types.count, "one TYPE per family")
        // A drop of the session's count (a reload) does not make the counter go down.
        s.dropped = 1
        let again = metricsText(s, health: "ok", counters: &counters, audioDelay: nil, now: s.started + .seconds(91))
        #expect(again.contains("marquee_frames_dropped_total 4\n"))
        #expect(!again.contains("marquee_audio_delay_seconds"))
    }
    @Test func liveSourceOutagesCountTheRunningOneToo() {
        var s = KioskStatus.Snapshot()
        s.liveSourceOutages = 3
        s.liveSourceReconnects = 2
        s.liveSourceOutageSeconds = 4.5
        s.liveSourcesDown["rtsp://127.0.0.1:8554/cam"] = (since: s.started + .seconds(80), reason: "no picture for 2.0 s")
        var counters = MetricsCounters()
        let text = metricsText(s, health: "degraded", counters: &counters, audioDelay: nil, now: s.started + .seconds(90))
        #expect(text.contains("marquee_source_outages_total 3\n"))
        #expect(text.contains("marquee_source_reconnects_total 2\n"))
        #expect(text.contains("marquee_source_outage_seconds_total 14.5\n"), "\(text)")
        #expect(text.contains("marquee_sources_down 1\n"))
        // The source back 2 s later: its 12 s move to the ended ones; the total goes on from there.
        s.liveSourcesDown = [:]
        s.liveSourceReconnects = 3
        s.liveSourceOutageSeconds = 16.5
        let back = metricsText(s, health: "ok", counters: &counters, audioDelay: nil, now: s.started + .seconds(95))
        #expect(back.contains("marquee_source_outage_seconds_total 16.5\n"))
        #expect(back.contains("marquee_sources_down 0\n"))
        #expect(!back.contains("marquee_live_lag_seconds"), "no live source plays")
        s.liveLag["http://127.0.0.1:8000/live.mkv"] = 0.2504
        #expect(metricsText(s, health: "ok", counters: &counters, audioDelay: nil, now: s.started + .seconds(96))
            .contains("marquee_live_lag_seconds 0.25\n"))
    }
}
