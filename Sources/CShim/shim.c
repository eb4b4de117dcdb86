#include "CShim.h"
#include <libavutil/error.h>
#include <libavutil/avutil.h>
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
