#include <xf86drm.h>
#include <xf86drmMode.h>
#include <drm_fourcc.h>
/* Hotplug notices: the kernel's uevents on a netlink socket (Display's NetlinkHotplugEvents). */
#include <sys/socket.h>
#include <linux/netlink.h>
/* Virtual terminal switching (Display's VTSwitcher: VT_SETMODE with VT_PROCESS, VT_RELDISP). */
#include <linux/vt.h>
