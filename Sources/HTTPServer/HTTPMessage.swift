import Foundation

/// A request as the server hands it over once its header is in (the body, if any, follows through
/// an `HTTPBodyReceiver`).
public struct HTTPRequest: Sendable {
    public var method: String
    /// The URL's path, percent-decoded, without the query.
    public var path: String
    /// The query's arguments (the last one of a name wins).
    public var query: [String: String]
    /// Header fields by lower-case name (a repeated field: the last one).
    public var headers: [String: String]
    /// The client's address without its port (`127.0.0.1`, `::1`), or `local` on a Unix socket.
    public var client: String

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], client: String = "local") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.client = client
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }
}

/// A response: status, header fields and a body, given whole or produced while it is sent.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// Produced while sent (Server-Sent Events): no length, ends when the stream says so.
        case stream(any HTTPStream)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, contentType: String, _ bytes: [UInt8], headers: [(String, String)] = []) {
        self.init(status: status, headers: [("Content-Type", contentType)] + headers, body: .bytes(bytes))
    }

    /// A plain-text response (errors say what was refused and why).
    public static func text(_ status: Int, _ text: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", Array((text + "\n").utf8), headers: headers)
    }

    public var bodyBytes: [UInt8]? {
        if case .bytes(let bytes) = body { return bytes }
        return nil
    }
}

/// What a streamed body gives when asked for more.
public enum HTTPStreamChunk: Sendable {
    case bytes([UInt8])
    /// The stream is over.
    case end
}

/// A response body produced while it is sent. `next` is called on the connection's thread and
/// may block, but must come back within a few seconds (with a keep-alive chunk if nothing else),
/// so that a stopping server is not held up.
public protocol HTTPStream: AnyObject, Sendable {
    func next() -> HTTPStreamChunk
    /// The connection ended (the client left, or the stream ended).
    func close()
}

/// Takes a request's body as it arrives, in chunks, on the connection's thread.
public protocol HTTPBodyReceiver: AnyObject {
    /// A chunk of the body; a response ends the request now (refused: the rest is not read and the
    /// connection closes after the response).
    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse?
    /// The whole body is in.
    func finish() -> HTTPResponse
    /// The connection ended before `finish` (or after a refusal): clean up.
    func abandon()
}

/// What a handler makes of a request's header.
public enum HTTPDecision {
    /// Answer now; a body the client sends is not read.
    case respond(HTTPResponse)
    /// Read the body through this receiver.
    case receive(any HTTPBodyReceiver)
}

/// Answers requests. Called on the connections' threads, several at once.
public protocol HTTPHandler: AnyObject, Sendable {
    func begin(_ request: HTTPRequest) -> HTTPDecision
}

/// A body kept in memory up to `limit` bytes (more: 413), handed to `complete` once whole.
public final class BufferedBody: HTTPBodyReceiver {
    public let limit: Int
    private var bytes: [UInt8] = []
    private let complete: ([UInt8]) -> HTTPResponse

    public init(limit: Int, complete: @escaping ([UInt8]) -> HTTPResponse) {
        self.limit = limit
        self.complete = complete
    }

    public func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard bytes.count + chunk.count <= limit else {
            return .text(413, "the request body is over \(limit) bytes")
        }
        bytes.append(contentsOf: chunk)
        return nil
    }

    public func finish() -> HTTPResponse { complete(bytes) }
    public func abandon() { bytes = [] }
}
