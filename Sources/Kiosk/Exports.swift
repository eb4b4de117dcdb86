// The control protocol's values (JSONValue, the parser, the client) are part of Kiosk's API (the
// config reader and ControlHandler take them): importing Kiosk imports Control.
@_exported import Control
