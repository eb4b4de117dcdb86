import Diagnostics
import Foundation
import HTTPServer
import Kiosk
import SystemCalls

/// The HTTP API as the player runs it: reads the token file and TLS files the config names,
/// listens where `http.listen` says, and samples health once a second for the metrics.
public final class RemoteServer: Sendable {
    public let api: RemoteAPI
    public let server: HTTPServer
    private let running = Monitor(true)
    private let watcherEnded = Latch<Void>()

    /// Starts the server; throws an error that names the file or call that failed.
    public init(controller: any ControlHandler, status: KioskStatus, configPath: String?, settings: HTTPSettings, logger: Logger) throws {
        guard let listen = settings.listen else { throw HTTPConfigurationError("http.listen is not set") }
        let (tokens, tls) = try Self.readFiles(settings)
        let api = RemoteAPI(.init(controller: controller, status: status, configPath: configPath, settings: settings, tokens: tokens),
                            logger: logger.with(["http": listen.description]))
        self.api = api
        server = try HTTPServer(address: listen, tls: tls, limits: settings.limits, handler: api)
        if !listen.isLocal && tls == nil {
            logger.warning("http: listening beyond this machine without TLS: tokens cross the network in the clear", ["listen": listen.description])
        }
        logger.info("http API ready", ["listen": listen.description, "port": server.port.map { "\($0)" } ?? "-", "tls": tls == nil ? "no" : "yes",
                                       "tokens": "\(tokens.entries.count)"])
        startThread(named: "marquee-http-health") { [running, api, watcherEnded] in
            while running.wait(until: { !$0 }, timeout: 1) == false { api.sampleHealth() }
            watcherEnded.set(())
        }
    }

    /// The token file and TLS files `settings` name, read and checked; the error names the key
    /// and the file (`marquee --check-config` reports it too).
    public static func readFiles(_ settings: HTTPSettings) throws(HTTPConfigurationError) -> (TokenStore, (certificate: String, key: String)?) {
        guard let tokenPath = settings.tokens else { throw HTTPConfigurationError("http.tokens is not set: the API has no default secret") }
        let tokens: TokenStore
        do {
            tokens = try TokenStore(parsing: String(decoding: try RegularFile.read(tokenPath, limit: 1 << 20), as: UTF8.self))
        } catch let error as TokenStore.FileError {
            throw HTTPConfigurationError("http.tokens: \(tokenPath): \(error)")
        } catch {
            throw HTTPConfigurationError("http.tokens: \(tokenPath): cannot read it: \(error)")
        }
        guard let certificate = settings.tlsCertificate, let key = settings.tlsKey else { return (tokens, nil) }
        var pem: [String] = []
        for (name, path) in [("certificate", certificate), ("key", key)] {
            do {
                pem.append(String(decoding: try RegularFile.read(path, limit: 1 << 20), as: UTF8.self))
            } catch {
                throw HTTPConfigurationError("http.tls.\(name): \(path): cannot read it: \(error)")
            }
        }
        return (tokens, (pem[0], pem[1]))
    }

    public func broadcast(_ event: JSONValue) { api.broadcast(event) }
    public func pictureShown() { api.pictureShown() }

    public func stop() {
        running.update { $0 = false }
        _ = watcherEnded.wait(timeout: 2)
        server.stop()
    }
}
