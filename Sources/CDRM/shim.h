#include <xf86drm.h>
#include <xf86drmMode.h>
#include <drm_fourcc.h>
/* Hotplug notices: the kernel's uevents on a netlink socket (Display's NetlinkHotplugEvents). */
#include <sys/socket.h>
#include <linux/netlink.h>
/* Virtual terminal switching (Display's VTSwitcher: VT_SETMODE with VT_PROCESS, VT_RELDISP). */
#include <linux/vt.h>
/* Dumb buffers (Display's DumbBuffer): the ioctl numbers are function-like macros Swift cannot import. */
#include <sys/mman.h>
static inline int marquee_drm_create_dumb(int fd, struct drm_mode_create_dumb *arg) {
    return drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, arg);
}
static inline int marquee_drm_map_dumb(int fd, struct drm_mode_map_dumb *arg) {
    return drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, arg);
}
static inline int marquee_drm_destroy_dumb(int fd, uint32_t handle) {
    struct drm_mode_destroy_dumb arg = { .handle = handle };
    return drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &arg);
}
/* virtio-gpu's 3D (virgl) feature: without it Mesa has no GPU driver for the card (Display's
   DRMDevice.gpu). The ioctl number is a function-like macro Swift cannot import. */
#include <virtgpu_drm.h>
static inline int marquee_virtgpu_has_3d(int fd, int *value) {
    struct drm_virtgpu_getparam arg = { .param = VIRTGPU_PARAM_3D_FEATURES, .value = (uint64_t)(uintptr_t)value };
    return drmIoctl(fd, DRM_IOCTL_VIRTGPU_GETPARAM, &arg);
}
