import Kiosk
import Remote

/// Starts the HTTP API when the config has `http.listen` (nil otherwise, or when it cannot start:
/// playing matters more than the API, and the log says why).
func openHTTPServer(controller: KioskController, session: KioskSession, settings: HTTPSettings, configPath: String?) -> RemoteServer? {
    guard settings.listen != nil else { return nil }
    do {
        return try RemoteServer(controller: controller, status: session.status, configPath: configPath, settings: settings, logger: logger)
    } catch {
        logger.error("no HTTP API", ["error": "\(error)"])
        return nil
    }
}

/// What is wrong with the files `http` names (the token file, TLS files), for --check-config; nil
/// when the API is off or they read well.
func httpFilesProblem(_ settings: HTTPSettings) -> String? {
    guard settings.listen != nil else { return nil }
    do {
        _ = try RemoteServer.readFiles(settings)
        return nil
    } catch {
        return error.message
    }
}
