import CFFmpeg
import CShim
import Foundation
import Playback
import Synchronization

/// The one owner of an opened file's demuxer (`FileInput`), read by every decoder of an item
/// through a `PacketCursor` each: the pictures, the sound, a preroll, a loop's primed start.
///
/// One thread reads or seeks at a time. Each packet read goes to every cursor of its stream that
/// is in step, into that cursor's own queue; the cursor that asked takes it at once, the others
/// when they next ask. A queue is bounded: a cursor whose
/// consumer lags (sound that is not asked for, a parked picture decoder) leaves step instead of
/// growing, so no consumer waits for another and memory stays bounded (`QueueLimit`). A cursor out of step (it
/// overflowed, or another cursor sought) comes back when it next reads: a refresh seek to its
/// last packet, passing over the packets it already had (as mpv's refresh seeks). An input that
/// cannot seek (a pipe) keeps every cursor in step and drops a lagging queue's oldest packets
/// instead, counted.
final class Demuxer: @unchecked Sendable {
    // @unchecked: the format context is used by the thread holding `busy` only; the rest is in `state`.
    let input: FileInput
    var path: String { input.path }
    var format: UnsafeMutablePointer<AVFormatContext> { input.format }
    /// Whether a cursor out of step can come back by seeking (a regular file).
    let seekable: Bool
    /// Whether the file is found again by byte position (MPEG-TS and other formats whose
    /// timestamps may jump, as ffplay seeks them): there a timestamp seek back to a stream's start
    /// can land past its first packets.
    let seeksByBytes: Bool

    /// The most one cursor's queue holds before it leaves step: far above what one stream runs
    /// ahead of another (half a second of sound ahead of the pictures, a few MB).
    struct QueueLimit: Sendable {
        var bytes = 16 << 20
        var packets = 4096
    }
    let limit: QueueLimit

    /// What one cursor asks of the file.
    enum Read {
        /// The caller's packet holds the next packet of its stream.
        case packet
        /// The stream ended.
        case ended
        /// The read failed with `code` (the caller counts it; a timeout throws).
        case failed(code: Int32)
    }

    /// Where a packet lies, to pass over it again after a refresh seek.
    private struct Position {
        var dts: Int64
        var pos: Int64

        /// Whether `packet` lies at or before this position in its stream.
        func covers(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
            if dts != noPTS && packet.pointee.dts != noPTS { return packet.pointee.dts <= dts }
            if pos >= 0 && packet.pointee.pos >= 0 { return packet.pointee.pos <= pos }
            return false
        }
    }

    private struct Cursor {
        let stream: Int32
        /// Packets read for this cursor and not yet taken (each an owned reference).
        var queue: [UnsafeMutablePointer<AVPacket>] = []
        var head = 0
        var bytes = 0
        /// Whether the packets read now are this cursor's next ones.
        var inStep: Bool
        var ended = false
        var cancelled = false
        /// The last packet given to this cursor: where it resumes when out of step.
        var last: Position?
        /// Where it goes when out of step and given nothing yet (a seek's target, its stream's start).
        var target: Int64
        /// Its stream's first packet (its time base).
        let start: Int64
        /// After a refresh seek: packets it already had are passed over.
        var skipThrough: Position?

        var queued: Int { queue.count - head }

        mutating func take() -> UnsafeMutablePointer<AVPacket>? {
            guard head < queue.count else { return nil }
            let packet = queue[head]
            head += 1
            bytes -= Int(packet.pointee.size)
            if head == queue.count || head >= 64 {
                queue.removeFirst(head)
                head = 0
            }
            return packet
        }

        mutating func flush() {
            while let packet = take() { freePacket(packet) }
        }
    }

    private struct State: @unchecked Sendable {
        // @unchecked: the packets are owned here and used under the lock, or by the taker.
        var cursors: [Int: Cursor] = [:]
        var nextID = 0
        /// A thread is reading or seeking (the format context is its alone).
        var busy = false
        /// The cursor whose read is under way.
        var reading: Int?
        /// Packets read since the file was opened: 0, a new cursor starts in step without a seek.
        var packetsRead = 0
        var refreshSeeks = 0
        var droppedPackets = 0
        var peakQueued = 0
    }

    private let state = Monitor(State())

    init(input: FileInput, limit: QueueLimit = QueueLimit()) {
        self.input = input
        self.limit = limit
        seekable = input.state.regular
        let flags = input.format.pointee.iformat.map { $0.pointee.flags } ?? 0
        seeksByBytes = flags & AVFMT_TS_DISCONT != 0 && flags & AVFMT_NO_BYTE_SEEK == 0
    }

    /// Opens `path` (`FileInput`: time limits, the file protocol only; `interrupt` stops the open
    /// and every read when it says true).
    convenience init(path: String, limits: MediaIOLimits = .standard, interrupt: (@Sendable () -> Bool)? = nil,
                     limit: QueueLimit = QueueLimit()) throws {
        self.init(input: try FileInput(path: path, limits: limits, interrupt: interrupt), limit: limit)
    }

    /// How often a cursor came back by a refresh seek, how many packets a non-seekable input
    /// dropped from lagging queues, and the most packets one queue held.
    package var stats: (refreshSeeks: Int, droppedPackets: Int, peakQueued: Int) {
        state.withLock { ($0.refreshSeeks, $0.droppedPackets, $0.peakQueued) }
    }

    /// How long a reader waits for another reader's read or seek: one read's limit, twice, and a second.
    private var busyTimeout: Double { input.state.limits.read * 2 + 1 }

    /// Runs `body` with the format context, no other thread reading or seeking.
    func withFormat<T>(_ body: (UnsafeMutablePointer<AVFormatContext>) throws -> T) throws -> T {
        try acquire(nil)
        defer { release() }
        return try body(format)
    }

    private func acquire(_ id: Int?) throws {
        var cancelled = false
        let stopped = { (state: State) -> Bool in id.map { state.cursors[$0]?.cancelled ?? true } ?? false }
        let got = state.wait(until: { !$0.busy || stopped($0) }, timeout: busyTimeout) { state, timedOut -> Bool in
            if stopped(state) {
                cancelled = true
                return false
            }
            guard !timedOut else { return false }
            state.busy = true
            return true
        }
        if cancelled { throw MediaError(uri: path, call: "av_read_frame", reason: "cancelled") }
        guard got else {
            throw MediaError(uri: path, call: "av_read_frame",
                             reason: "timed out: waited \(busyTimeout.formatted(decimals: 1)) s for another reader of the file")
        }
    }

    private func release() { state.update { $0.busy = false } }

    // MARK: Cursors

    /// A new cursor on `stream`, positioned at the stream's start: in step while nothing has been
    /// read yet (or the input cannot seek), else at its first read.
    fileprivate func add(stream: Int32, start: Int64) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.cursors[id] = Cursor(stream: stream, inStep: state.packetsRead == 0 || !seekable, target: start, start: start)
            return id
        }
    }

    fileprivate func remove(_ id: Int) {
        state.update { state in
            state.cursors[id]?.flush()
            state.cursors[id] = nil
        }
    }

    /// Ends `id`'s waits: its next read throws; a read of its under way stops, unless the input
    /// cannot seek and another cursor still wants what it reads (it could not come back).
    fileprivate func cancel(_ id: Int) {
        state.update { state in
            state.cursors[id]?.cancelled = true
            guard state.reading == id else { return }
            if seekable || !state.cursors.values.contains(where: { !$0.cancelled }) {
                input.state.interruptRead.store(true, ordering: .relaxed)
            }
        }
    }

    /// Every cursor in step but `id` leaves step (the file is about to move).
    private static func detachOthers(_ state: inout State, but id: Int) {
        for key in state.cursors.keys where key != id && state.cursors[key]!.inStep {
            state.cursors[key]!.inStep = false
            state.cursors[key]!.ended = false
        }
    }

    /// Positions the file for cursor `id` at `ticks` of its stream (the last keyframe at or before
    /// it); every other cursor leaves step.
    fileprivate func seek(_ id: Int, to ticks: Int64) throws {
        try acquire(id)
        defer { release() }
        guard let cursor = state.withLock({ $0.cursors[id] }) else { return }
        try move(stream: cursor.stream, ticks: ticks, byte: ticks == cursor.start ? 0 : nil)
        state.withLock { state in
            Self.detachOthers(&state, but: id)
            state.cursors[id]?.flush()
            state.cursors[id]?.inStep = true
            state.cursors[id]?.ended = false
            state.cursors[id]?.last = nil
            state.cursors[id]?.skipThrough = nil
            state.cursors[id]?.target = ticks
        }
    }

    /// The next packet of cursor `id`'s stream into `packet` (the caller's, empty).
    fileprivate func read(_ id: Int, into packet: UnsafeMutablePointer<AVPacket>) throws -> Read {
        try acquire(id)
        defer { release() }
        while true {
            enum Next { case taken(UnsafeMutablePointer<AVPacket>), ended, refresh(Int32, Int64, byte: Int64?), read }
            let next: Next = try state.withLock { state in
                guard var cursor = state.cursors[id], !cursor.cancelled else {
                    throw MediaError(uri: path, call: "av_read_frame", reason: "cancelled")
                }
                defer { state.cursors[id] = cursor }
                if let taken = cursor.take() { return .taken(taken) }
                if cursor.inStep { return cursor.ended ? .ended : .read }
                let resume = cursor.last.flatMap { $0.dts == noPTS ? nil : $0.dts } ?? cursor.target
                let byte = cursor.last.map { $0.pos >= 0 ? $0.pos : nil } ?? (cursor.target == cursor.start ? 0 : nil)
                return .refresh(cursor.stream, resume, byte: byte)
            }
            switch next {
            case .taken(let taken):
                av_packet_move_ref(packet, taken)
                freePacket(taken)
                return .packet
            case .ended:
                return .ended
            case .refresh(let stream, let resume, let byte):
                try move(stream: stream, ticks: resume, byte: byte)
                state.withLock { state in
                    state.refreshSeeks += 1
                    Self.detachOthers(&state, but: id)
                    state.cursors[id]?.inStep = true
                    state.cursors[id]?.ended = false
                    let last = state.cursors[id]?.last
                    state.cursors[id]?.skipThrough = last
                }
            case .read:
                if let outcome = try readOne(id, into: packet) { return outcome }
            }
        }
    }

    /// Moves the file (the caller holds `busy`) to the last keyframe at or before `ticks` of
    /// `stream`, or where the file seeks by bytes and `byte` is known, to that byte.
    private func move(stream: Int32, ticks: Int64, byte: Int64?) throws {
        if seeksByBytes, let byte {
            let r = av_seek_frame(format, -1, byte, AVSEEK_FLAG_BYTE)
            guard r >= 0 else { throw MediaError(uri: path, call: "av_seek_frame", averror: r) }
            return
        }
        let r = av_seek_frame(format, stream, ticks, AVSEEK_FLAG_BACKWARD)
        guard r >= 0 else { throw MediaError(uri: path, call: "av_seek_frame", averror: r) }
    }

    /// Reads one packet from the file and gives it to the cursors in step on its stream; a result
    /// for `id` when the read failed.
    private func readOne(_ id: Int, into packet: UnsafeMutablePointer<AVPacket>) throws -> Read? {
        state.withLock { state in
            input.state.interruptRead.store(false, ordering: .relaxed)
            state.reading = id
        }
        input.state.armRead(true)
        let r = av_read_frame(format, packet)
        input.state.armRead(false)
        // The interruption was this read's alone: cleared once its error is made, so that the
        // seek that brings the others back is not interrupted too.
        let interruption = state.withLock { state -> MediaError? in
            state.reading = nil
            guard input.state.interruptRead.load(ordering: .relaxed) else { return nil }
            let error = FileInput.error(path, input.state, call: "av_read_frame", code: r < 0 ? r : mq_averror_exit())
            input.state.interruptRead.store(false, ordering: .relaxed)
            return error
        }
        if let interruption {
            // The file's I/O stopped mid-read: every cursor comes back by a seek. FFmpeg keeps
            // the stopped read's error in the I/O context; Matroska would return it at the file's
            // end instead of the end.
            av_packet_unref(packet)
            if let io = format.pointee.pb {
                io.pointee.error = 0
                io.pointee.eof_reached = 0
            }
            state.withLock { state in Self.detachOthers(&state, but: -1) }
            throw interruption
        }
        if r == averrorEOF {
            state.withLock { state in
                for key in state.cursors.keys where state.cursors[key]!.inStep { state.cursors[key]!.ended = true }
            }
            return nil
        }
        guard r >= 0 else {
            if input.isStopped { throw FileInput.error(path, input.state, call: "av_read_frame", code: r) }
            return .failed(code: r)
        }
        defer { av_packet_unref(packet) }
        state.withLock { state in
            state.packetsRead += 1
            let stream = packet.pointee.stream_index
            for key in state.cursors.keys {
                guard var cursor = state.cursors[key], cursor.inStep, !cursor.cancelled, cursor.stream == stream else { continue }
                defer { state.cursors[key] = cursor }
                if let skip = cursor.skipThrough {
                    if skip.covers(packet) { continue }
                    cursor.skipThrough = nil
                }
                if key != id, cursor.queued >= limit.packets || cursor.bytes + Int(packet.pointee.size) > limit.bytes {
                    if seekable {
                        cursor.inStep = false  // it comes back by a refresh seek when it reads again
                        continue
                    }
                    state.droppedPackets += cursor.queued
                    cursor.flush()
                }
                guard let copy = av_packet_clone(packet) else { continue }  // out of memory: a gap, as a lost packet
                cursor.queue.append(copy)
                cursor.bytes += Int(copy.pointee.size)
                cursor.last = Position(dts: copy.pointee.dts, pos: copy.pointee.pos)
                state.peakQueued = max(state.peakQueued, cursor.queued)
            }
        }
        return nil
    }
}

/// One decoder's reading of one stream of a shared `Demuxer`: its packets in order, and its seeks.
/// Used from one thread at a time; closes its place in the demuxer when it goes.
final class PacketCursor {
    let demuxer: Demuxer
    let stream: Int32
    private let id: Int

    /// Where the stream's first packet is (its time base): an AAC stream's priming packet comes
    /// before its `start_time`, and a seek there would pass over it (the first samples would
    /// then differ from the file's).
    let start: Int64

    /// A cursor at the start of `stream`: its first packet.
    init(demuxer: Demuxer, stream: Int32) throws {
        self.demuxer = demuxer
        self.stream = stream
        let start = try demuxer.withFormat { fmt -> Int64 in
            guard stream >= 0, stream < fmt.pointee.nb_streams, let st = fmt.pointee.streams[Int(stream)] else { return 0 }
            let stated = st.pointee.start_time == noPTS ? 0 : st.pointee.start_time
            guard let first = avformat_index_get_entry(st, 0) else { return stated }
            return min(stated, first.pointee.timestamp)
        }
        self.start = start
        id = demuxer.add(stream: stream, start: start)
    }

    deinit { demuxer.remove(id) }

    /// The next packet of the stream into `packet` (the caller's, empty; the caller unrefs it).
    func next(into packet: UnsafeMutablePointer<AVPacket>) throws -> Demuxer.Read {
        try demuxer.read(id, into: packet)
    }

    /// Positions the stream at the last keyframe at or before `ticks` (its time base).
    func seek(to ticks: Int64) throws { try demuxer.seek(id, to: ticks) }

    /// Positions the stream at its first packet, as the file was opened.
    func seekToStart() throws { try demuxer.seek(id, to: start) }

    /// Ends this cursor's waits from any thread: its reads fail from now on ("cancelled"); the
    /// other cursors of the file read on.
    var canceller: @Sendable () -> Void {
        let demuxer = self.demuxer, id = self.id
        return { demuxer.cancel(id) }
    }
}

/// Frees a packet this module allocated (`av_packet_clone`, `av_packet_alloc`).
func freePacket(_ packet: UnsafeMutablePointer<AVPacket>) {
    var owned: UnsafeMutablePointer<AVPacket>? = packet
    av_packet_free(&owned)
}
