import Playback
import Render

extension HeadlessOutput {
    /// What this output can do (`OutputCapabilities`), read from its GL context: call once, as it
    /// opens, on its presentation thread, before any player is made for it.
    public func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities {
        openOutputCapabilities(name: name, context: context, layer: layer, refresh: mode.refresh, conversion: conversion)
    }
}
