import Playback

/// `RGBAConverter.convertInBands` with the conversion on a worker thread of its own: the worker
/// converts a frame's bands into a ring of `slots` band buffers while the caller hands the
/// converted ones on (the player layer uploads them into its texture), so the conversion of the
/// next bands overlaps the upload of this one (and the caller's wait for the renderer to let go
/// of the texture). The bands and their pixels are exactly `convertInBands`'s (the same
/// `RGBAConverter.convertBand`); frames it hands over whole are converted on the caller's thread.
///
/// Used from one thread at a time (the caller's); the worker reads only the frame it is given and
/// writes only the band buffers (it never touches GL). A band the worker has not converted within
/// `bandTimeout` seconds makes the call throw and the worker is given up (`givenUp` says why):
/// later frames are converted on the caller's thread. The worker ends when the converter is freed.
public final class PipelinedRGBAConverter {
    /// Band buffers in the ring by default (2 x 0.5 MB at 1080p): enough for the worker to convert
    /// the next band while the caller uploads this one (measured: 4 cost 1 MB more peak memory).
    public static let defaultSlots = 2

    public let rows: Int
    public let slots: Int
    public let bandTimeout: Double
    /// Why the worker was given up (a band it did not convert in time); nil while it serves.
    public private(set) var givenUp: String?
    /// Frames converted by the worker (not whole on the caller's thread).
    public private(set) var framesThroughWorker = 0

    private let shared = Monitor(WorkerState())
    private let serial = RGBAConverter()
    private var buffers: BandBuffers?
    private var workerStarted = false
    private var lastJob = 0

    /// - Parameters:
    ///   - rows: rows per band (even; `RGBAConverter.bandRows` by default).
    ///   - slots: band buffers in the ring (at least 1).
    ///   - bandTimeout: how long the caller waits for one band before giving the worker up.
    public init(rows: Int = RGBAConverter.bandRows, slots: Int = PipelinedRGBAConverter.defaultSlots, bandTimeout: Double = 2) {
        self.rows = rows
        self.slots = max(1, slots)
        self.bandTimeout = bandTimeout
    }

    deinit {
        shared.update { state in
            state.stopping = true
            state.job = nil
        }
    }

    /// Whether `convertInBands` hands `frame` over in bands (else whole, and never flipped).
    public func convertsInBands(_ frame: VideoFrame) -> Bool { RGBAConverter.convertsInBands(frame, rows: rows) }

    /// As `RGBAConverter.convertInBands(_:rows:flipped:_:)`: `body` gets each band in order, on the
    /// caller's thread, its pixels valid only inside `body` (`flipped`: each band's rows bottom-up).
    public func convertInBands(_ frame: VideoFrame, flipped: Bool = false, _ body: (_ firstRow: Int, _ band: Plane) throws -> Void) throws {
        guard givenUp == nil, RGBAConverter.convertsInBands(frame, rows: rows) else {
            try serial.convertInBands(frame, rows: rows, flipped: flipped, body)
            return
        }
        startWorker()
        let stride = RGBAConverter.bandStride(width: frame.width)
        let slotSize = stride * rows + 64
        if buffers?.requested != slotSize { buffers = BandBuffers(slots: slots, slotSize: slotSize) }
        guard let buffers else { return }
        lastJob += 1
        let bandCount = (frame.height + rows - 1) / rows
        let job = BandJob(id: lastJob, frame: frame, buffers: buffers, rows: rows, stride: stride, bandCount: bandCount,
                          flipped: flipped)
        shared.update { state in
            state.job = job
            state.produced = 0
            state.consumed = 0
            state.failure = nil
        }
        // However the call ends, the job ends: a worker still converting it stops at its next band.
        defer { shared.update { $0.job = nil } }
        framesThroughWorker += 1
        for k in 0..<bandCount {
            let (ready, failure) = shared.wait(until: { $0.produced > k || $0.failure != nil }, timeout: bandTimeout) { state, _ in
                (state.produced > k, state.failure)
            }
            if let failure { throw failure }
            guard ready else {
                let reason = "band \(k + 1) of \(bandCount) of a \(frame.width)x\(frame.height) frame not converted in \(bandTimeout) s"
                givenUp = reason
                self.buffers = nil  // the worker may still write into them: they go with it
                shared.update { $0.stopping = true }
                throw WaitTimeout(waitingFor: "the RGBA conversion worker (\(reason))", seconds: bandTimeout)
            }
            let y = k * rows
            try body(y, Plane(bytes: UnsafeRawPointer(buffers.slot(k % slots)), bytesPerRow: stride, width: frame.width,
                              height: min(rows, frame.height - y), components: 4, bytesPerSample: 1))
            shared.update { $0.consumed += 1 }  // the slot is free again
        }
    }

    private func startWorker() {
        guard !workerStarted else { return }
        workerStarted = true
        startThread(named: "marquee-rgba") { [shared, slots] in
            Self.work(shared, slots: slots)
        }
    }

    /// The worker: converts each job's bands in order into the ring, at most `slots` bands ahead
    /// of the caller, until the converter is freed or given up.
    private static func work(_ shared: Monitor<WorkerState>, slots: Int) {
        // One context per band height (a whole band, the last one), made and used here only.
        let full = RGBScaler(), last = RGBScaler()
        var done = 0
        while true {
            // Idle until a job comes; the timeout only bounds each wait (an idle worker waits again).
            let next: WorkerStep = shared.wait(until: { $0.stopping || ($0.job.map { $0.id != done } ?? false) },
                                               timeout: 60) { state, _ in
                if state.stopping { return .stop }
                if let job = state.job, job.id != done { return .convert(job) }
                return .idle
            }
            let job: BandJob
            switch next {
            case .stop: return
            case .idle: continue
            case .convert(let picked): job = picked
            }
            done = job.id
            for k in 0..<job.bandCount {
                // A free slot, while the job is still this one (the caller may end it early).
                let go = shared.wait(until: { $0.stopping || $0.job?.id != job.id || $0.produced - $0.consumed < slots },
                                     timeout: 60) { state, timedOut in
                    !timedOut && !state.stopping && state.job?.id == job.id
                }
                guard go else { break }
                let y = k * job.rows
                let count = min(job.rows, job.frame.height - y)
                do {
                    try RGBAConverter.convertBand(job.frame, firstRow: y, count: count, into: job.buffers.slot(k % slots),
                                                  stride: job.stride, flipped: job.flipped, scaler: count == job.rows ? full : last)
                } catch {
                    shared.update { state in
                        if state.job?.id == job.id { state.failure = error }
                    }
                    break
                }
                shared.update { state in
                    if state.job?.id == job.id { state.produced += 1 }
                }
            }
        }
    }
}

private enum WorkerStep {
    case convert(BandJob), idle, stop
}

/// What the caller and the worker share, under the monitor.
private struct WorkerState: Sendable {
    /// The frame being converted; nil between frames (and when the caller ended it early).
    var job: BandJob?
    /// Bands of `job` converted, and handed on by the caller (their slots free again).
    var produced = 0
    var consumed = 0
    /// Why the worker could not convert a band of `job`.
    var failure: (any Error)?
    var stopping = false
}

/// One frame for the worker. The frame is only read; the buffers are written by the worker alone
/// while the caller reads slots it has been told are converted and not yet handed back.
private final class BandJob: @unchecked Sendable {
    let id: Int
    let frame: VideoFrame
    let buffers: BandBuffers
    let rows: Int, stride: Int, bandCount: Int
    let flipped: Bool

    init(id: Int, frame: VideoFrame, buffers: BandBuffers, rows: Int, stride: Int, bandCount: Int, flipped: Bool) {
        self.id = id
        self.frame = frame
        self.buffers = buffers
        self.rows = rows
        self.stride = stride
        self.bandCount = bandCount
        self.flipped = flipped
    }
}

/// The ring: `slots` band buffers of `slotSize` bytes each, in one allocation (64-byte aligned),
/// freed when the last job holding it ends.
private final class BandBuffers: @unchecked Sendable {
    /// The size asked for, and each slot's (rounded up to 64 bytes).
    let requested: Int
    let slotSize: Int
    private let base: UnsafeMutableRawPointer

    init(slots: Int, slotSize: Int) {
        requested = slotSize
        self.slotSize = (slotSize + 63) & ~63
        base = .allocate(byteCount: self.slotSize * slots, alignment: 64)
    }

    deinit { base.deallocate() }

    func slot(_ i: Int) -> UnsafeMutablePointer<UInt8> {
        (base + i * slotSize).assumingMemoryBound(to: UInt8.self)
    }
}
