// Playback's API speaks time (MediaTime, RefreshRate, clocks) and takes a Logger: importing
// Playback imports the layers under it.
@_exported import Diagnostics
@_exported import Timing
