import Foundation
import Playback
import SystemCalls

/// How good the synchronized system clock is, as the clock service that keeps it says: chrony
/// (`chronyc -c tracking`) or linuxptp (`pmc ... GET TIME_STATUS_NP`). Wall sync by the clock is
/// only as good as this: a node whose clock is off by 20 ms shows its frames 20 ms off.
public struct ClockQuality: Sendable, Equatable {
    /// `chrony`, `ptp`, or `none` (no clock service could be asked).
    public var source: String
    /// Whether the service has a reference and keeps the clock to it.
    public var synchronized: Bool
    /// System clock minus the reference, seconds (chrony's estimate, or PTP's offset from master).
    public var offset: Double?
    /// chrony's long-term RMS of the offset, seconds.
    public var rmsOffset: Double?
    public var stratum: Int?
    /// The reference: a server name, or the PTP grandmaster's identity.
    public var reference: String?
    /// What the service said, or why none could be asked.
    public var detail: String

    public static func none(_ why: String) -> ClockQuality {
        ClockQuality(source: "none", synchronized: false, detail: why)
    }

    /// Reads `chronyc -c tracking`: reference ID, name, stratum, reference time, correction (the
    /// system clock is *slow* by a positive one), last offset, RMS offset, frequency, residual
    /// frequency, skew, root delay, root dispersion, update interval, leap status.
    public static func chrony(trackingCSV text: String) -> ClockQuality? {
        let fields = text.split(separator: "\n").first.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        guard fields.count >= 14, let stratum = Int(fields[2]), let correction = Double(fields[4]) else { return nil }
        let leap = fields[13].trimmingCharacters(in: .whitespaces)
        let synchronized = leap != "Not synchronised" && stratum > 0 && stratum < 16 && fields[0] != "00000000"
        return ClockQuality(source: "chrony", synchronized: synchronized, offset: -correction, rmsOffset: Double(fields[6]),
                            stratum: stratum, reference: fields[1].isEmpty ? fields[0] : fields[1],
                            detail: "leap status \(leap)")
    }

    /// Reads linuxptp's `pmc -u -b 0 'GET TIME_STATUS_NP'` answer: `master_offset` (ns),
    /// `gmPresent` and `gmIdentity`.
    public static func ptp(timeStatus text: String) -> ClockQuality? {
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if words.count == 2 { values[String(words[0])] = String(words[1]) }
        }
        guard let offset = values["master_offset"].flatMap(Double.init), let present = values["gmPresent"] else { return nil }
        return ClockQuality(source: "ptp", synchronized: present == "true", offset: offset / 1e9,
                            reference: values["gmIdentity"], detail: present == "true" ? "grandmaster present" : "no grandmaster")
    }

    /// Asks chrony, then linuxptp; each command gets `timeout` seconds.
    public static func probe(chronyc: String = "chronyc", pmc: String = "pmc", timeout: Double = 2) -> ClockQuality {
        var problems: [String] = []
        switch runCommand([chronyc, "-c", "tracking"], timeout: timeout) {
        case .success(let out):
            if let quality = chrony(trackingCSV: out) { return quality }
            problems.append("chronyc: unexpected answer \(out.prefix(80).debugDescription)")
        case .failure(let why): problems.append("chronyc: \(why.description)")
        }
        switch runCommand([pmc, "-u", "-b", "0", "GET TIME_STATUS_NP"], timeout: timeout) {
        case .success(let out):
            if let quality = ptp(timeStatus: out) { return quality }
            problems.append("pmc: no TIME_STATUS_NP answer (is ptp4l running?)")
        case .failure(let why): problems.append("pmc: \(why.description)")
        }
        return .none(problems.joined(separator: "; "))
    }

    struct CommandFailure: Error, CustomStringConvertible { let description: String }

    /// Runs `argv` (found on PATH), returns its standard output; fails when it cannot start,
    /// exits non-zero, or runs past `timeout` seconds (then it is killed).
    static func runCommand(_ argv: [String], timeout: Double) -> Result<String, CommandFailure> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let exited = Latch<Void>()
        process.terminationHandler = { _ in exited.set(()) }
        do { try process.run() } catch { return .failure(CommandFailure(description: "cannot run: \(error)")) }
        // Foundation's handler, or the kernel when Foundation cannot see the end yet (`ChildEnd.of`).
        let deadline = ContinuousClock.now + .seconds(max(0, min(timeout, 86_400)))
        var end: ChildEnd?
        while end == nil && ContinuousClock.now < deadline {
            if exited.wait(timeout: 0.05) != nil {
                end = ChildEnd(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal)
            } else {
                end = ChildEnd.of(process.processIdentifier)
            }
        }
        guard let end else {
            process.terminate()
            return .failure(CommandFailure(description: "no answer within \(timeout) s"))
        }
        // What it wrote is in the pipes now; a write end another process inherited never closes.
        let output = String(decoding: FileDescriptor.readAvailable(out.fileHandleForReading.fileDescriptor, limit: 1 << 20), as: UTF8.self)
        guard end == ChildEnd(status: 0, signalled: false) else {
            let message = String(decoding: FileDescriptor.readAvailable(err.fileHandleForReading.fileDescriptor, limit: 1 << 16), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            // env exits 127 when the command is not installed.
            let why = end == ChildEnd(status: 127, signalled: false) ? "not installed" : message.isEmpty ? "\(end)" : message
            return .failure(CommandFailure(description: why))
        }
        return .success(output)
    }
}

/// Asks the clock service how good the system clock is (`probe`), now and every `interval`
/// seconds until `stop` is raised, on a thread of its own; `status` gets each answer (health and
/// `wall-sync` report it), and a change is logged.
func watchClockQuality(into status: KioskStatus, logger: Logger, until stop: Latch<Bool>, every interval: Double = 30,
                       probe: @escaping @Sendable () -> ClockQuality = { ClockQuality.probe() }) {
    status.update { $0.wallSync = "clock" }
    startThread(named: "marquee-clock-quality") {
        var last: ClockQuality?
        while !stop.isSet {
            let quality = probe()
            status.update { $0.clockQuality = quality }
            if quality.source != last?.source || quality.synchronized != last?.synchronized {
                let fields: KeyValuePairs = ["source": quality.source, "detail": quality.detail,
                                             "offset_ms": quality.offset.map { ($0 * 1000).formatted(decimals: 3) } ?? "-"]
                if quality.synchronized || quality.source == "none" {
                    logger.info(quality.source == "none" ? "wall sync: no clock service to ask how good the clock is"
                                                         : "wall sync: the system clock is synchronised", fields)
                } else {
                    logger.warning("wall sync: the system clock is not synchronised", fields)
                }
            }
            last = quality
            // The next probe, or the stop, whichever comes first.
            _ = stop.wait(timeout: interval)
        }
    }
}
