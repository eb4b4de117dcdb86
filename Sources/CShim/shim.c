#include "CShim.h"
#include <libavutil/error.h>
#include <libavutil/avutil.h>
#include <libavutil/log.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <libavutil/display.h>
#include <libavformat/avformat.h>
#include <malloc.h>
#include <math.h>

int mq_averror(int posix_errno) { return AVERROR(posix_errno); }
int mq_averror_eof(void) { return AVERROR_EOF; }
int mq_averror_exit(void) { return AVERROR_EXIT; }
int64_t mq_av_nopts_value(void) { return AV_NOPTS_VALUE; }
int mq_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }

double mq_stream_display_rotation(const struct AVStream *stream) {
    const int32_t *matrix = NULL;
#if LIBAVFORMAT_VERSION_INT >= AV_VERSION_INT(60, 15, 100)
    const AVPacketSideData *side = av_packet_side_data_get(stream->codecpar->coded_side_data,
                                                           stream->codecpar->nb_coded_side_data,
                                                           AV_PKT_DATA_DISPLAYMATRIX);
    if (side && side->size >= 9 * sizeof(int32_t)) matrix = (const int32_t *)side->data;
#else
    size_t size = 0;
    const uint8_t *data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (data && size >= 9 * sizeof(int32_t)) matrix = (const int32_t *)data;
#endif
    if (!matrix) return 0;
    double degrees = av_display_rotation_get(matrix);
    return isnan(degrees) ? 0 : degrees;
}

int mq_limit_malloc_arenas(int count) { return mallopt(M_ARENA_MAX, count); }

int mq_malloc_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

int mq_malloc_trim(void) { return malloc_trim(0); }

/* FFmpeg's log, routed to a sink. The sink is one atomic pointer; each thread joins the pieces of
 * its own lines (FFmpeg may log one line in several calls) in a buffer of its own. */
static _Atomic(mq_log_sink) mq_current_sink = NULL;
static _Thread_local char mq_pending[1024];
static _Thread_local size_t mq_pending_length = 0;
static _Thread_local int mq_pending_level = AV_LOG_TRACE;
static _Thread_local char mq_pending_component[64];
static _Thread_local int mq_demoted_to = -1;

int mq_av_log_demote(int level) {
    int previous = mq_demoted_to;
    mq_demoted_to = level;
    return previous;
}

static void mq_log_emit(mq_log_sink sink) {
    mq_pending[mq_pending_length] = 0;
    if (mq_pending_length > 0) sink(mq_pending_level, mq_pending_component[0] ? mq_pending_component : NULL, mq_pending);
    mq_pending_length = 0;
    mq_pending_level = AV_LOG_TRACE;
    mq_pending_component[0] = 0;
}

static void mq_log_callback(void *context, int level, const char *format, va_list arguments) {
    mq_log_sink sink = atomic_load(&mq_current_sink);
    if (level >= 0) level &= 0xff;  /* the bits above are colour hints (AV_LOG_C) */
    if (mq_demoted_to >= 0 && level < mq_demoted_to) level = mq_demoted_to;
    if (!sink || level > av_log_get_level()) return;
    char piece[1024];
    int print_prefix = 0;  /* no "[h264 @ 0x...]" prefix: the component goes separately */
    va_list copy;
    va_copy(copy, arguments);
    av_log_format_line2(context, level, format, copy, piece, (int)sizeof piece, &print_prefix);
    va_end(copy);
    if (mq_pending_length == 0 && context) {
        const AVClass *class = *(const AVClass **)context;
        const char *name = class && class->item_name ? class->item_name(context) : NULL;
        /* av_default_item_name says "NULL" for a context without a name */
        snprintf(mq_pending_component, sizeof mq_pending_component, "%s", name && strcmp(name, "NULL") ? name : "");
    }
    if (level < mq_pending_level) mq_pending_level = level;
    for (const char *c = piece; *c; c++) {
        if (*c == '\n') {
            mq_log_emit(sink);
            continue;
        }
        if (mq_pending_length + 1 >= sizeof mq_pending) mq_log_emit(sink);  /* a line too long: in parts */
        mq_pending[mq_pending_length++] = *c;
    }
}

void mq_av_log_route(mq_log_sink sink) {
    atomic_store(&mq_current_sink, sink);
    av_log_set_callback(sink ? mq_log_callback : av_log_default_callback);
}
