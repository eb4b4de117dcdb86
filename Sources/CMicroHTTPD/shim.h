// libmicrohttpd (with its GnuTLS) and GnuTLS's hash, for the HTTPServer module only.
// MHD_start_daemon and MHD_get_connection_info are variadic, which Swift cannot call: the two
// inline functions below call them with fixed arguments; the unescaper keeps %00 undecoded.
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

struct marquee_mhd_settings {
    unsigned int flags;
    int listen_fd;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;
    unsigned int connection_timeout;
    size_t connection_memory_limit;
    /* PEM text, NUL-terminated; both NULL: no TLS. */
    const char *tls_certificate;
    const char *tls_key;
    MHD_AccessHandlerCallback handler;
    void *handler_context;
    MHD_RequestCompletedCallback completed;
    void *completed_context;
};

static inline int marquee_hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* MHD's %XX decoding, except that %00 stays as written: a decoded NUL would cut the path short
   where the application reads it as a C string (an upload named "evil%00.mp4" must not become "evil"). */
static inline size_t marquee_mhd_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls; (void)connection;
    char *out = s;
    for (char *in = s; *in != '\0'; ) {
        int high, low;
        if (in[0] == '%' && (high = marquee_hex_digit(in[1])) >= 0 && (low = marquee_hex_digit(in[2])) >= 0 && (high | low) != 0) {
            *out++ = (char)(high * 16 + low);
            in += 3;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
    return (size_t)(out - s);
}

static inline struct MHD_Daemon *marquee_mhd_start(const struct marquee_mhd_settings *s) {
    /* One option list; the TLS pair only with both PEM texts (MHD_OPTION_END ends the list early). */
    int tls = s->tls_certificate != NULL && s->tls_key != NULL;
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_LISTEN_SOCKET, (intptr_t)s->listen_fd, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->per_ip_connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->connection_timeout, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->connection_memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)s->completed, s->completed_context},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)marquee_mhd_unescape, NULL},
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, (void *)s->tls_certificate},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)s->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(s->flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, s->handler, s->handler_context,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The client's address (NULL when MHD has none). */
static inline const struct sockaddr *marquee_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info != NULL ? info->client_addr : NULL;
}
