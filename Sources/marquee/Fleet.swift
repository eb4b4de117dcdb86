import Fleet
import Kiosk

/// Joins the MQTT broker when the config has `mqtt.broker` (nil otherwise, or when the client
/// cannot be made: playing matters more, and the log says why).
func openFleetClient(controller: KioskController, session: KioskSession, settings: MQTTSettings) -> FleetClient? {
    guard settings.brokerHost != nil else { return nil }
    do {
        return try FleetClient(settings: settings, controller: controller, status: session.status, logger: logger)
    } catch {
        logger.error("no MQTT", ["error": "\(error)"])
        return nil
    }
}
