import Playback
import Render

extension HeadlessOutput {
    /// What this output can do (`OutputCapabilities`), read from its GL context: call once, as it
    /// opens, on its presentation thread, before any player is made for it.
    public func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities {
        openOutputCapabilities(name: name, context: context, layer: layer, refresh: mode.refresh, conversion: conversion)
    }
}

extension KMSOutput {
    /// What this output can do (`OutputCapabilities`), read from the card's GL context, which the
    /// output keeps for its whole life (displays that come and go get new surfaces, not a new
    /// context), so they hold across hotplug: call once, as it opens, on its presentation thread,
    /// before any player is made for it. The refresh is the connected display's, nil before one.
    public func openCapabilities(conversion: ColorConversionMode) -> OutputCapabilities {
        openOutputCapabilities(name: name, context: glContext, layer: layer, refresh: mode?.refresh, conversion: conversion,
                               scanoutFormat: format.fourcc)
    }
}
