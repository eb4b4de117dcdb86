import CMicroHTTPD
import Diagnostics
import Foundation
import Synchronization
import SystemCalls

/// The bounds every connection is held to, whatever a client sends.
public struct HTTPServerLimits: Sendable, Equatable {
    /// Connections open at once (each has a thread while open); more are closed as they come.
    public var maxConnections = 32
    /// Connections open at once from one address (a slow-loris from one host holds no more).
    public var maxConnectionsPerClient = 8
    /// A connection that sends or takes nothing for this long is closed (seconds).
    public var idleTimeout = 10
    /// The memory a connection's request line and header fields may take: a larger header is
    /// refused (431) before the handler sees it.
    public var maxHeaderBytes = 32 * 1024

    public init() {}
}

/// An error of libmicrohttpd, naming the call.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let call: String
    public let detail: String
    public var description: String { "\(call) failed: \(detail)" }
}

/// An HTTP(S) server on libmicrohttpd: one thread listens, each connection has a thread of its own
/// (at most `limits.maxConnections`), so a handler may block (a screenshot) without holding up the
/// others. Requests go to `handler` once their header is in; bodies stream to its receivers.
/// Owns the daemon: `stop` (or deinit) stops it and waits for its threads.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `daemon` is set in init and cleared once in `stop` under `state`'s lock.
    public let address: HTTPListenAddress
    /// The port bound (for `address` port 0: the one the kernel picked); nil on a Unix socket.
    public let port: UInt16?
    public let limits: HTTPServerLimits
    public let tls: Bool
    let handler: any HTTPHandler
    /// The daemon (`MHD_Daemon *` as a number: a pointer is not Sendable); 0 once stopped.
    private let state = Mutex<UInt>(0)
    /// Set by `stop`: streams end at their next chunk.
    let stopping = Atomic<Bool>(false)

    /// Binds `address` and starts serving. `tls`: PEM text of the certificate (chain) and key.
    public init(address: HTTPListenAddress, tls: (certificate: String, key: String)? = nil, limits: HTTPServerLimits = .init(),
                socketMode: mode_t = 0o660, handler: any HTTPHandler) throws {
        self.address = address
        self.limits = limits
        self.handler = handler
        self.tls = tls != nil
        let (fd, port) = try address.bind(mode: socketMode)
        self.port = port
        var settings = marquee_mhd_settings()
        settings.flags = UInt32(MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue)
        settings.listen_fd = fd
        settings.connection_limit = UInt32(clamping: limits.maxConnections)
        settings.per_ip_connection_limit = UInt32(clamping: limits.maxConnectionsPerClient)
        settings.connection_timeout = UInt32(clamping: limits.idleTimeout)
        settings.connection_memory_limit = max(4096, limits.maxHeaderBytes)
        settings.handler = accessHandler
        settings.completed = completedHandler
        let me = Unmanaged.passUnretained(self).toOpaque()
        settings.handler_context = me
        settings.completed_context = me
        let daemon: OpaquePointer? = withOptionalCString(tls?.certificate) { certificate in
            withOptionalCString(tls?.key) { key in
                settings.tls_certificate = certificate
                settings.tls_key = key
                // MHD copies the PEM text it needs before it returns.
                return marquee_mhd_start(&settings)
            }
        }
        guard let daemon else {
            Glibc.close(fd)
            if case .unix(let path) = address { unlink(path) }
            throw HTTPServerError(call: "MHD_start_daemon(\(address))",
                                  detail: tls != nil ? "the TLS certificate or key was refused (or no TLS support)" : "the daemon did not start")
        }
        let bits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(daemon)))
        state.withLock { $0 = bits }
    }

    /// Stops listening, ends streams and waits for every connection's thread.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        let bits = state.withLock { daemon -> UInt in
            defer { daemon = 0 }
            return daemon
        }
        guard let daemon = OpaquePointer(bitPattern: bits) else { return }
        MHD_stop_daemon(daemon)
        if case .unix(let path) = address { unlink(path) }
    }

    deinit { stop() }

    // MARK: Requests

    /// One request's state between the handler's calls (MHD's per-request pointer).
    final class Exchange {
        var receiver: (any HTTPBodyReceiver)?
        var answered = false
    }

    func access(_ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
                size: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let opaque = context.pointee else {
            // The header is in.
            let exchange = Exchange()
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
            switch handler.begin(request(connection, url: url, method: method)) {
            case .respond(let response):
                exchange.answered = true
                return queue(response, on: connection)
            case .receive(let receiver):
                exchange.receiver = receiver
                return .YES
            }
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(opaque).takeUnretainedValue()
        if exchange.answered {
            size.pointee = 0
            return .YES
        }
        guard let receiver = exchange.receiver else { return .NO }
        if size.pointee > 0 {
            let chunk = UnsafeRawBufferPointer(start: upload, count: size.pointee)
            size.pointee = 0
            guard let refusal = receiver.receive(chunk) else { return .YES }
            exchange.answered = true
            exchange.receiver = nil
            receiver.abandon()
            // MHD takes a response only before or after the body: mid-body the connection is
            // closed, and the rest of the body is never read.
            return queue(refusal, on: connection)
        }
        exchange.answered = true
        exchange.receiver = nil
        return queue(receiver.finish(), on: connection)
    }

    func completed(_ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let context, let opaque = context.pointee else { return }
        context.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(opaque).takeRetainedValue()
        exchange.receiver?.abandon()
        exchange.receiver = nil
    }

    private func request(_ connection: OpaquePointer, url: String, method: String) -> HTTPRequest {
        final class Fields { var values: [String: String] = [:]; var lowercased = true }
        let headers = Fields(), query = Fields()
        query.lowercased = false
        let collect: MHD_KeyValueIterator = { cls, _, key, value in
            guard let cls, let key else { return .YES }
            let fields = Unmanaged<Fields>.fromOpaque(cls).takeUnretainedValue()
            let name = String(cString: key)
            fields.values[fields.lowercased ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
            return .YES
        }
        _ = MHD_get_connection_values(connection, .HEADER_KIND, collect, Unmanaged.passUnretained(headers).toOpaque())
        _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, collect, Unmanaged.passUnretained(query).toOpaque())
        return HTTPRequest(method: method, path: url, query: query.values, headers: headers.values, client: clientAddress(connection))
    }

    private func clientAddress(_ connection: OpaquePointer) -> String {
        guard let address = marquee_mhd_client_address(connection) else { return "local" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var a = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
            inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
        case AF_INET6:
            var a = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self).sin6_addr
            inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
        default:
            return "local"
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            let box = StreamBox(stream: stream, server: self)
            made = MHD_create_response_from_callback(UInt64.max, 4096, streamReader, Unmanaged.passRetained(box).toOpaque(), streamFree)
        }
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        for (name, value) in response.headers { _ = MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(clamping: response.status), made)
    }

    /// A streamed body's bytes not yet taken by MHD.
    final class StreamBox {
        let stream: any HTTPStream
        unowned let server: HTTPServer
        var pending: [UInt8] = []
        init(stream: any HTTPStream, server: HTTPServer) {
            self.stream = stream
            self.server = server
        }

        /// Fills `buffer` (up to `max` bytes); -1 at the end.
        func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
            while pending.isEmpty {
                if server.stopping.load(ordering: .relaxed) { return -1 }
                switch stream.next() {
                case .end: return -1
                case .bytes(let bytes): pending = bytes
                }
            }
            let count = min(max, pending.count)
            pending.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress!, byteCount: count)
            }
            pending.removeFirst(count)
            return count
        }
    }
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, size, context in
    guard let cls, let connection, let size, let context else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.access(connection, url: url.map { String(cString: $0) } ?? "/", method: method.map { String(cString: $0) } ?? "GET",
                         upload: upload, size: size, context: context)
}

private let completedHandler: MHD_RequestCompletedCallback = { cls, _, context, _ in
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(context)
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return -2 }
    return Unmanaged<HTTPServer.StreamBox>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

private let streamFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<HTTPServer.StreamBox>.fromOpaque(cls).takeRetainedValue().stream.close()
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
